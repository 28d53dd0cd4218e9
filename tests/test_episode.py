"""The episode rules of both engines (`maxatar.episode`): `autoreset` (JAX) and `TwinEnv.autoreset_step` (Python)
play the same episodes in every auto-reset mode on every game with a bit-exact twin."""

from __future__ import annotations

import dataclasses
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxatar
import maxatar.core
from maxatar.core import tree_select
from maxatar.episode import DISABLED, NEXT_STEP, SAME_STEP, TwinEnv, autoreset, reset_part, restart
from maxatar.twin import load_twin

MODES = (NEXT_STEP, SAME_STEP, DISABLED)
EXACT_IDS = [i for i in maxatar.registered_ids() if "CartPole" not in i]  # CartPole: float64 twin, test_cartpole
STEPS = 120


@partial(jax.jit, static_argnums=0)
def jax_play(env, first_row, rows, actions, params):
    """Every mode side by side from the same start: per step and mode, (obs, reward, flags, pending, final obs).
    DISABLED resets a finished episode from the next row, as a caller would."""
    _, start = env.reset_from_uniforms(reset_part(env, first_row, params), params)

    def body(carry, inputs):
        row, action = inputs
        out = []
        for i, mode in enumerate(MODES):
            state, pending = carry[i]
            if mode == DISABLED:  # the caller's reset of a finished episode, as the vector env's reset_mask does
                state = tree_select(pending, restart(env, reset_part(env, row, params), params, state)[1], state)
                pending = jnp.bool_(False)
            state, pending, obs, reward, terminated, truncated, info = autoreset(
                env, mode, state, pending, action, row, params, final_obs=True
            )
            final = info.get("final_obs", jnp.zeros_like(obs))
            out.append(((state, pending), (obs, reward, terminated, truncated, pending, final)))
        return tuple(o[0] for o in out), tuple(o[1] for o in out)

    carry = tuple((start, jnp.bool_(False)) for _ in MODES)
    return jax.lax.scan(body, carry, (rows, actions))[1]


def twin_play(env, params, first_row, rows, actions, mode):
    twin = TwinEnv(env, params, load_twin(env, params))
    twin.reset(first_row, fresh=True)
    out, pending = [], False
    for row, action in zip(rows, actions, strict=True):
        if mode == DISABLED and pending:
            twin.reset(row)
            pending = False
        pending, obs, reward, terminated, truncated, final = twin.autoreset_step(mode, pending, action, row)
        out.append((obs, np.float32(reward), terminated, truncated, pending, final))
    return out


@pytest.mark.parametrize("env_id", EXACT_IDS)
def test_both_engines_play_the_same_episodes_in_every_mode(env_id):
    env, params = maxatar.make(env_id, sticky_action_prob=0.3, max_steps=15)
    rng = np.random.default_rng(0)
    uniforms = rng.random((STEPS + 1, env.num_auto_reset_uniforms), dtype=np.float32)
    actions = rng.integers(0, env.num_actions, STEPS).astype(np.int32)
    played = jax.device_get(jax_play(env, uniforms[0], uniforms[1:], actions, params))
    for mode, jaxed in zip(MODES, played, strict=True):
        twin = twin_play(env, params, uniforms[0].tolist(), uniforms[1:].tolist(), actions.tolist(), mode)
        resets = 0
        for t, (expected, got) in enumerate(zip(zip(*jaxed, strict=True), twin, strict=True)):
            obs, reward, terminated, truncated, pending, final = got
            where = f"{env_id} {mode.value} step {t}"
            np.testing.assert_array_equal(obs, expected[0], err_msg=where)
            assert (reward, terminated, truncated, pending) == tuple(x.item() for x in expected[1:5]), where
            if mode == SAME_STEP:
                np.testing.assert_array_equal(final, expected[5], err_msg=where)
            resets += terminated or truncated
        assert resets >= 3, f"{env_id} {mode.value}: only {resets} episodes ended; the test must cover resets"


def test_a_state_loaded_ended_finishes_in_the_same_step_with_its_own_final_observation():
    env, params = maxatar.make("Seaquest-v0")
    state = env.reset(jax.random.key(0), params)[1]
    for i in range(20):  # a game under way, whose observation differs from a fresh one
        state = env.step(jax.random.key(i), state, 1, params)[1]
    dead = dataclasses.replace(state, terminated=jnp.bool_(True))
    obs, fresh, reward, terminated, truncated, info = jax.jit(maxatar.AutoReset(env, final_obs=True).step)(
        jax.random.key(99), dead, 3, params
    )
    np.testing.assert_array_equal(info["final_obs"], env.observation(dead))  # the game as loaded, not stepped on
    assert float(reward) == 0.0 and bool(terminated) and not bool(fresh.terminated)
    np.testing.assert_array_equal(obs, env.observation(fresh))
