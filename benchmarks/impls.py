"""The implementations the benchmark compares, each behind one small adapter.

A `JaxImpl` is a batched, jittable pair `reset(key, n, params) -> (state, obs)` and
`step(key_or_keys, state, actions, params) -> (state, obs, reward, done)` that resets finished episodes
itself; `params` is the implementation's params pytree (None where it has none), which the harness either
bakes into the compiled code or passes as a traced argument.
`keyed` says whether `step` wants one PRNG key per environment (gymnax, pgx, MaxAtar's per-env split) or
one key for the whole batch (MaxAtar's one-uniform-call path). A `LoopImpl` is a numpy reference stepped
from Python: `make(n, seed)` returns `step(actions)`, which steps all `n` environments once.

Peers are imported lazily: a missing peer or game is reported as a skip reason, never an error.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
from collections.abc import Callable
from importlib import metadata
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import maxatar
from maxatar.episode import AutoReset
from maxatar.prng import uniform
from maxatar.registry import MINATAR_GAMES, SPECS, env_class


def _peer_names(game_id: str) -> tuple[str, str, str, str]:
    """(gymnax id, pgx module, pgx class, MinAtar module) of a MinAtar game: gymnax's name is the one the game
    declares (`gymnax_name`), and pgx's and MinAtar's modules are named as the game's folder is."""
    folder = SPECS[game_id].entry_point.split(":")[0].rsplit(".", 1)[1]
    return env_class(game_id).gymnax_name, folder, f"MinAtar{game_id.removesuffix('-v0')}", folder


# MaxAtar game name (Breakout, ...) -> its names in the peers, for every MinAtar game of the registry.
PEER_NAMES = {game_id.removesuffix("-v0"): _peer_names(game_id) for game_id in MINATAR_GAMES}


@dataclasses.dataclass
class JaxImpl:
    name: str
    family: str  # "maxatar", "peer" or "ceiling"
    num_actions: int
    keyed: bool
    reset: Callable
    step: Callable
    note: str = ""
    params: Any = None

    @property
    def state_bytes(self) -> int:
        """Bytes of one environment's state (everything the implementation carries between steps)."""
        state, _ = jax.eval_shape(lambda key: self.reset(key, 1, self.params), jax.random.PRNGKey(0))
        return sum(math.prod(leaf.shape[1:]) * leaf.dtype.itemsize for leaf in jax.tree.leaves(state))

    def obs_spec(self) -> tuple[tuple[int, ...], Any]:
        _, obs = jax.eval_shape(lambda key: self.reset(key, 1, self.params), jax.random.PRNGKey(0))
        return tuple(obs.shape[1:]), obs.dtype


@dataclasses.dataclass
class LoopImpl:
    name: str
    family: str  # "peer"
    num_actions: int
    make: Callable[[int, int], Callable[[np.ndarray], None]]
    vectorized: bool = False  # True: `step` takes the whole action batch in one numpy call
    note: str = ""


def short_id(env_id: str) -> str:
    return env_id.split("/")[-1]


def game_name(env_id: str) -> str:
    """ "maxatar/Breakout-v0" -> "Breakout". Every MaxAtar id has the full action set (MinAtar's default), so the
    peers below are built with it too."""
    return short_id(env_id).rsplit("-", 1)[0]


# --- MaxAtar ---------------------------------------------------------------------------------------------


def maxatar_impls(env_id: str) -> list[JaxImpl]:
    """Both batched stepping modes: per-env key split, and one uniform call for the whole batch."""
    env, params = maxatar.make(env_id)
    auto = AutoReset(env)

    def reset(key, n, params):
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(key, n), params)
        return state, obs

    def step_split(keys, state, actions, params):
        out = jax.vmap(auto.step, in_axes=(0, 0, 0, None))(keys, state, actions, params)
        obs, state, reward, terminated, truncated, _ = out
        return state, obs, reward, terminated | truncated

    def step_uniform(key, state, actions, params):
        uniforms = uniform(key, (actions.shape[0], auto.num_uniforms))  # = jax.random.uniform, bit for bit
        out = jax.vmap(auto.step_from_uniforms, in_axes=(0, 0, 0, None))(uniforms, state, actions, params)
        obs, state, reward, terminated, truncated, _ = out
        return state, obs, reward, terminated | truncated

    n_actions = env.num_actions
    return [
        JaxImpl("maxatar[split]", "maxatar", n_actions, True, reset, step_split, "one key per env, split", params),
        JaxImpl("maxatar[uniform]", "maxatar", n_actions, False, reset, step_uniform, "one uniform call", params),
        composed_impl(env, params, reset),
    ]


def composed_impl(env, params, reset) -> JaxImpl:
    """The composition gymnax users write by hand (gymnax's own `step` is built this way): per environment,
    `env.step`, then `env.reset` with a second key, then a `jnp.where` select of state and observation."""

    def step_reset_select(key, state, action, params):
        step_key, reset_key = jax.random.split(key)
        obs, stepped, reward, terminated, truncated, _ = env.step(step_key, state, action, params)
        reset_obs, fresh = env.reset(reset_key, params)
        done = terminated | truncated
        state = jax.tree.map(lambda a, b: jnp.where(done, a, b), fresh, stepped)
        return state, jnp.where(done, reset_obs, obs), reward, done

    def step(keys, state, actions, params):
        return jax.vmap(step_reset_select, in_axes=(0, 0, 0, None))(keys, state, actions, params)

    note = "env.step + env.reset + where, one key per env (gymnax-style composition)"
    return JaxImpl("maxatar[step+reset]", "maxatar", env.num_actions, True, reset, step, note, params)


# --- gymnax and pgx ---------------------------------------------------------------------------------------


def gymnax_impl(env_id: str) -> JaxImpl:
    import gymnax

    name = game_name(env_id)
    if name == "CartPole":
        env, params = gymnax.make("CartPole-v1")
    elif name in PEER_NAMES:
        env, params = gymnax.make(PEER_NAMES[name][0], use_minimal_action_set=False)
    else:
        raise LookupError("gymnax has no such environment")

    def reset(key, n, params):
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(key, n), params)
        return state, obs

    def step(keys, state, actions, params):
        obs, state, reward, terminated, truncated, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
            keys, state, actions, params
        )
        return state, obs, reward, terminated | truncated

    note = "gymnax " + metadata.version("gymnax")
    return JaxImpl("gymnax", "peer", env.num_actions, True, reset, step, note, params)


def pgx_impl(env_id: str) -> JaxImpl:

    from pgx.experimental import auto_reset

    name = game_name(env_id)
    if name not in PEER_NAMES:
        raise LookupError("pgx has no such environment")
    _, module, cls, _ = PEER_NAMES[name]
    env = getattr(importlib.import_module(f"pgx.minatar.{module}"), cls)(use_minimal_action_set=False)
    step_one = auto_reset(env.step, env.init)

    def reset(key, n, params):
        state = jax.vmap(env.init)(jax.random.split(key, n))
        return state, state.observation

    def step(keys, state, actions, params):
        state = jax.vmap(step_one)(state, actions, keys)
        return state, state.observation, state.rewards[:, 0], state.terminated | state.truncated

    num_actions = int(env.legal_action_mask.shape[0])
    return JaxImpl(
        "pgx", "peer", num_actions, True, reset, step, f"pgx {metadata.version('pgx')}, experimental.auto_reset"
    )


# --- the do-nothing environment: the harness ceiling -------------------------------------------------------


def ceiling_impl(obs_shape: tuple[int, ...], obs_dtype, keyed: bool, num_actions: int) -> JaxImpl:
    """An environment that does nothing but what every environment must: take the action (and the key),
    emit an observation of the given shape and dtype, end episodes now and then and reset them with a
    select. Its steps/s is the most any environment can reach through the same harness."""
    obs_dtype = jnp.dtype(obs_dtype)

    def reset(key, n, params):
        state = {"t": jnp.zeros(n, jnp.int32), "a": jnp.zeros(n, jnp.int32), "k": jnp.zeros(n, jnp.uint32)}
        return state, jnp.zeros((n, *obs_shape), obs_dtype)

    def step(key, state, actions, params):
        n = actions.shape[0]
        t = state["t"] + 1
        done = (t & 63) == 0
        t = jnp.where(done, 0, t)
        k = key[:, 0] if keyed else state["k"]  # consume the (raw uint32) keys so they are computed
        flat = (t & 1).astype(obs_dtype).reshape((n,) + (1,) * len(obs_shape))
        obs = jnp.where(done.reshape(flat.shape), jnp.zeros((), obs_dtype), jnp.broadcast_to(flat, (n, *obs_shape)))
        return {"t": t, "a": actions, "k": k}, obs, done.astype(jnp.float32), done

    label = "keys" if keyed else "nokeys"
    name = f"ceiling[{label},{obs_dtype.name}{'x'.join(map(str, obs_shape))}]"
    return JaxImpl(name, "ceiling", num_actions, keyed, reset, step, "do-nothing env through the same harness")


# --- numpy references stepped from Python -----------------------------------------------------------------


def minatar_impl(env_id: str) -> LoopImpl:
    from minatar import Environment

    name = game_name(env_id)
    if name not in PEER_NAMES:
        raise LookupError("not a MinAtar game")
    module = PEER_NAMES[name][3]

    def make(n, seed):
        envs = []
        for i in range(n):
            env = Environment(module, sticky_action_prob=0.1)
            env.seed(seed + i)
            env.reset()
            envs.append(env)

        def step(actions):
            for env, a in zip(envs, actions.tolist(), strict=True):
                _, terminal = env.act(a)  # the full action set: indices are MinAtar's actions
                env.state()
                if terminal:
                    env.reset()

        return step

    return LoopImpl("minatar", "peer", 6, make, note="minatar 1.0.15 in a Python loop")


def gymnasium_cartpole_impls(env_id: str) -> list[LoopImpl]:
    """Classic numpy CartPole: one Env in a loop (N=1), its numpy-vectorised `make_vec` env, and SyncVectorEnv."""
    import gymnasium

    if game_name(env_id) != "CartPole":
        raise LookupError("no Gymnasium reference")

    def make_single(n, seed):
        envs = [gymnasium.make("CartPole-v1") for _ in range(n)]
        for i, env in enumerate(envs):
            env.reset(seed=seed + i)

        def step(actions):
            for env, a in zip(envs, actions.tolist(), strict=True):
                _, _, terminated, truncated, _ = env.step(a)
                if terminated or truncated:
                    env.reset()

        return step

    def make_vector(mode):
        def make(n, seed):
            env = gymnasium.make_vec("CartPole-v1", num_envs=n, vectorization_mode=mode)
            env.reset(seed=seed)
            return lambda actions: env.step(actions)

        return make

    return [
        LoopImpl("gymnasium", "peer", 2, make_single, note="gymnasium.make in a Python loop"),
        LoopImpl("gymnasium[vector]", "peer", 2, make_vector("vector_entry_point"), True, "numpy CartPoleVectorEnv"),
        LoopImpl("gymnasium[sync]", "peer", 2, make_vector("sync"), True, "SyncVectorEnv"),
    ]


def peer_impls(env_id: str) -> tuple[list[JaxImpl | LoopImpl], list[str]]:
    """Every peer that has this environment, and a line per peer that was skipped and why."""
    found, skipped = [], []
    for label, factory in (
        ("gymnax", gymnax_impl),
        ("pgx", pgx_impl),
        ("minatar", minatar_impl),
        ("gymnasium", gymnasium_cartpole_impls),
    ):
        try:
            made = factory(env_id)
        except LookupError:
            continue  # the peer simply has no such environment
        except Exception as error:  # noqa: BLE001  (an uninstalled or broken peer is reported, not fatal)
            skipped.append(f"{label}: {type(error).__name__}: {error}")
            continue
        found.extend(made if isinstance(made, list) else [made])
    return found, skipped
