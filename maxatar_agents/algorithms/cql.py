"""Discrete conservative Q-learning, CQL(H) (Kumar et al., 2020, "Conservative Q-Learning for Offline
Reinforcement Learning", NeurIPS 2020, section 3.2): DQN's temporal-difference loss on the dataset's steps plus
`alpha` times the logsumexp of Q over all actions less Q of the dataset's action, which pushes down the values of
actions the data does not show and keeps the greedy policy near the data. As one jitted JAX program on the offline
skeleton (`offline.py`).

Kumar et al. put the penalty on QR-DQN for Atari; here it is on a DQN head (one Q per action, Huber loss, a target
network copied every `target_update_every` updates, as the online DQN), as in the discrete CQL of d3rlpy and
of Schweighofer et al. (2022) on MinAtar. A time limit (`truncated`) bootstraps from the dataset's next
observation; a termination does not. It learns from a Minari dataset made for the environment it is evaluated
in (`--dataset`, `--env`):

    python -m maxatar_agents cql --env maxatar/Breakout-v0 --dataset maxatar/Breakout/expert-v0 --seeds 5 --out runs/cql
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from maxatar_agents.algorithms import offline, program
from maxatar_agents.algorithms.config import env_from_config
from maxatar_agents.algorithms.fields import knob
from maxatar_agents.algorithms.networks import make_network
from maxatar_agents.algorithms.offline import Transitions
from maxatar_agents.algorithms.program import Program

ALGORITHM = "cql"
TITLE = "CQL (discrete)"
DEFAULT_PRESET = "minatar"  # the MinAtar games


@dataclasses.dataclass(frozen=True)
class Config(offline.OfflineConfig):
    """The offline skeleton's knobs (`offline.OfflineConfig`: dataset, updates, minibatch, step size, network,
    evaluation), then CQL's."""

    alpha: float = knob(1.0, "weight of the CQL(H) penalty, logsumexp_a Q(s, a) - Q(s, a_data) (0: plain DQN)")
    target_update_every: int = knob(1_000, "updates between two copies of the online network into the target")


# fmt: off
PRESETS: dict[str, dict[str, Any]] = {
    # The MinAtar games: 100k updates of 256 dataset steps, Adam 3e-4, alpha 1 (d3rlpy's default for discrete
    # CQL; Kumar et al. choose it per dataset), a target copy every 1000 updates.
    "minatar": dict(total_steps=100_000, log_points=10),
}
# fmt: on

SEARCH_SPACE: dict[str, dict[str, Any]] = {
    "lr": {"low": 1e-4, "high": 3e-3, "log": True},
    "alpha": {"low": 0.1, "high": 10.0, "log": True},
    "target_update_every": {"choices": [250, 1000, 4000]},
}


def cql_loss(
    params: Any, target_params: Any, batch: Transitions, *, q_values: Callable, gamma: float, alpha: float
) -> tuple[jax.Array, tuple[jax.Array, jax.Array]]:
    """Huber loss between Q(s, a) and r + gamma max_a' Q_target(s', a') (no bootstrap where the episode
    terminated), plus alpha times the CQL(H) penalty, the batch's mean of logsumexp_a Q(s, a) - Q(s, a_data).
    Returns the loss and (the penalty, the mean Q of the dataset's actions) to log."""
    q = q_values(params, batch.observation)
    q_data = jnp.take_along_axis(q, batch.action[:, None], axis=-1)[:, 0]
    next_q = q_values(target_params, batch.next_observation).max(axis=-1)
    target = batch.reward + gamma * jnp.where(batch.terminated, 0.0, next_q)
    td = optax.huber_loss(q_data, jax.lax.stop_gradient(target)).mean()
    penalty = (jax.nn.logsumexp(q, axis=-1) - q_data).mean()
    return td + alpha * penalty, (penalty, q_data.mean())


class Learner(NamedTuple):
    """CQL's part of the training state: what an update changes."""

    params: Any
    target_params: Any
    opt_state: Any


@functools.lru_cache(maxsize=16)
def make_program(config: Config) -> Program:
    """CQL's pieces in the offline skeleton. Cached so that several runs of one config in a process share
    compiled code."""
    env, env_params = env_from_config(config)
    network = make_network(env, config.hidden, config.conv_features)
    optimizer = program.clip_then(config.max_grad_norm, optax.adam(config.lr))
    loss_fn = program.bind_config(cql_loss, config, "gamma", "alpha", q_values=network.apply)

    def init(key: jax.Array, obs: jax.Array) -> Learner:
        """One network; the target starts as a copy of it."""
        params = network.init(key, obs)
        return Learner(params, params, optimizer.init(params))

    def update(learner: Learner, batch: Transitions, number: jax.Array):
        """One gradient step, then every `target_update_every`-th update a copy into the target."""
        (loss, (penalty, q_data)), params, opt_state = program.gradient_update(
            loss_fn, optimizer, learner.params, learner.opt_state, learner.target_params, batch
        )
        copy = number % config.target_update_every == 0
        target_params = jax.tree.map(lambda new, old: jnp.where(copy, new, old), params, learner.target_params)
        return Learner(params, target_params, opt_state), (loss, penalty, q_data)

    def report(mean_logs) -> dict[str, jax.Array]:
        """The interval's mean loss, CQL penalty and Q of the dataset's actions."""
        loss, penalty, q_data = mean_logs
        return {"loss": loss, "cql_penalty": penalty, "q_mean": q_data}

    def act(params, obs: jax.Array) -> jax.Array:
        """The greedy policy (any leading batch axes)."""
        return network.apply(params, obs).argmax(axis=-1).astype(jnp.int32)

    return offline.assemble(config, env, env_params, offline.Agent(init, update, report, act))


make_train = program.make_train_for(make_program)
