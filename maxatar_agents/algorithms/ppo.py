"""Proximal policy optimisation (Schulman et al., 2017) for discrete actions, as one jitted JAX program.

Many environments play a short rollout with the current policy; generalised advantage estimation (GAE,
Schulman et al., 2016) turns it into advantages and value targets; a few epochs of shuffled minibatches
then minimise the clipped surrogate objective, a (clipped) value loss and an entropy bonus; the rollout is
thrown away. This is the PPO of PureJaxRL and of pgx's MinAtar example (Adam with eps 1e-5, global-norm
clipping 0.5, linear step-size decay, advantages normalised per minibatch, layers initialised at a gain of
sqrt(2), 0.01 for the policy's output and 1 for the value's), on the on-policy skeleton (`on_policy.py`).
Evaluation plays the most probable action.

Read top to bottom: `Config` and `PRESETS`; the losses (`gae`, `ppo_loss`); `make_program`, which gives the
skeleton PPO's own pieces (the network, sampling actions, targets, the loss, what to log); `make_train(config)
-> train(key)`. The learner (params and Adam's state) and the gradient step are the skeleton's.

    python -m maxatar_agents.ppo --env maxatar/Breakout-v0 --seeds 4 --out runs/breakout-ppo
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from maxatar_agents.algorithms import on_policy, program
from maxatar_agents.algorithms.config import env_from_config
from maxatar_agents.algorithms.fields import knob
from maxatar_agents.algorithms.networks import make_actor_critic
from maxatar_agents.algorithms.on_policy import Rollout
from maxatar_agents.algorithms.program import Program

ALGORITHM = "ppo"
DEFAULT_PRESET = "minatar"  # the MinAtar games


@dataclasses.dataclass(frozen=True)
class Config(on_policy.OnPolicyConfig):
    """Every knob of a run: the skeleton's (`on_policy.OnPolicyConfig`: environment, frames, rollout size,
    epochs and minibatches, Adam, network, evaluation) and PPO's own."""

    gae_lambda: float = knob(0.95, "GAE's lambda: 0 is one-step TD, 1 is the Monte Carlo return")
    clip_eps: float = knob(0.2, "the policy ratio is clipped to [1 - clip_eps, 1 + clip_eps]")
    clip_value: bool = knob(True, "clip the value's change per update the same way (PPO2's value loss)")
    ent_coef: float = knob(0.01, "weight of the entropy bonus")
    vf_coef: float = knob(0.5, "weight of the value loss")
    activation: str = knob("tanh", "of the policy's and value's hidden layers: 'tanh' or 'relu'")


# A preset's settings go on a few lines by theme (run, rollout and epochs, objective, network).
# fmt: off
PRESETS: dict[str, dict[str, Any]] = {
    # MinAtar games in MinAtar's setting: PureJaxRL's MinAtar PPO (64 environments x 128 steps, 4 epochs of 8
    # minibatches, ReLU, two 64-unit layers per head, and its large step size 5e-3) on the MinAtar network
    # (3x3 convolution, 16 filters). pgx's step size (3e-4) left Breakout at a return of 5 from 1M frames on
    # whatever else changed (value clipping, action set, sticky actions, width); 5e-3 reaches 18 in 1.5M.
    # Seaquest stays below MinAtar's DQN return (16.6 at 5M frames, 10 seeds): in a sweep of lr {2.5e-3, 5e-3} x
    # ent_coef {0.01, 0.03}, 2.5e-3 with 0.01 gained 3-17% on the four other games at 5M frames, while on Seaquest
    # about 3 seeds in 10 leave the no-surfacing plateau at either step size (20 seeds: 20.7 against 16.6 for
    # 10). benchmarks/results/agents/ppo-step-size-entropy/.
    "minatar": dict(
        total_steps=10_000_000, num_envs=64, num_steps=128, num_epochs=4, num_minibatches=8,
        lr=5e-3, hidden=(64, 64), activation="relu",
    ),
    # CartPole-v1: PureJaxRL's CartPole PPO (4 epochs of 4 minibatches, 64-64 tanh networks) with 32
    # environments x 32 steps per rollout and a larger step size, in 200k frames.
    "cartpole": dict(
        env_id="maxatar/CartPole-v1", total_steps=200_000, log_points=20,
        num_envs=32, num_steps=32, num_epochs=4, num_minibatches=4,
        lr=2.5e-3, hidden=(64, 64),
    ),
    # Doors: the one-hot grid, 100-step episodes. Several moves are often equally good there, so the policy
    # stays spread out and its most probable action can walk into the wall for good: with step size 1e-3 and
    # the entropy bonus, sampled play reached 15.2 but the most probable action 9 (2 seeds). 3e-3 and no
    # bonus: 13.6 (4 other seeds), sampled play unchanged.
    "doors": dict(
        env_id="maxatar/Doors-v0", total_steps=500_000, log_points=20,
        num_envs=32, num_steps=64, num_epochs=4, num_minibatches=4,
        lr=3e-3, ent_coef=0.0, hidden=(64,),
    ),
}
# fmt: on

# What `python -m maxatar_agents.sweep` searches by default (`sweep.load_space`).
SEARCH_SPACE: dict[str, dict[str, Any]] = {
    "lr": {"low": 1e-4, "high": 3e-3, "log": True},
    "gamma": {"low": 0.95, "high": 0.999},
    "gae_lambda": {"low": 0.8, "high": 0.99},
    "clip_eps": {"low": 0.1, "high": 0.3},
    "ent_coef": {"low": 1e-4, "high": 0.05, "log": True},
    "num_epochs": {"low": 1, "high": 8},
}


def gae(rollout: Rollout, values: jax.Array, last_value: jax.Array, gamma: float, lam: float):
    """Advantages and value targets of a rollout (fields (T, N)) by GAE: delta_t = r_t + gamma V(s_t+1)
    - V(s_t), A_t = delta_t + gamma lambda A_t+1, both cut at episode ends; target = A + V."""
    ended = (rollout.terminated | rollout.truncated).astype(jnp.float32)
    next_values = jnp.concatenate([values[1:], last_value[None]], axis=0)

    def backwards(advantage, step):
        reward, value, next_value, end = step
        delta = reward + gamma * (1.0 - end) * next_value - value
        advantage = delta + gamma * lam * (1.0 - end) * advantage
        return advantage, advantage

    _, advantages = jax.lax.scan(
        backwards, jnp.zeros_like(last_value), (rollout.reward, values, next_values, ended), reverse=True
    )
    return advantages, advantages + values


class Samples(NamedTuple):
    """What a minibatch step trains on, one entry per (step, environment) of the rollout."""

    obs: jax.Array
    action: jax.Array
    log_prob: jax.Array  # log pi_old(a|s), when the action was taken
    value: jax.Array  # V_old(s)
    advantage: jax.Array
    target: jax.Array  # value target (advantage + V_old)


def ppo_loss(
    params: Any,
    samples: Samples,
    *,
    apply: Callable,
    clip_eps: float,
    clip_value: bool,
    vf_coef: float,
    ent_coef: float,
) -> tuple[jax.Array, tuple[jax.Array, ...]]:
    """The clipped surrogate -E[min(ratio A, clip(ratio) A)] with advantages normalised over the minibatch,
    plus vf_coef times the value loss 0.5 (V - target)^2 (with `clip_value`, the larger of that and the loss
    of V_old + clip(V - V_old)), minus ent_coef times the policy's entropy. `apply(params, obs) -> (logits,
    value)` is the network. Returns the total and (policy loss, value loss, entropy, approximate KL)."""
    logits, value = apply(params, samples.obs)
    log_probs = jax.nn.log_softmax(logits)
    log_prob = jnp.take_along_axis(log_probs, samples.action[:, None], axis=-1)[:, 0]
    advantage = (samples.advantage - samples.advantage.mean()) / (samples.advantage.std() + 1e-8)
    ratio = jnp.exp(log_prob - samples.log_prob)
    clipped_ratio = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps)
    policy_loss = -jnp.mean(jnp.minimum(ratio * advantage, clipped_ratio * advantage))
    value_loss = jnp.square(value - samples.target)
    if clip_value:
        clipped_value = samples.value + jnp.clip(value - samples.value, -clip_eps, clip_eps)
        value_loss = jnp.maximum(value_loss, jnp.square(clipped_value - samples.target))
    value_loss = 0.5 * value_loss.mean()
    entropy = -jnp.sum(jnp.exp(log_probs) * log_probs, axis=-1).mean()
    approx_kl = jnp.mean((ratio - 1.0) - (log_prob - samples.log_prob))  # Schulman's k3 estimator
    total = policy_loss + vf_coef * value_loss - ent_coef * entropy
    return total, (policy_loss, value_loss, entropy, approx_kl)


@functools.lru_cache(maxsize=16)
def make_program(config: Config) -> Program:
    """PPO's pieces in the on-policy skeleton. Cached so that several runs of one config in a process share
    compiled code."""
    env, env_params = env_from_config(config)
    network = make_actor_critic(env, config.hidden, config.conv_features, config.activation)
    loss_fn = program.bind_config(
        ppo_loss, config, "clip_eps", "clip_value", "vf_coef", "ent_coef", apply=network.apply
    )

    def act(params, obs: jax.Array) -> jax.Array:
        """The most probable action (any leading batch axes): what evaluation plays."""
        return network.apply(params, obs)[0].argmax(axis=-1).astype(jnp.int32)

    def explore(learner: on_policy.Learner, obs: jax.Array, uniforms: jax.Array, t: jax.Array):
        """An action sampled from the policy, with its log-probability and the state's value."""
        logits, value = network.apply(learner.params, obs)
        action = on_policy.sample_categorical(logits, uniforms[:, 0])
        log_prob = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], axis=-1)[:, 0]
        return action, (log_prob, value)

    def targets(params, rollout: Rollout, last_obs: jax.Array) -> Samples:
        log_prob, value = rollout.extras
        last_value = network.apply(params, last_obs)[1]
        advantage, target = gae(rollout, value, last_value, config.gamma, config.gae_lambda)
        return Samples(rollout.obs, rollout.action, log_prob, value, advantage, target)

    def report(learner: on_policy.Learner, mean_logs, t_end: jax.Array) -> dict[str, jax.Array]:
        _, (policy_loss, value_loss, entropy, approx_kl) = mean_logs
        return {"policy_loss": policy_loss, "value_loss": value_loss, "entropy": entropy, "approx_kl": approx_kl}

    def sample(params, obs: jax.Array, key: jax.Array) -> jax.Array:
        """An action drawn from the policy (any leading batch axes): the sampled evaluation."""
        return jax.random.categorical(key, network.apply(params, obs)[0]).astype(jnp.int32)

    learning = on_policy.Learning(targets, loss_fn)
    agent = program.Agent(on_policy.network_init(network), explore, learning, report, act, sample=sample)
    return on_policy.assemble(config, env, env_params, agent)


make_train = program.make_train_for(make_program)
