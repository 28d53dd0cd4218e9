"""Every game's plain-Python twin plays exactly as its JAX step: same uniforms and actions in, same
observations, rewards, flags and states out, at every step of whole episodes (resets included).

The JAX side replays the twin's protocol in one jitted scan: each tape row is either a reset (the call after
an episode ended, keeping the last executed action as MinAtar does) or a step. Hypothesis picks the seed of
the uniforms, the params, and a biased random policy (a per-example action distribution, so that episodes
wander far: Freeway's top, Seaquest's surfacing, Breakout's second wall)."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import maxatar
from maxatar.episode import NEXT_STEP, TwinEnv, autoreset, reset_part
from maxatar.prng import uniform
from maxatar.twin import load_twin
from tests.tiers import examples

EXACT_IDS = [i for i in maxatar.registered_ids() if "CartPole" not in i]  # CartPole: see test_cartpole.py
STEPS = 600


@partial(jax.jit, static_argnums=0)
def jax_play(env, rows, actions, params):
    """The twin protocol in JAX: row 0 resets, then NEXT_STEP auto-reset (`maxatar.episode.autoreset`)."""
    _, state = env.reset_from_uniforms(reset_part(env, rows[0], params), params)

    def body(carry, inputs):
        state, pending = carry
        row, action = inputs
        state, next_pending, obs, reward, terminated, truncated, _ = autoreset(
            env, NEXT_STEP, state, pending, action, row, params
        )
        return (state, next_pending), (obs, reward, terminated, truncated, pending, state)

    first = (env.observation(state), state)
    return first, jax.lax.scan(body, (state, jnp.bool_(False)), (rows[1:], actions))[1]


def twin_play(env, params, rows, actions):
    """The same protocol through `TwinEnv.autoreset_step`, stacked like `jax_play`'s outputs (numpy)."""
    twin = TwinEnv(env, params, load_twin(env, params))
    rows = rows.tolist()
    first = (twin.reset(rows[0]), twin.numpy_state())
    out, pending = [], False
    for row, action in zip(rows[1:], actions.tolist(), strict=True):
        was_pending = pending
        pending, obs, reward, terminated, truncated, _ = twin.autoreset_step(NEXT_STEP, pending, action, row)
        assert type(reward) is float and type(terminated) is bool and type(truncated) is bool
        out.append((obs, np.float32(reward), terminated, truncated, was_pending, twin.numpy_state()))
        if np.float32(reward) != reward:
            raise AssertionError(f"row {len(out)}: reward {reward!r} is not a float32 value")
    stacked = [np.stack(column) for column in list(zip(*out, strict=True))[:5]]
    states = jax.tree.map(lambda *leaves: np.stack(leaves), *[o[5] for o in out])
    return first, (*stacked, states)


def assert_same_state(expected, actual, where):
    for (path, e), a in zip(jax.tree_util.tree_leaves_with_path(expected), jax.tree.leaves(actual), strict=True):
        e, a = np.asarray(e), np.asarray(a)
        assert e.dtype == a.dtype and np.array_equal(e, a), f"{where}: state{jax.tree_util.keystr(path)} {e} != {a}"


def assert_twin_plays_as_jax(env, params, rows, actions) -> tuple:
    """Play `rows` and `actions` through the JAX game (`jax_play`) and the twin (`twin_play`) and require
    every observation, reward, flag and state to be equal, naming the first row that differs. Returns the JAX
    side's outputs (numpy)."""
    (obs0, state0), out = jax.device_get(jax_play(env, rows, actions, params))
    (t_obs0, t_state0), t_out = twin_play(env, params, rows, actions)
    np.testing.assert_array_equal(t_obs0, obs0)
    assert t_obs0.dtype == obs0.dtype
    assert_same_state(state0, t_state0, "reset")
    for e, a in zip(jax.tree.leaves(out), jax.tree.leaves(t_out), strict=True):
        assert e.dtype == a.dtype and e.shape == a.shape
        if not np.array_equal(e, a):
            t = int(np.flatnonzero((e != a).reshape(len(e), -1).any(axis=1))[0])
            where = f"{env.name} row {t + 1} ({'reset' if out[4][t] else 'step'}, action {actions[t]})"
            np.testing.assert_array_equal(t_out[0][t], out[0][t], err_msg=f"{where}: observation")
            assert (t_out[1][t], t_out[2][t], t_out[3][t]) == (out[1][t], out[2][t], out[3][t]), f"{where}: flags"
            at_t = partial(jax.tree.map, lambda x, t=t: x[t])
            assert_same_state(at_t(out[5]), at_t(t_out[5]), where)
    return out


@pytest.mark.parametrize("env_id", EXACT_IDS)
@settings(max_examples=examples(8), deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    sticky=st.sampled_from([0.0, 0.1, 0.5]),
    ramping=st.booleans(),
    max_steps=st.sampled_from([0, 0, 97]),
    bias=st.lists(st.floats(0.05, 1.0), min_size=6, max_size=6),
)
def test_twin_plays_as_the_jax_step(env_id, seed, sticky, ramping, max_steps, bias):
    env, params = maxatar.make(env_id, sticky_action_prob=sticky, difficulty_ramping=ramping, max_steps=max_steps)
    assert env.twin is not None, f"{env_id} has no twin"
    rows = np.asarray(uniform(jax.random.key(seed), (STEPS + 1, env.num_auto_reset_uniforms)))
    p = np.asarray(bias[: env.num_actions]) / sum(bias[: env.num_actions])
    actions = np.random.default_rng(seed).choice(env.num_actions, STEPS, p=p).astype(np.int32)

    assert_twin_plays_as_jax(env, params, rows, actions)


def test_every_id_has_a_twin():
    for env_id in maxatar.registered_ids():
        env, params = maxatar.make(env_id)
        assert load_twin(env, params) is not None, env_id
