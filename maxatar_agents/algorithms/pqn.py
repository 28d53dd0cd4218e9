"""PQN, parallelised Q-learning (Gallici et al., 2024, "Simplifying deep temporal difference learning"), as
one jitted JAX program.

Q-learning without a replay buffer or a target network: many environments play a short epsilon-greedy
rollout, Peng's Q(lambda) returns are computed backwards over it,

    G_t = r_t + gamma (1 - done_t) [(1 - lambda) max_a Q(s_t+1, a) + lambda G_t+1],  G_T = max_a Q(s_T, a)

and a few epochs of shuffled minibatches regress Q(s_t, a_t) towards them; the rollout is thrown away.
LayerNorm in every hidden layer is what keeps this stable without a target network. The defaults are
purejaxql's MinAtar settings (128 environments x 32 steps, 2 epochs of 32 minibatches, lambda 0.65, Adam
5e-4 decayed linearly, gradient norm clipped at 10, epsilon from 1 to 0.05 over the first tenth of the run),
on the on-policy skeleton (`on_policy.py`). Evaluation plays the greedy action.

Read top to bottom: `Config` and `PRESETS`; the losses (`q_lambda_returns`, `q_loss`); `make_program`, which
gives the skeleton PQN's own pieces; `make_train(config) -> train(key)`. The learner (params and Adam's
state) and the gradient step are the skeleton's.

    python -m maxatar_agents.pqn --env maxatar/Breakout-v0 --seeds 4 --out runs/breakout-pqn
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from maxatar.prng import uniform_to_int
from maxatar_agents.algorithms import on_policy, program
from maxatar_agents.algorithms.config import env_from_config
from maxatar_agents.algorithms.fields import knob
from maxatar_agents.algorithms.networks import hidden_activations, make_network
from maxatar_agents.algorithms.on_policy import Rollout
from maxatar_agents.algorithms.program import Program

ALGORITHM = "pqn"
DEFAULT_PRESET = "minatar"  # the MinAtar games


@dataclasses.dataclass(frozen=True)
class Config(on_policy.OnPolicyConfig):
    """Every knob of a run: the skeleton's (`on_policy.OnPolicyConfig`: environment, frames, rollout size,
    epochs and minibatches, Adam, network, evaluation), whose defaults here are purejaxql's MinAtar PQN, and
    PQN's own."""

    num_envs: int = 128
    num_steps: int = 32
    num_epochs: int = 2
    num_minibatches: int = 32
    lr: float = 5e-4
    adam_eps: float = 1e-8
    max_grad_norm: float = 10.0
    hidden: tuple[int, ...] = (128,)
    q_lambda: float = knob(0.65, "lambda of the Q(lambda) returns: 0 is one-step Q-learning")
    epsilon_start: float = knob(1.0, "exploration rate at the start")
    epsilon_end: float = knob(0.05, "exploration rate after the decay")
    epsilon_fraction: float = knob(0.1, "fraction of the run's frames over which epsilon decays linearly")
    reward_scale: float = knob(1.0, "rewards are multiplied by this before the returns (the logged returns are not)")


# A preset's settings go on a few lines by theme (run, rollout and epochs, exploration and returns, network).
# fmt: off
PRESETS: dict[str, dict[str, Any]] = {
    # purejaxql's MinAtar PQN, exactly the defaults above, for 10M frames.
    "minatar": dict(total_steps=10_000_000),
    # MinAtar in a minute on a CPU: the same agent, tuned for time to MinAtar's DQN return on two cores. A 64-unit
    # layer (the 1600 x 128 layer is most of the compute), 64 environments x 64 steps (Freeway's 2,500-step
    # episodes, which all end together, end twice as often as with 128), and a 3M-frame run, so that exploration
    # has ended by 300k frames. Profiles and every preset tried: benchmarks/results/agents/cpu_presets.md.
    "cpu": dict(total_steps=3_000_000, num_envs=64, num_steps=64, hidden=(64,)),
    # The same from pixels: the game's RGB picture at 4 pixels per cell (40 x 40 x 3) through the pixel CNN
    # (`networks.PixelTorso`).
    "pixels": dict(total_steps=10_000_000, obs_type="rgb", obs_scale=4),
    # CartPole-v1: purejaxql's CartPole settings (32 environments x 64 steps, lambda 0.95, rewards scaled by
    # 0.1, epsilon to 0.2 over a fifth of the run) with a 128-128 network, 2 epochs of 8 minibatches and
    # lr 3e-4, in 300k frames. As DQN's, PQN's greedy CartPole policy swings between intervals (one seed in
    # eight ended at 380-470 without it), so the preset keeps the best evaluated params.
    "cartpole": dict(
        env_id="maxatar/CartPole-v1", total_steps=300_000, log_points=20, keep_best=True,
        num_envs=32, num_steps=64, num_epochs=2, num_minibatches=8,
        lr=3e-4, q_lambda=0.95, epsilon_end=0.2, epsilon_fraction=0.2, reward_scale=0.1,
        hidden=(128, 128),
    ),
    # Continual MinAtar, C-CHAIN's protocol (SpaceInvaders -> Asterix -> Seaquest, 2M frames each, one pass, the
    # observations front-padded to 10 channels, the full action set): purejaxql's agent with a constant step size.
    "c-chain": dict(
        env_id="maxatar/MinAtar-Continual-v0", protocol="c-chain", total_steps=6_000_000, log_points=60,
        lr_decay=False,
    ),
    # Doors: the one-hot grid, 100-step episodes.
    "doors": dict(
        env_id="maxatar/Doors-v0", total_steps=500_000, log_points=20,
        num_envs=32, num_steps=32, num_epochs=2, num_minibatches=8,
        q_lambda=0.9, epsilon_fraction=0.2, hidden=(64,),
    ),
}
# fmt: on

# What `python -m maxatar_agents.sweep` searches by default (`sweep.load_space`).
SEARCH_SPACE: dict[str, dict[str, Any]] = {
    "lr": {"low": 1e-4, "high": 3e-3, "log": True},
    "gamma": {"low": 0.95, "high": 0.999},
    "q_lambda": {"low": 0.5, "high": 0.99},
    "epsilon_fraction": {"low": 0.05, "high": 0.5},
    "num_epochs": {"low": 1, "high": 4},
}


def q_lambda_returns(rollout: Rollout, next_max_q: jax.Array, gamma: float, lam: float, reward_scale: float):
    """Peng's Q(lambda) returns of a rollout (fields (T, N)); `next_max_q[t]` is max_a Q(s_t+1, a), the
    observation after step t (for the last step, the rollout's next observation). Episode ends cut the
    return: no bootstrap past a termination or a time limit (see `on_policy`)."""
    ended = (rollout.terminated | rollout.truncated).astype(jnp.float32)

    def backwards(later_return, step):
        reward, max_q, end = step
        blended = (1.0 - lam) * max_q + lam * later_return
        g = reward_scale * reward + gamma * (1.0 - end) * blended
        return g, g

    _, returns = jax.lax.scan(backwards, next_max_q[-1], (rollout.reward, next_max_q, ended), reverse=True)
    return returns


class Samples(NamedTuple):
    """What a minibatch step trains on, one entry per (step, environment) of the rollout."""

    obs: jax.Array
    action: jax.Array
    target: jax.Array  # the Q(lambda) return


def q_loss(params: Any, samples: Samples, *, q_values: Callable) -> tuple[jax.Array, jax.Array]:
    """Half the mean squared error between Q(s, a) and the Q(lambda) return, and the mean Q(s, a) (to log).
    `q_values(params, obs)` is the network; the returns are constants (computed before the epochs)."""
    q = q_values(params, samples.obs)
    q_taken = jnp.take_along_axis(q, samples.action[:, None], axis=-1)[:, 0]
    return 0.5 * jnp.mean(jnp.square(q_taken - samples.target)), q_taken.mean()


@functools.lru_cache(maxsize=16)
def make_program(config: Config) -> Program:
    """PQN's pieces in the on-policy skeleton. Cached so that several runs of one config in a process share
    compiled code."""
    env, env_params = env_from_config(config)
    network = make_network(env, config.hidden, config.conv_features, layer_norm=True)
    loss_fn = functools.partial(q_loss, q_values=network.apply)
    decay_steps = jnp.maximum(1.0, config.epsilon_fraction * config.total_steps / config.num_envs)

    def epsilon(t: jax.Array) -> jax.Array:
        """Linear decay over the first `epsilon_fraction` of the run's vector steps, then constant."""
        progress = jnp.clip(t / decay_steps, 0.0, 1.0)
        return config.epsilon_start + (config.epsilon_end - config.epsilon_start) * progress

    def act(params, obs: jax.Array) -> jax.Array:
        """The greedy action (any leading batch axes): what evaluation plays."""
        return network.apply(params, obs).argmax(axis=-1).astype(jnp.int32)

    def explore(learner: on_policy.Learner, obs: jax.Array, uniforms: jax.Array, t: jax.Array):
        """Epsilon-greedy (the first uniform decides whether to explore, the second picks the random
        action), with max_a Q(s, a), which the returns of the previous step bootstrap from."""
        q = network.apply(learner.params, obs)
        random_action = uniform_to_int(uniforms[:, 1], 0, env.num_actions)
        greedy = q.argmax(axis=-1).astype(jnp.int32)
        return jnp.where(uniforms[:, 0] < epsilon(t), random_action, greedy).astype(jnp.int32), q.max(axis=-1)

    def targets(params, rollout: Rollout, last_obs: jax.Array) -> Samples:
        max_q = rollout.extras  # (T, N): max_a Q(s_t, a)
        last_max_q = network.apply(params, last_obs).max(axis=-1)
        next_max_q = jnp.concatenate([max_q[1:], last_max_q[None]], axis=0)
        returns = q_lambda_returns(rollout, next_max_q, config.gamma, config.q_lambda, config.reward_scale)
        return Samples(rollout.obs, rollout.action, returns)

    def report(learner: on_policy.Learner, mean_logs, t_end: jax.Array) -> dict[str, jax.Array]:
        mean_loss, mean_q = mean_logs
        return {"loss": mean_loss, "q_mean": mean_q, "epsilon": epsilon(t_end - 1)}

    features = functools.partial(hidden_activations, network)
    learning = on_policy.Learning(targets, loss_fn)
    agent = program.Agent(on_policy.network_init(network), explore, learning, report, act, features=features)
    return on_policy.assemble(config, env, env_params, agent)


make_train = program.make_train_for(make_program)
