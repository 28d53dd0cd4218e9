"""The Gymnasium classes' two backends (the plain-Python twins and the jitted JAX step) play the same
episodes for a seed: same observations, rewards, flags, final observations and states, in every autoreset
mode, resets (seeded, unseeded, partial) included. CartPole's twin is the reference's float64 arithmetic and
agrees with the float32 JAX step to rounding (tests/test_cartpole.py proves it exact to the reference)."""

from __future__ import annotations

from functools import partial

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxatar
from maxatar.gym import MaxAtarEnv, MaxAtarVectorEnv
from maxatar.gym.backend import PYTHON_MAX_ENVS
from maxatar.twin import load_twin

TWIN_IDS = [i for i in maxatar.registered_ids() if load_twin(*maxatar.make(i)) is not None]


def assert_same(a, b, exact=True):
    """Two pytrees hold the same leaves: dtypes, shapes and values (to float32 rounding unless `exact`)."""
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        if exact:
            np.testing.assert_array_equal(x, y)
        else:
            np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("env_id", TWIN_IDS)
def test_single_env_backends_play_the_same_episodes(env_id):
    exact = "CartPole" not in env_id
    python = gymnasium.make(env_id, max_steps=40, sticky_action_prob=0.25)
    jaxed = gymnasium.make(env_id, max_steps=40, sticky_action_prob=0.25, backend="jax")
    assert python.unwrapped.backend == "python" and jaxed.unwrapped.backend == "jax"
    actions = np.random.default_rng(0).integers(0, python.action_space.n, 150)
    for seed in (3, None):  # a seeded reset, then an unseeded one that continues the tape
        outs = [env.reset(seed=seed) for env in (python, jaxed)]
        assert_same(outs[0][0], outs[1][0], exact)
        for action in actions.tolist():
            outs = [env.step(action) for env in (python, jaxed)]
            assert_same(outs[0][:4], outs[1][:4], exact)
            assert [type(x) for x in outs[0][1:4]] == [float, bool, bool]
            if exact:
                assert_same(python.unwrapped.state, jaxed.unwrapped.state)
            if outs[0][2] or outs[0][3]:
                for env in (python, jaxed):
                    env.reset()


@pytest.mark.parametrize("mode", ["next_step", "same_step", "disabled"])
def test_vector_backends_play_the_same_episodes(mode):
    kwargs = dict(num_envs=3, autoreset_mode=mode, max_steps=25, sticky_action_prob=0.3)
    python = gymnasium.make_vec("maxatar/Breakout-v0", backend="python", **kwargs)
    jaxed = gymnasium.make_vec("maxatar/Breakout-v0", backend="jax", **kwargs)
    assert_same(python.reset(seed=1)[0], jaxed.reset(seed=1)[0])
    rng = np.random.default_rng(1)
    for _ in range(80):
        actions = rng.integers(0, 6, 3)
        outs = [env.step(actions) for env in (python, jaxed)]
        assert_same(outs[0][:4], outs[1][:4])
        assert sorted(outs[0][4]) == sorted(outs[1][4])
        if mode == "same_step":
            done = outs[0][4]["_final_obs"]
            np.testing.assert_array_equal(done, outs[1][4]["_final_obs"])
            np.testing.assert_array_equal(outs[0][4]["final_obs"][done], np.asarray(outs[1][4]["final_obs"])[done])
        if mode == "disabled" and (outs[0][2] | outs[0][3]).any():
            mask = outs[0][2] | outs[0][3]
            assert_same(*[env.reset(options={"reset_mask": mask})[0] for env in (python, jaxed)])
        assert_same(python.state, jaxed.state)


def test_backend_choice_and_bad_input():
    assert MaxAtarVectorEnv("Breakout-v0", PYTHON_MAX_ENVS).backend == "python"
    assert MaxAtarVectorEnv("Breakout-v0", PYTHON_MAX_ENVS + 1).backend == "jax"
    assert MaxAtarVectorEnv("Breakout-v0", 2, output="jax").backend == "jax"
    assert MaxAtarEnv("Breakout-v0", output="jax").backend == "jax"
    with pytest.raises(ValueError, match="backend"):
        MaxAtarEnv("Breakout-v0", backend="numba")
    with pytest.raises(ValueError, match="output='jax' needs backend='jax'"):
        MaxAtarEnv("Breakout-v0", output="jax", backend="python")
    with pytest.raises(ValueError, match="devices"):
        MaxAtarVectorEnv("Breakout-v0", 2, devices=1, backend="python")
    venv = MaxAtarVectorEnv("Breakout-v0", 2, backend="python")
    venv.reset(seed=0)
    for bad in (np.array([0, 6]), jax.numpy.array([-1, 0])):  # JAX arrays are checked too: twins index tables
        with pytest.raises(ValueError, match="outside the action space"):
            venv.step(bad)
    with pytest.raises(ValueError, match="reset options"):
        venv.reset(options={"mode": 3})
    env = MaxAtarEnv("Breakout-v0")
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    with pytest.raises(ValueError, match="reset options"):
        env.reset(options={"start": 1})
    env.reset(seed=0)
    with pytest.raises(TypeError, match="integer"):
        env.step(True)
    for front in (env, venv):
        front.reset(seed=3)
        state, rng = front.state, front.np_random.bit_generator.state
        for bad_seed in (-1, 2**64, 1.5, "0"):
            with pytest.raises(ValueError, match="seed must be a non-negative integer"):
                front.reset(seed=bad_seed)
        assert_same(front.state, state)  # refused before anything changed
        assert front.np_random.bit_generator.state == rng
    assert env.reset(seed=2**64 - 1)[0].shape == (10, 10, 4)  # the largest seed: two 32-bit words


def test_numpy_tape_equals_the_jitted_tape():
    """The Python backend computes its rows in numpy; the JAX backend with `tape_row` inside the step."""
    from maxatar.tape import Tape, numpy_rows, python_rows, tape_row

    @partial(jax.jit, static_argnums=(2, 3))
    def _rows(key, start, shape, count):  # the JAX backend's rows, a batch of calls at once
        return jax.vmap(lambda t: tape_row(key, t, shape))(start + jnp.arange(count, dtype=jnp.uint32))

    for seed, start, shape, count in [(0, 0, (3,), 5), (12345, 2**32 - 3, (4, 7), 6), (99, 1000, (17,), 40)]:
        key = jax.random.key(seed)
        expected = np.asarray(_rows(key, np.uint32(start % 2**32), shape, count))
        np.testing.assert_array_equal(numpy_rows(np.asarray(jax.random.key_data(key)), start, shape, count), expected)
        np.testing.assert_array_equal(np.asarray(tape_row(key, np.uint32(start + 1), shape)), expected[1])
        anchor = jax.random.uniform(jax.random.fold_in(key, np.uint32((start + 2) % 2**32)), shape)  # the definition
        np.testing.assert_array_equal(np.asarray(anchor), expected[2])
    for shape in [(2,), (3, 2)]:  # one environment's rows and a vector env's (one row per sub-environment)
        tape = Tape(jax.random.key(7), shape, block=3)
        rows = [tape.next_row() for _ in range(7)]  # crosses two block boundaries
        tape.next_call()  # call 7 goes elsewhere: the next row is call 8's, from a new block
        rows.append(tape.next_row())
        leaves = [u for row in rows for u in (row if len(shape) == 1 else [u for env in row for u in env])]
        assert all(type(u) is float for u in leaves)  # Python floats: the twins' arithmetic
        expected = np.asarray(_rows(jax.random.key(7), np.uint32(0), shape, 9))
        np.testing.assert_array_equal(np.array(rows, np.float32), expected[[0, 1, 2, 3, 4, 5, 6, 8]])
    rng = np.random.default_rng(1)
    for _ in range(100):  # a new tape's first row, hashed on Python ints (`python_rows`), is numpy's row
        words, start = rng.integers(0, 2**32, 2, dtype=np.uint32), int(rng.integers(0, 2**32))
        shape, count = (int(rng.integers(0, 6)),), int(rng.integers(1, 4))
        np.testing.assert_array_equal(python_rows(words, start, shape, count), numpy_rows(words, start, shape, count))
    tape = Tape(7, (2,))  # a seed for a key; the blocks: the first row alone, then 256 rows, 512, 1024, ...
    rows = [tape.next_row() for _ in range(2000)]
    expected = numpy_rows(np.asarray(jax.random.key_data(jax.random.key(7))), 0, (2,), 2000)
    np.testing.assert_array_equal(np.array(rows, np.float32), expected)
    assert jax.random.key_data(tape.key).tolist() == jax.random.key_data(jax.random.key(7)).tolist()


def test_seed_words_are_the_data_of_jax_random_key():
    """The Python backend's tape makes a seed's key data without JAX: both 32-bit halves of the seed, which is
    `jax.random.key(seed)`'s data below 2**32 (so those tapes are unchanged) and, above, keeps the high half
    that JAX would drop (seeds 2**32 apart used to share a tape). The JAX backend's key (`seed_key`) holds the
    same words."""
    from maxatar.tape import seed_key, seed_words

    rng = np.random.default_rng(0)
    small = [0, 1, 2**31 - 1, 2**31, 2**32 - 1, *rng.integers(0, 2**32, 300).tolist()]
    for seed in small:
        np.testing.assert_array_equal(seed_words(seed), np.asarray(jax.random.key_data(jax.random.key(seed))))
    large = [2**32, 2**32 + 5, 2**64 - 1, *rng.integers(2**32, 2**64, 300, dtype=np.uint64).tolist()]
    for seed in small + large:
        assert seed_words(seed).tolist() == [seed >> 32, seed & 0xFFFFFFFF]
        np.testing.assert_array_equal(np.asarray(jax.random.key_data(seed_key(seed))), seed_words(seed))
    assert len({tuple(seed_words(s).tolist()) for s in small + large}) == len(set(small + large))


def test_documented_calls_do_not_warn():
    """The calls the README shows, on every id, with Python warnings turned into errors (Gymnasium's
    "out of date" version warning among them)."""
    import warnings

    from maxatar.sb3 import make_sb3_vec_env

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for env_id in maxatar.registered_ids():
            env = gymnasium.make(env_id)
            env.reset(seed=0)
            env.step(env.action_space.sample())
            env.close()
        env = gymnasium.make("maxatar/Breakout-v0", full_action_space=False)
        assert env.action_space.n == 3
        envs = gymnasium.make_vec("maxatar/Breakout-v0", num_envs=4, autoreset_mode="same_step")
        envs.reset(seed=0)
        envs.step(np.zeros(4, np.int64))
        venv = make_sb3_vec_env("maxatar/Breakout-v0", num_envs=2, seed=0)
        venv.reset()
        venv.step(np.zeros(2, np.int64))


@pytest.mark.parametrize("env_id", maxatar.registered_ids())
def test_render_draws_the_same_frames_on_both_backends(env_id):
    """The Python backend draws grid games in numpy from its twin (no JAX call); the frames are the JAX ones."""
    python, jaxed = (gymnasium.make(env_id, backend=b, render_mode="rgb_array") for b in ("python", "jax"))
    exact = "CartPole" not in env_id  # CartPole's backends agree to float32 rounding (docs/reference-quirks.md)
    for env in (python, jaxed):
        env.reset(seed=5)
    actions = np.random.default_rng(5).integers(0, python.action_space.n, 40)
    for t, action in enumerate(actions.tolist()):
        frames = [env.render() for env in (python, jaxed)]
        assert frames[0].dtype == np.uint8 and frames[0].shape == frames[1].shape
        if exact or t < 10:
            np.testing.assert_array_equal(frames[0], frames[1], err_msg=f"{env_id} step {t}")
        frames[0][:] = 0  # a fresh, writable copy: changing it changes nothing
        outs = [env.step(action) for env in (python, jaxed)]
        if outs[0][2] or outs[0][3]:
            for env in (python, jaxed):
                env.reset()
