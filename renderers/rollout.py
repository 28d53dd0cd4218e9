"""Play a policy and render every step inside one jitted `lax.scan`, so a long rollout costs one call.

A policy is a pure function `act(key, obs) -> action index` for one (unbatched) observation. Episodes run
back to back: the frame of an episode's last state is shown once, then the next episode starts (the
action taken in a finished state is ignored). The overlay shows the episode's return so far and its step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp

from maxatar.core import Environment, EnvParams
from maxatar.episode import NEXT_STEP, autoreset
from maxatar.prng import uniform
from renderers.frames import frame

Policy = Callable[[jax.Array, jax.Array], jax.Array]


@dataclasses.dataclass(frozen=True)
class RandomPolicy:
    """Uniformly random action indices. A hashable value, so rollouts with equal policies share a compile."""

    num_actions: int

    def __call__(self, key: jax.Array, obs: jax.Array) -> jax.Array:
        return jax.random.randint(key, (), 0, self.num_actions)


def random_policy(env: Environment) -> Policy:
    """Uniformly random actions from the environment's action set."""
    return RandomPolicy(env.num_actions)


def render_rollout(
    env: Environment,
    params: EnvParams,
    policy: Policy,
    key: jax.Array,
    num_frames: int,
    overlay: bool = True,
    scale: int | None = None,
) -> tuple[jax.Array, jax.Array]:
    """`num_frames` frames (uint8, (num_frames, H, W, 3)) of `policy` playing from a reset with `key`, and
    the return of each episode at each frame (float32, (num_frames,)). Frame t shows the state in which
    the t-th action is chosen.

    `env`, `num_frames`, `overlay` and `scale` are static, and so is a plain-function policy: equal values
    reuse one compiled rollout (`RandomPolicy` compares by value, so fresh ones reuse it too). A policy given
    as `jax.tree_util.Partial(act, weights)` passes its weights as arguments instead of baking them into the
    compiled program as constants.
    """
    if not isinstance(policy, jax.tree_util.Partial):
        policy = jax.tree_util.Partial(policy)
    return _render_rollout(env, params, policy, key, int(num_frames), bool(overlay), scale)


@partial(jax.jit, static_argnums=(0, 4, 5, 6))  # positional only, so every call shape hits one cache entry
def _render_rollout(env, params, policy, key, num_frames, overlay, scale):
    key, reset_key = jax.random.split(key)
    _, state = env.reset(reset_key, params)

    def body(carry, step_key):
        state, pending, episode_return = carry
        act_key, env_key = jax.random.split(step_key)
        if overlay:
            image = frame(env, state, episode_return, state.time, scale=scale)
        else:
            image = frame(env, state, scale=scale)
        action = jnp.asarray(policy(act_key, env.observation(state))).astype(jnp.int32).reshape(())
        # The frame after an episode's last step shows how it ended; the next step starts a new one.
        uniforms = uniform(env_key, (env.num_auto_reset_uniforms,))
        state, next_pending, _, reward, _, _, _ = autoreset(env, NEXT_STEP, state, pending, action, uniforms, params)
        next_carry = (state, next_pending, jnp.where(pending, 0.0, episode_return + reward))
        return next_carry, (image, episode_return)

    carry = (state, jnp.bool_(False), jnp.float32(0.0))
    _, (images, returns) = jax.lax.scan(body, carry, jax.random.split(key, num_frames))
    return images, returns
