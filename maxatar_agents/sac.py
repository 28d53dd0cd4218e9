"""Soft actor-critic for discrete actions, as one jitted JAX program.

Discrete SAC (Christodoulou, 2019): with a finite action set the policy's distribution is explicit, so every
expectation over actions is an exact sum instead of a sampled estimate, in all three losses:

* critics (two, with target copies):  Q_i(s, a) -> r + gamma * sum_a' pi(a'|s') [min_j Qtarget_j(s', a')
  - alpha log pi(a'|s')]  (no bootstrap at termination);
* actor:  sum_a pi(a|s) [alpha log pi(a|s) - min_j Q_j(s, a)];
* temperature:  sum_a pi(a|s) [-alpha (log pi(a|s) + target_entropy)], which raises alpha when the policy's
  entropy falls below `target_entropy = target_entropy_scale * log(num_actions)`.

The defaults are the paper's Atari settings (Adam lr 3e-4 for all three, batch 64, a 1M buffer, 20k random
steps first, one update every 4 steps, a hard target copy every 8000 updates, target entropy 0.98 of the
maximum, gamma 0.99), on the MinAtar network and MinAtar's 5M-frame budget. Evaluation plays the most
probable action. Layout as in dqn.py: `Config`, `PRESETS`, `make_program`, `make_train`, command line.

    python -m maxatar_agents.sac --env maxatar/Breakout-v0 --preset minatar --seeds 4 --out runs/breakout-sac
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, NamedTuple

import flashbax as fbx
import jax
import jax.numpy as jnp
import optax

from maxatar.core import AutoReset, uniform, uniform_to_int
from maxatar_agents.common import Program, env_from_config, run_whole, schedule, tie_to_seed
from maxatar_agents.evaluation import EpisodeStats, episode_stats_init, episode_stats_update, evaluate, recent_return
from maxatar_agents.networks import make_network

ALGORITHM = "sac"
DEFAULT_PRESET = "minatar"


@dataclasses.dataclass(frozen=True)
class Config:
    """Every knob of a run. Defaults: Christodoulou (2019), Table 1, except the environment and frame
    budget (MinAtar's). Frames count environment steps of one seed over all its vectorised environments."""

    env_id: str = "maxatar/Breakout-v0"
    total_steps: int = 5_000_000  # frames per seed (rounded up to whole logging intervals)
    num_envs: int = 1
    buffer_size: int = 1_000_000
    learning_starts: int = 20_000  # frames of uniformly random play before the first update
    batch_size: int = 64
    train_every: int = 4  # vector steps between two updates
    target_update_every: int = 8_000  # updates between target updates
    tau: float = 1.0  # target <- tau * online + (1 - tau) * target (1: a hard copy)
    gamma: float = 0.99
    actor_lr: float = 3e-4
    critic_lr: float = 3e-4
    alpha_lr: float = 3e-4
    adam_eps: float = 1e-4  # larger than Adam's 1e-8, which is unstable for the temperature
    initial_alpha: float = 1.0
    target_entropy_scale: float = 0.98  # target entropy as a fraction of the maximum, log(num_actions)
    hidden: tuple[int, ...] = (128,)
    conv_features: int = 16
    sticky_action_prob: float | None = None  # None: the environment's default (0.1 for MinAtar games)
    difficulty_ramping: bool | None = None
    log_points: int = 100
    eval_episodes: int = 100
    eval_max_steps: int = 10_000

    def __post_init__(self):
        positive = ["total_steps", "num_envs", "buffer_size", "batch_size", "train_every", "target_update_every"]
        positive += ["log_points", "eval_episodes", "eval_max_steps"]
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 < self.tau <= 1.0:
            raise ValueError(f"tau must be in (0, 1], got {self.tau}")
        if self.initial_alpha <= 0:
            raise ValueError(f"initial_alpha must be > 0, got {self.initial_alpha}")
        if self.buffer_size // self.num_envs < 2:
            raise ValueError("buffer_size must hold at least two transitions per environment")
        if self.learning_starts < self.batch_size:
            raise ValueError("learning_starts must be at least batch_size (the buffer must hold a batch)")


PRESETS: dict[str, dict[str, Any]] = {
    # The paper's algorithm at MinAtar's scale: MinAtar's 100k buffer and 5k random frames; the lower target
    # entropy that CleanRL found more robust on Atari (0.89 of the maximum).
    "minatar": dict(buffer_size=100_000, learning_starts=5_000, target_entropy_scale=0.89),
    # Solves CartPole-v1 (deterministic return 500).
    "cartpole": dict(
        env_id="maxatar/CartPole-v1",
        total_steps=100_000,
        num_envs=4,
        buffer_size=50_000,
        learning_starts=2_000,
        batch_size=128,
        train_every=1,
        target_update_every=1,
        tau=0.01,
        actor_lr=5e-4,
        critic_lr=5e-4,
        alpha_lr=5e-4,
        target_entropy_scale=0.7,
        hidden=(128, 128),
        log_points=50,
    ),
}


class Transition(NamedTuple):
    """One environment step in the buffer; the next observation is the next item's `obs` (see dqn.py)."""

    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array


class TrainState(NamedTuple):
    actor_params: Any
    critic_params: Any  # both critics, stacked on a leading axis of 2
    target_critic_params: Any
    log_alpha: jax.Array
    actor_opt: Any
    critic_opt: Any
    alpha_opt: Any
    buffer: Any
    env_state: Any
    obs: jax.Array
    stats: EpisodeStats
    key: jax.Array


@functools.lru_cache(maxsize=16)
def make_program(config: Config) -> Program:
    """The pure pieces of a run (see dqn.py); cached so runs of one config share compiled code."""
    env, env_params = env_from_config(config)
    stepper = AutoReset(env)
    actor = make_network(env, config.hidden, config.conv_features)  # logits
    critic = make_network(env, config.hidden, config.conv_features)  # Q-values
    critics = jax.vmap(critic.apply, in_axes=(0, None))  # both critics at once: (2, ..., actions)
    actor_opt = optax.adam(config.actor_lr, eps=config.adam_eps)
    critic_opt = optax.adam(config.critic_lr, eps=config.adam_eps)
    alpha_opt = optax.adam(config.alpha_lr, eps=config.adam_eps)
    target_entropy = config.target_entropy_scale * math.log(env.num_actions)
    sched = schedule(config.total_steps, config.log_points, config.num_envs)
    start = -(-config.learning_starts // config.num_envs)
    buffer = fbx.make_flat_buffer(
        max_length=config.buffer_size,
        min_length=config.batch_size,
        sample_batch_size=config.batch_size,
        add_batch_size=config.num_envs,
    )
    batched_step = jax.vmap(stepper.step_from_uniforms, in_axes=(0, 0, 0, None))

    def init(key: jax.Array) -> TrainState:
        key, actor_key, critic_key, env_key = jax.random.split(key, 4)
        obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(env_key, config.num_envs), env_params)
        actor_params = actor.init(actor_key, obs)
        critic_params = jax.vmap(critic.init, in_axes=(0, None))(jax.random.split(critic_key), obs)
        log_alpha = jnp.log(jnp.float32(config.initial_alpha))
        example = Transition(obs[0], jnp.int32(0), jnp.float32(0), jnp.bool_(False), jnp.bool_(False))
        state = TrainState(
            actor_params=actor_params,
            critic_params=critic_params,
            target_critic_params=critic_params,
            log_alpha=log_alpha,
            actor_opt=actor_opt.init(actor_params),
            critic_opt=critic_opt.init(critic_params),
            alpha_opt=alpha_opt.init(log_alpha),
            buffer=buffer.init(example),
            env_state=env_state,
            obs=obs,
            stats=episode_stats_init(config.num_envs),
            key=key,
        )
        return tie_to_seed(state, key)  # see common.tie_to_seed: chunked runs equal whole runs

    def policy(actor_params, obs):
        logits = actor.apply(actor_params, obs)
        return jax.nn.softmax(logits), jax.nn.log_softmax(logits)

    def critic_loss(critic_params, target_critic_params, actor_params, alpha, first: Transition, second):
        """Soft Bellman error of both critics. Transitions cut by a time limit are left out (their stored
        successor is the next episode's first observation; see dqn.py)."""
        next_probs, next_log_probs = policy(actor_params, second.obs)
        next_q = critics(target_critic_params, second.obs).min(axis=0)
        next_v = jnp.sum(next_probs * (next_q - alpha * next_log_probs), axis=-1)
        target = jax.lax.stop_gradient(first.reward + config.gamma * jnp.where(first.terminated, 0.0, next_v))
        q = critics(critic_params, first.obs)  # (2, batch, actions)
        q_taken = jnp.take_along_axis(q, first.action[None, :, None], axis=-1)[..., 0]
        valid = (first.terminated | ~first.truncated).astype(jnp.float32)
        errors = jnp.sum(valid * (q_taken - target) ** 2, axis=-1) / jnp.maximum(valid.sum(), 1)
        return jnp.sum(errors), q_taken.mean()

    def actor_loss(actor_params, critic_params, alpha, obs):
        probs, log_probs = policy(actor_params, obs)
        q = jax.lax.stop_gradient(critics(critic_params, obs).min(axis=0))
        loss = jnp.sum(probs * (alpha * log_probs - q), axis=-1).mean()
        entropy = -jnp.sum(probs * log_probs, axis=-1).mean()
        return loss, (probs, log_probs, entropy)

    def alpha_loss(log_alpha, probs, log_probs):
        return jnp.sum(probs * (-jnp.exp(log_alpha) * (log_probs + target_entropy)), axis=-1).mean()

    def update(learner: tuple, buffer_state, t: jax.Array, key: jax.Array):
        """One step for critics, actor and temperature on one uniform sample, then the target update."""
        actor_params, critic_params, target_params, log_alpha, a_opt, c_opt, t_opt = learner
        batch = buffer.sample(buffer_state, key).experience
        first, second = batch.first, batch.second
        alpha = jnp.exp(log_alpha)

        (c_loss, q_mean), grads = jax.value_and_grad(critic_loss, has_aux=True)(
            critic_params, target_params, actor_params, alpha, first, second
        )
        updates, c_opt = critic_opt.update(grads, c_opt, critic_params)
        critic_params = optax.apply_updates(critic_params, updates)

        (a_loss, (probs, log_probs, entropy)), grads = jax.value_and_grad(actor_loss, has_aux=True)(
            actor_params, critic_params, alpha, first.obs
        )
        updates, a_opt = actor_opt.update(grads, a_opt, actor_params)
        actor_params = optax.apply_updates(actor_params, updates)

        probs, log_probs = jax.lax.stop_gradient((probs, log_probs))
        grad = jax.grad(alpha_loss)(log_alpha, probs, log_probs)
        updates, t_opt = alpha_opt.update(grad, t_opt, log_alpha)
        log_alpha = optax.apply_updates(log_alpha, updates)

        number = (t - start) // config.train_every + 1  # updates so far, this one included
        target_params = jax.lax.cond(
            number % config.target_update_every == 0,
            lambda: optax.incremental_update(critic_params, target_params, config.tau),
            lambda: target_params,
        )
        learner = (actor_params, critic_params, target_params, log_alpha, a_opt, c_opt, t_opt)
        return learner, jnp.stack([c_loss, a_loss, q_mean, entropy, alpha])

    def no_update(learner: tuple, buffer_state, t, key):
        return learner, jnp.zeros(5)

    def env_step(state: TrainState, t: jax.Array):
        """One vector step at global step `t` (unbatched, so `lax.cond` on it stays a branch under vmap)."""
        key, step_key, update_key = jax.random.split(state.key, 3)
        uniforms = uniform(step_key, (config.num_envs, 2 + stepper.num_uniforms))
        probs, _ = policy(state.actor_params, state.obs)
        # Sample from the policy by inverting its CDF with one uniform; uniformly random before learning.
        sampled = jnp.sum(uniforms[:, :1] > jnp.cumsum(probs, axis=-1)[:, :-1], axis=-1)
        action = jnp.where(t < start, uniform_to_int(uniforms[:, 1], 0, env.num_actions), sampled).astype(jnp.int32)
        obs, env_state, reward, terminated, truncated, _ = batched_step(
            uniforms[:, 2:], state.env_state, action, env_params
        )
        stored = Transition(state.obs, action, reward, terminated, truncated)
        state = state._replace(
            buffer=buffer.add(state.buffer, stored),
            env_state=env_state,
            obs=obs,
            stats=episode_stats_update(state.stats, reward, terminated | truncated),
            key=key,
        )
        # Only the learning state goes through the branch; the buffer is read, never returned (no copy).
        learner = (
            state.actor_params,
            state.critic_params,
            state.target_critic_params,
            state.log_alpha,
            state.actor_opt,
            state.critic_opt,
            state.alpha_opt,
        )
        learn = (t >= start) & ((t - start) % config.train_every == 0)
        learner, logs = jax.lax.cond(learn, update, no_update, learner, state.buffer, t, update_key)
        actor_params, critic_params, target_params, log_alpha, a_opt, c_opt, t_opt = learner
        state = state._replace(
            actor_params=actor_params,
            critic_params=critic_params,
            target_critic_params=target_params,
            log_alpha=log_alpha,
            actor_opt=a_opt,
            critic_opt=c_opt,
            alpha_opt=t_opt,
        )
        return state, (logs, learn)

    def interval(state: TrainState, t0: jax.Array) -> tuple[TrainState, dict[str, jax.Array]]:
        steps = t0 + jnp.arange(sched.steps_per_interval, dtype=jnp.int32)
        state, (logs, learned) = jax.lax.scan(env_step, state, steps)
        means = jnp.sum(logs, axis=0) / jnp.maximum(learned.sum(), 1)
        metrics = {
            "frames": (t0 + sched.steps_per_interval) * config.num_envs,
            "episodes": state.stats.finished,
            "recent_return": recent_return(state.stats),
            "critic_loss": means[0],
            "actor_loss": means[1],
            "q_mean": means[2],
            "entropy": means[3],
            "alpha": jnp.exp(state.log_alpha),
        }
        return state, metrics

    def act(actor_params, obs: jax.Array) -> jax.Array:
        """The deterministic policy: the most probable action (any leading batch axes)."""
        return actor.apply(actor_params, obs).argmax(axis=-1).astype(jnp.int32)

    def evaluate_state(state: TrainState) -> jax.Array:
        key = jax.random.fold_in(state.key, 1)
        act_batch = functools.partial(act, state.actor_params)
        return evaluate(env, env_params, act_batch, key, config.eval_episodes, config.eval_max_steps)

    return Program(
        config=config,
        init=init,
        interval=interval,
        evaluate=evaluate_state,
        act=act,
        policy_field="actor_params",
        schedule=sched,
    )


class TrainResult(NamedTuple):
    state: TrainState
    metrics: dict[str, jax.Array]
    eval_returns: jax.Array  # (eval_episodes,) returns of the final deterministic policy


def make_train(config: Config):
    """`train(key) -> TrainResult`: the whole run, pure. `jax.jit(jax.vmap(train))(keys)` trains many seeds."""
    program = make_program(config)

    def train(key: jax.Array) -> TrainResult:
        state, metrics = run_whole(program, key)
        return TrainResult(state, metrics, program.evaluate(state))

    return train


if __name__ == "__main__":
    from maxatar_agents.cli import main

    main(ALGORITHM)
