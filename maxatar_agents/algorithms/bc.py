"""Behaviour cloning: a policy network trained by cross-entropy to predict the dataset's actions from its
observations (Pomerleau, 1991; the offline baseline of Fu et al., 2020, D4RL, and of Schweighofer et al., 2022,
on MinAtar's datasets), as one jitted JAX program on the offline skeleton (`offline.py`).

The network is the MinAtar one of the online agents (a 3x3 convolution of 16 filters, a 128-unit layer), with one
logit per action; the evaluation policy takes the most probable action. It learns from a Minari dataset made for
the environment it is evaluated in (`--dataset`, `--env`):

    python -m maxatar_agents bc --env maxatar/Breakout-v0 --dataset maxatar/Breakout/expert-v0 --seeds 5 --out runs/bc
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
from maxatar_agents.algorithms.networks import make_network
from maxatar_agents.algorithms.offline import Transitions
from maxatar_agents.algorithms.program import Program

ALGORITHM = "bc"
TITLE = "Behaviour cloning"
DEFAULT_PRESET = "minatar"  # the MinAtar games


@dataclasses.dataclass(frozen=True)
class Config(offline.OfflineConfig):
    """The offline skeleton's knobs (`offline.OfflineConfig`: dataset, updates, minibatch, step size, network,
    evaluation); behaviour cloning has none of its own."""


# fmt: off
PRESETS: dict[str, dict[str, Any]] = {
    # The MinAtar games: 50k updates of 256 dataset steps (about 13 passes over a 1M-step dataset), Adam 3e-4.
    "minatar": dict(total_steps=50_000, log_points=10),
}
# fmt: on

SEARCH_SPACE: dict[str, dict[str, Any]] = {
    "lr": {"low": 1e-4, "high": 3e-3, "log": True},
    "batch_size": {"choices": [64, 128, 256, 512]},
}


def cross_entropy_loss(params: Any, batch: Transitions, *, logits: Callable) -> tuple[jax.Array, jax.Array]:
    """The mean cross-entropy of the dataset's actions under the policy's logits, and how often the most
    probable action is the dataset's (to log). `logits(params, obs)` is the network."""
    scores = logits(params, batch.observation)
    loss = optax.softmax_cross_entropy_with_integer_labels(scores, batch.action).mean()
    return loss, (scores.argmax(axis=-1) == batch.action).mean()


class Learner(NamedTuple):
    """Behaviour cloning's part of the training state: the policy network and its optimiser."""

    params: Any
    opt_state: Any


@functools.lru_cache(maxsize=16)
def make_program(config: Config) -> Program:
    """Behaviour cloning's pieces in the offline skeleton. Cached so that several runs of one config in a
    process share compiled code."""
    env, env_params = env_from_config(config)
    network = make_network(env, config.hidden, config.conv_features)
    optimizer = program.clip_then(config.max_grad_norm, optax.adam(config.lr))
    loss_fn = functools.partial(cross_entropy_loss, logits=network.apply)

    def init(key: jax.Array, obs: jax.Array) -> Learner:
        params = network.init(key, obs)
        return Learner(params, optimizer.init(params))

    def update(learner: Learner, batch: Transitions, number: jax.Array):
        (loss, accuracy), params, opt_state = program.gradient_update(
            loss_fn, optimizer, learner.params, learner.opt_state, batch
        )
        return Learner(params, opt_state), (loss, accuracy)

    def report(mean_logs) -> dict[str, jax.Array]:
        """The interval's mean loss and how often the policy's action was the dataset's."""
        loss, accuracy = mean_logs
        return {"loss": loss, "accuracy": accuracy}

    def act(params, obs: jax.Array) -> jax.Array:
        """The most probable action (any leading batch axes)."""
        return network.apply(params, obs).argmax(axis=-1).astype(jnp.int32)

    return offline.assemble(config, env, env_params, offline.Agent(init, update, report, act))


make_train = program.make_train_for(make_program)
