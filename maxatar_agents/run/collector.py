"""The offline datasets' collector: thousands of environments played in lockstep by one policy, jitted beside the
step, in chunks of a `lax.scan`, with the episodes cut out of the batch afterwards.

Environment i plays exactly the episodes that `gymnasium.make(id, **kwargs)` plays from `reset(seed=seed + i)`
and then `reset()` after each episode (the tape goes on and the sticky action carries over, as in MinAtar): every
call, a reset or a step, takes the row of the seed's tape (`maxatar.tape`) that the Gymnasium front end takes.
The policy's own draws at call t of environment i are `policy_row(seed + i, t)`, so a random or ε-greedy policy
replays too. Episodes are taken in the order (k, i): every environment's first episode, then every second one,
and so on, so that no length is favoured (the first episodes to end are the short ones).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from maxatar.core import Environment, EnvParams, tree_select
from maxatar.episode import reset_part, restart
from maxatar.tape import seed_key, tape_row

POLICY_STREAM = 1  # the policy's tape of a seed is the environment's key folded with this
POLICY_UNIFORMS = 2  # per call: one for ε, one for a random action
CHUNK_STEPS = 2**17  # environment calls per jitted chunk (all environments together)

# act(observations (N, ...), uniforms (N, POLICY_UNIFORMS), env_index (N,)) -> actions (N,) int32
Act = Callable[[jax.Array, jax.Array, jax.Array], jax.Array]


class Episode(NamedTuple):
    observations: np.ndarray  # (L + 1, *obs_shape): the reset's observation, then each step's
    actions: np.ndarray  # (L,) int32
    rewards: np.ndarray  # (L,) float32
    terminations: np.ndarray  # (L,) bool
    truncations: np.ndarray  # (L,) bool
    env_index: int  # i: played from seed + i
    number: int  # k: the environment's k-th episode (0: right after its seeded reset)
    seed: int | None = None  # the seed of the reset that began it (k = 0 only): Minari's episode `seed`


def policy_row(seed: int, call) -> jax.Array:
    """The policy's uniforms at call `call` of the environment seeded `seed` (jittable in `call`)."""
    return tape_row(jax.random.fold_in(seed_key(seed), POLICY_STREAM), call, (POLICY_UNIFORMS,))


@functools.partial(jax.jit, static_argnums=0)
def _start(env: Environment, params: EnvParams, keys: jax.Array):
    """Call 0 of every environment: its seeded (fresh) reset."""

    def one(key):
        row = tape_row(key, 0, (env.num_auto_reset_uniforms,))
        return restart(env, reset_part(env, row, params), params)

    return jax.vmap(one)(keys)


@functools.partial(jax.jit, static_argnums=(0, 4))
def _chunk(env: Environment, params: EnvParams, act: Act, carry, num_calls: int):
    """`num_calls` calls of every environment: a step, or a reset where the last call ended an episode."""
    keys, policy_keys, index = carry["keys"], carry["policy_keys"], jnp.arange(carry["ended"].shape[0])

    def call(carry, t):
        state, obs, ended = carry["state"], carry["obs"], carry["ended"]
        uniforms = jax.vmap(lambda k: tape_row(k, t, (POLICY_UNIFORMS,)))(policy_keys)
        actions = act(obs, uniforms, index).astype(jnp.int32)

        def one(key, state, ended, action):
            row = tape_row(key, t, (env.num_auto_reset_uniforms,))
            draws = env.draws_from_uniforms(row[: env.num_draws], state, params)
            stepped = env.transition(state, action, draws, params)
            obs_r, state_r = restart(env, reset_part(env, row, params), params, state)
            obs_s, state_s, reward, terminated, truncated, _ = stepped
            new = tree_select(ended, (obs_r, state_r), (obs_s, state_s))
            step_out = (reward * ~ended, terminated & ~ended, truncated & ~ended)
            return new, step_out

        (obs, state), (reward, terminated, truncated) = jax.vmap(one)(keys, state, ended, actions)
        record = (obs, actions, reward.astype(jnp.float32), terminated, truncated, ended)
        return {**carry, "state": state, "obs": obs, "ended": terminated | truncated}, record

    calls = carry["t"] + jnp.arange(num_calls, dtype=jnp.uint32)
    inner = {k: carry[k] for k in ("state", "obs", "ended")}
    inner, records = jax.lax.scan(call, inner, calls)
    env_major = jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), records)  # (N, calls, ...): episodes contiguous
    return {**carry, **inner, "t": carry["t"] + num_calls}, env_major


class Played:
    """The calls played so far, on the host, environment-major: (N, T, ...) arrays, call 0 the seeded resets."""

    NAMES = ("obs", "action", "reward", "terminated", "truncated", "reset")

    def __init__(self, obs0: np.ndarray):
        n = obs0.shape[0]
        first = (obs0, np.zeros(n, np.int32), np.zeros(n, np.float32), np.zeros(n, bool), np.zeros(n, bool))
        self.parts = [[x[:, None] for x in (*first, np.ones(n, bool))]]

    def add(self, records) -> None:
        self.parts.append([np.asarray(part) for part in records])

    def arrays(self) -> dict[str, np.ndarray]:
        """Each record over all calls, filled into one array (numpy's concatenate of many-axis arrays is slow)."""
        out = {}
        for j, name in enumerate(self.NAMES):
            first = self.parts[0][j]
            full = np.empty((first.shape[0], sum(p[j].shape[1] for p in self.parts), *first.shape[2:]), first.dtype)
            t = 0
            for part in self.parts:
                full[:, t : t + part[j].shape[1]] = part[j]
                t += part[j].shape[1]
            out[name] = full
        return out

    def bounds(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per environment, the calls of its resets and of the ends of its finished episodes."""
        reset = np.concatenate([p[5] for p in self.parts], axis=1)
        done = np.concatenate([p[3] | p[4] for p in self.parts], axis=1)
        return [(np.flatnonzero(r), np.flatnonzero(d)) for r, d in zip(reset, done, strict=True)]


def chosen(bounds, episodes: int | None, steps: int | None) -> list[tuple[int, int]] | None:
    """The (k, i) of the episodes to keep, in order (k, i), once the finished ones reach the target (a number
    of episodes, or at least a number of steps); None while they do not yet."""
    finished = np.array([len(ends) for _, ends in bounds])
    k_next, n = int(finished.min()), len(bounds)
    available = k_next * n + int(np.argmax(finished == k_next))  # the (k, i) before the first unfinished one
    if episodes is not None:
        count = episodes if available >= episodes else None
    else:
        lengths = np.zeros((k_next + 1, n), np.int64)
        for i, (resets, ends) in enumerate(bounds):
            m = min(len(ends), k_next + 1)
            lengths[:m, i] = ends[:m] - resets[:m]
        total = np.cumsum(lengths.reshape(-1)[:available])
        count = int(np.searchsorted(total, steps)) + 1 if available and total[-1] >= steps else None
    return None if count is None else [divmod(m, n) for m in range(count)]


def collect(
    env: Environment,
    params: EnvParams,
    act: Act,
    seed: int,
    num_envs: int,
    episodes: int | None = None,
    steps: int | None = None,
) -> list[Episode]:
    """`episodes` episodes, or the fewest whole episodes of at least `steps` steps, of `act` in `num_envs`
    environments (environment i from seed `seed + i`), in order (k, i). Every episode must end (a time limit
    in `params` makes sure it does)."""
    seeds = [seed + i for i in range(num_envs)]
    keys = jnp.stack([seed_key(s) for s in seeds])
    policy_keys = jax.vmap(lambda k: jax.random.fold_in(k, POLICY_STREAM))(keys)
    obs0, state = _start(env, params, keys)
    carry = {
        "keys": keys,
        "policy_keys": policy_keys,
        "state": state,
        "obs": obs0,
        "ended": jnp.zeros(num_envs, bool),
        "t": jnp.uint32(1),
    }
    played = Played(np.asarray(obs0))
    num_calls = max(16, min(1024, math.ceil(CHUNK_STEPS / num_envs)))
    while (order := chosen(played.bounds(), episodes, steps)) is None:
        carry, records = _chunk(env, params, act, carry, num_calls)
        played.add(records)
    return cut(played.arrays(), played.bounds(), order)


def cut(arrays: dict[str, np.ndarray], bounds, order: list[tuple[int, int]]) -> list[Episode]:
    """The chosen episodes out of the played calls: environment i's k-th runs from its k-th reset to its
    k-th end (both calls included: the reset gives the first observation)."""
    out = []
    for k, i in order:
        resets, ends = bounds[i]
        r, e = int(resets[k]), int(ends[k])
        steps = slice(r + 1, e + 1)
        out.append(
            Episode(
                observations=arrays["obs"][i, r : e + 1],
                actions=arrays["action"][i, steps],
                rewards=arrays["reward"][i, steps],
                terminations=arrays["terminated"][i, steps],
                truncations=arrays["truncated"][i, steps],
                env_index=i,
                number=k,
            )
        )
    return out
