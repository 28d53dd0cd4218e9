"""Bad and odd inputs over every front end (`maxatar.checks`): each is refused with an error that names the
parameter, the environment staying usable (its next observation that of an untouched copy), or it plays the same
episode on both backends.

Front ends: the pure API (`maxatar.make` + reset/step), `gymnasium.make` with the Python and the JAX backend,
`gymnasium.make_vec` with the Python backend (4 sub-environments) and the JAX one (40, more than the Python
backend's `PYTHON_MAX_ENVS`), `make_sb3_vec_env` and `maxatar.gymnax.make`. Inputs: the keywords, actions, seeds,
reset options (states with values outside the ranges each game declares) and params built by hand. The listed
cases of issue 36 are explicit tests at the top. Environments are built once per module (each JAX compile costs
seconds).
"""

from __future__ import annotations

import dataclasses
import functools

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import maxatar
from maxatar import gymnax
from maxatar.checks import InputError, check_state_values, outside
from maxatar.core import EnvParams
from maxatar.games.doors.rules import DoorsParams
from maxatar.sb3 import make_sb3_vec_env
from maxatar.tape import TAPE_CALLS, Tape, seed_words
from tests.test_backends import assert_same
from tests.tiers import examples

GAME = "maxatar/Asterix-v0"  # a game with a difficulty ramp, so every keyword changes how it plays
N_PY, N_JAX = 4, 40  # make_vec sizes: the Python backend's and (above its 32) the JAX backend's
KEY = jax.random.key(0)
REFUSED = (TypeError, ValueError)


def refused(call, *names):
    """`call()` raises a TypeError or ValueError whose message names each of `names`; returns the message."""
    with pytest.raises(REFUSED) as error:
        call()
    message = str(error.value)
    for name in names:
        assert name in message, f"{name!r} not in {message!r}"
    return message


# --- front ends, built once --------------------------------------------------------------------------------


def build(front: str, env_id: str = GAME, **kwargs):
    if front == "pure":
        return maxatar.make(env_id, **kwargs)
    if front == "gymnax":
        return gymnax.make(env_id, **kwargs)
    if front in ("gym-python", "gym-jax"):
        return gymnasium.make(env_id, backend=front.removeprefix("gym-"), disable_env_checker=True, **kwargs)
    if front in ("vec-python", "vec-jax"):
        n = kwargs.pop("num_envs", N_PY if front == "vec-python" else N_JAX)
        return gymnasium.make_vec(env_id, num_envs=n, backend=front.removeprefix("vec-"), **kwargs)
    assert front == "sb3"
    return make_sb3_vec_env(env_id, num_envs=kwargs.pop("num_envs", N_PY), **kwargs)


def params_of(front: str, built):
    if front in ("pure", "gymnax"):
        return built[1]
    if front == "sb3":
        return built.venv.params
    return built.unwrapped.params


@functools.cache
def pair(front: str, env_id: str = GAME):
    """Two identical front ends: one gets the bad input, the other stays untouched to compare with."""
    return build(front, env_id), build(front, env_id)


def num_envs(front: str) -> int:
    return {"vec-python": N_PY, "vec-jax": N_JAX, "sb3": N_PY}.get(front, 1)


def start(front, env, seed):
    """A seeded reset and two steps, so the environment is mid-episode (its tape and sticky action moved)."""
    if front == "sb3":
        env.seed(seed)
        obs = env.reset()
        for t in range(2):
            obs = env.step(np.full(N_PY, t % 5))[0]
        return obs
    env.reset(seed=seed)
    n = num_envs(front)
    for t in range(2):
        obs = env.step(t % 5 if n == 1 else np.full(n, t % 5))[0]
    return obs


def step_both(front, a, b, action=1):
    """One step of both copies with the same action: the same results (the refused call changed nothing)."""
    n = num_envs(front)
    actions = action if n == 1 else np.full(n, action)
    out_a, out_b = a.step(actions), b.step(actions)
    for x, y in zip(out_a[:4], out_b[:4], strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


# --- the listed cases (issue 36) -----------------------------------------------------------------------------

ALL_FRONTS = ("pure", "gym-python", "gym-jax", "vec-python", "vec-jax", "sb3", "gymnax")


@pytest.mark.parametrize("value", [2, "False", None, 0, 1.0, np.int64(1), [True, False]])
def test_difficulty_ramping_is_a_bool_everywhere(value):
    """2 used to ramp on the Python backend and not on the JAX one (2 & True == 0); "False" ramped; None played
    on Python and failed with a tracer error on JAX. Now every front end refuses them at construction."""
    for front in ALL_FRONTS:
        refused(lambda front=front: build(front, difficulty_ramping=value), "difficulty_ramping", "True or False")
    for value in (True, False, np.bool_(False)):
        assert params_of("vec-jax", build("vec-jax", difficulty_ramping=value)).difficulty_ramping is bool(value)


@pytest.mark.parametrize("backend", ["python", "jax"])
def test_breakout_start_state_out_of_range(backend):
    """`ball_x=50` raised IndexError on Python and played on, clipped, on JAX; `ball_y=-3` gave different
    observations. Both are refused by both backends, naming the field and its range, the env left as it was."""
    env, untouched = pair(f"gym-{backend}", "maxatar/Breakout-v0")
    for e in (env, untouched):
        start(f"gym-{backend}", e, 5)
    state = env.unwrapped.state
    for field, value in (("ball_x", 50), ("ball_y", -3), ("ball_dir", 4), ("bricks", -1), ("pos", 10)):
        bad = dataclasses.replace(
            state,
            game=dataclasses.replace(
                state.game, **{field: np.asarray(value, np.int8 if field != "bricks" else np.int32)}
            ),
        )
        refused(lambda bad=bad: env.reset(options={"state": bad}), f"game.{field}", "outside")
        assert_same(env.unwrapped.state, state)
    bad = dataclasses.replace(state, time=np.int32(-1))
    refused(lambda: env.reset(options={"state": bad}), "time", "outside")
    bad = dataclasses.replace(state, last_action=np.int32(6))
    refused(lambda: env.reset(options={"state": bad}), "last_action", "0..5")
    refused(lambda: env.reset(options={"state": state, "start": 1}), "unknown reset options", "start")
    refused(lambda: env.reset(options={"state": state.game}), "EnvState")
    step_both(f"gym-{backend}", env, untouched)


@pytest.mark.parametrize("front", ["vec-python", "vec-jax"])
def test_vector_actions_out_of_range_raise_whatever_the_array(front):
    """With more than 32 sub-environments (JAX backend) an out-of-range jax.Array used to be clipped silently
    (and `info` was {}); with 4 it raised. Both raise now, for numpy and JAX arrays, before the step."""
    venv, untouched = pair(front)
    n = num_envs(front)
    for e in (venv, untouched):
        start(front, e, 3)
    for bad in (np.full(n, 6), jnp.full(n, 6), jnp.full(n, -1), jnp.zeros(n, jnp.float32), jnp.zeros(n + 1, jnp.int32)):
        refused(lambda bad=bad: venv.step(bad), "actions")
    step_both(front, venv, untouched)
    # valid JAX actions play as the same numpy actions
    a = venv.step(jnp.full(n, 2, jnp.int32))
    b = untouched.step(np.full(n, 2))
    for x, y in zip(a[:4], b[:4], strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_vector_jax_output_flags_out_of_range_jax_actions():
    """With JAX output nothing waits for the device, so a JAX array's out-of-range action is clipped and flagged
    in `info["invalid_action"]`, as under jit (numpy actions are still checked on the host and raise)."""
    venv = build("vec-jax", output="jax")
    venv.reset(seed=0)
    actions = jnp.zeros(N_JAX, jnp.int32).at[3].set(9)
    info = venv.step(actions)[4]
    assert np.flatnonzero(np.asarray(info["invalid_action"])).tolist() == [3]
    assert not np.asarray(venv.step(jnp.zeros(N_JAX, jnp.int32))[4]["invalid_action"]).any()
    refused(lambda: venv.step(np.asarray(actions)), "actions", "[9]")


def test_max_steps_and_sticky_prob_are_checked_at_construction():
    """`max_steps=2**40` or "10" used to construct and fail at the first JAX reset without naming the parameter
    ("10" played as 10 on Python); `sticky_action_prob=None` failed inside `float()`; batched params through
    `gymnasium.make` constructed, reset and then failed at the first step with a broadcasting error."""
    for front in ALL_FRONTS:
        refused(lambda front=front: build(front, max_steps=2**40), "max_steps", "2**31 - 1")
        refused(lambda front=front: build(front, max_steps="10"), "max_steps")
        refused(lambda front=front: build(front, sticky_action_prob=None), "sticky_action_prob", "[0, 1]")
        refused(lambda front=front: build(front, sticky_action_prob=[0.0, 1.0]), "sticky_action_prob")
    for front in ("gym-python", "gym-jax", "vec-python", "vec-jax", "sb3", "gymnax"):  # one set of params
        refused(lambda front=front: build(front, sticky_action_prob=np.array([0.0, 1.0])), "sticky_action_prob", "one")
        refused(lambda front=front: build(front, max_steps=jnp.array([5, 6])), "max_steps", "batched")
    # the pure API takes batched params (an array, not a list) and vmaps over them
    env, params = maxatar.make(GAME, sticky_action_prob=np.array([0.0, 1.0]), max_steps=np.array([5, 6]))
    obs, state = jax.vmap(env.reset, (None, EnvParams(0, None, 0, None)))(KEY, params)
    assert obs.shape == (2, *env.obs_shape)


def test_pure_api_keys_and_params_built_by_hand():
    """An int key gave `AttributeError: 'int' object has no attribute 'dtype'`; Breakout took `DoorsParams`;
    `EnvParams(sticky_action_prob=2.0)` built by hand was used."""
    env, params = maxatar.make("Breakout-v0")
    obs, state = env.reset(KEY, params)
    refused(lambda: env.reset(0, params), "key", "jax.random.key")
    refused(lambda: env.step(7, state, 0, params), "key")
    refused(lambda: env.sample_draws(np.uint64(3), state), "key")
    refused(lambda: maxatar.AutoReset(env).step(KEY, state, 0, EnvParams(max_steps=1.5)), "max_steps")
    refused(lambda: maxatar.AutoReset(env).step(3, state, 0), "key")
    refused(lambda: env.reset(jax.random.split(KEY, 2), params), "key", "one PRNG key")
    refused(lambda: env.reset(KEY, DoorsParams()), "params", "EnvParams", "DoorsParams")
    refused(lambda: env.reset(KEY, EnvParams(sticky_action_prob=2.0)), "sticky_action_prob")
    refused(lambda: env.step(KEY, state, 0, EnvParams(max_steps=-1)), "max_steps")
    refused(
        lambda: env.transition(state, 0, env.sample_draws(KEY, state), EnvParams(difficulty_ramping=1)),
        "difficulty_ramping",
    )
    refused(lambda: maxatar.make("Doors-v0")[0].reset(KEY, EnvParams()), "DoorsParams")
    facade = gymnax.make("Breakout-MinAtar")[0]
    refused(lambda: facade.reset(0), "key")
    refused(lambda: facade.step(KEY, state, 0, EnvParams(sticky_action_prob="0.5")), "sticky_action_prob")
    # a valid hand-built object is checked once (cached by identity) and plays as the same params from make
    hand = EnvParams(sticky_action_prob=0.25, max_steps=np.int32(7))
    made = maxatar.make("Breakout-v0", sticky_action_prob=0.25, max_steps=7)[1]
    step = jax.jit(env.step)
    a = step(KEY, state, 3, hand)
    b = step(KEY, state, 3, made)
    assert_same(a[:5], b[:5])
    assert_same(env.step(KEY, state, 3, hand)[:5], a[:5])  # eager: checked, then used as given
    # under jit nothing can raise: traced params and actions pass (the documented clip and flag)
    info = jax.jit(env.step)(KEY, state, jnp.int32(99), EnvParams(sticky_action_prob=2.0))[-1]
    assert bool(info["invalid_action"])


def test_seeds_are_one_range_without_aliasing():
    """Seeds 2**32 apart used to share a tape (JAX keeps 32 bits); now every seed in 0 .. 2**64 - 1 has its own,
    and seeds below 2**32 keep JAX's key bit for bit (existing streams unchanged)."""
    for seed in (0, 5, 2**32 - 1):
        assert seed_words(seed).tolist() == jax.random.key_data(jax.random.key(seed)).tolist()
    for seed in (5, 2**40 + 3):
        rows = [Tape(s, (3,)).next_row() for s in (seed, seed + 2**32, seed + 2**62)]
        assert len({tuple(r) for r in rows}) == 3
    big = 2**64 - 1 - 2**33
    runs = []
    for backend in ("python", "jax"):
        env = build(f"gym-{backend}", "maxatar/Freeway-v0")
        obs = [env.reset(seed=big)[0]] + [env.step(2)[0] for _ in range(5)]
        other = env.reset(seed=big % 2**32)[0]
        assert not np.array_equal(obs[0], other)  # different car speeds
        runs.append(np.stack(obs))
    np.testing.assert_array_equal(runs[0], runs[1])


@pytest.mark.parametrize("front", ["gym-python", "gym-jax", "vec-python", "vec-jax"])
def test_tape_ends_with_an_error(front):
    """Call 2**32 on one tape used to repeat call 0's row silently; now it raises, the env left as it was."""
    env, untouched = pair(front, "maxatar/Breakout-v0")
    for e in (env, untouched):
        start(front, e, 1)
    inner, other = env.unwrapped, untouched.unwrapped
    inner._tape.position = other._tape.position = TAPE_CALLS - 1
    n = num_envs(front)
    step_both(front, env, untouched)  # the last call
    state = inner.state
    with pytest.raises(RuntimeError, match=r"used up: one seed's tape holds 2\*\*32 calls"):
        env.step(0 if n == 1 else np.zeros(n, int))
    assert_same(inner.state, state)
    for e in (env, untouched):
        e.reset(seed=2)
    step_both(front, env, untouched)


def test_silent_coercions_are_refused():
    """`sticky_action_prob="0.5"`, `max_steps=True`, `reset(seed=True)`, `make_vec(num_envs=True)` and a
    "garbage:" id prefix were accepted; `reset(seed=np.int64(7))` passed MaxAtar's check and then Gymnasium
    refused it."""
    for front in ALL_FRONTS:
        refused(lambda front=front: build(front, sticky_action_prob="0.5"), "sticky_action_prob")
        refused(lambda front=front: build(front, max_steps=True), "max_steps")
    for front in ("vec-python", "vec-jax", "sb3"):
        refused(lambda front=front: build(front, num_envs=True), "num_envs")
        refused(lambda front=front: build(front, num_envs=2**40), "num_envs")
    refused(lambda: maxatar.make("garbage:Breakout-v0"), "env_id", "prefix")
    refused(lambda: gymnax.make("garbage:Breakout-v0"), "prefix")
    refused(lambda: maxatar.make("maxatar:garbage:Breakout-v0"), "prefix")
    assert maxatar.make("maxatar:maxatar/Breakout-v0")[0] == maxatar.make("Breakout-v0")[0]
    for front in ("gym-python", "gym-jax", "vec-python", "vec-jax"):
        env, untouched = pair(front)
        refused(lambda env=env: env.reset(seed=True), "seed")
        a, b = env.reset(seed=np.int64(7))[0], untouched.reset(seed=7)[0]
        np.testing.assert_array_equal(a, b)
        step_both(front, env, untouched)
    refused(lambda: make_sb3_vec_env(GAME, num_envs=2, seed=True), "seed")


def test_internal_keywords_sizes_and_sb3_inputs_are_refused():
    """The constructor's own `minimal_actions` was accepted and ignored; Doors' numpy-integer sizes were refused as
    "not an integer"; sizes without a bound failed later for want of memory; SB3's adapter took actions of any
    shape with the right size and `seed(True)` as 1."""
    for front in ALL_FRONTS:
        refused(lambda front=front: build(front, minimal_actions=True), "minimal_actions", "full_action_space")
    refused(lambda: maxatar.make("Doors-v0", size=2**40), "size", "256")
    refused(lambda: maxatar.make(GAME, obs_type="rgb", obs_scale=10**4), "obs_scale", "MiB")
    env, _ = maxatar.make("Doors-v0", size=np.int64(9), num_doors=np.int64(2))
    assert (env.size, env.num_doors) == (9, 2) and type(env.size) is int
    # The registration's own keyword: Gymnasium merged a make's `env_id` over it and played Breakout as Asterix.
    for make in (
        lambda **kw: gymnasium.make(GAME, **kw),
        *(functools.partial(gymnasium.make_vec, GAME, 2, vectorization_mode=mode) for mode in ("sync", None)),
    ):
        for other in ("maxatar/Breakout-v0", GAME):
            with pytest.raises(InputError) as error:
                make(env_id=other)
            for name in ("['env_id']", "it takes", "output", "full_action_space", "sticky_action_prob"):
                assert name in str(error.value), error.value
    from maxatar.gym import registered  # the entry points exist for the registered ids alone

    assert not hasattr(registered, "__path__") and not hasattr(registered, "Nonsense-v0")
    for name in ("Breakout-v0", "vector_Breakout-v0"):  # an id given positionally would take the id's place
        refused(lambda name=name: getattr(registered, name)("maxatar/Asterix-v0"), "positional", "keywords")
    for make in (maxatar.make, gymnax.make, make_sb3_vec_env):  # the id is their first argument: Python refuses
        refused(lambda make=make: make(GAME, env_id="maxatar/Breakout-v0"), "env_id")
    venv = make_sb3_vec_env(GAME, num_envs=4, seed=0)
    venv.reset()
    for actions in (np.zeros((2, 2), int), np.zeros((1, 4), int), np.zeros(4), np.full(4, 6)):
        refused(lambda actions=actions: venv.step_async(actions), "action")
    for seed in (True, -1, 1.5):
        refused(lambda seed=seed: venv.seed(seed), "seed")
    assert venv.seed(3) == [3, 4, 5, 6]
    venv.step_async(np.zeros(4, np.int64))
    assert venv.step_wait()[1].shape == (4,)


# --- keywords of every type ----------------------------------------------------------------------------------

NUMPY_SCALARS = [
    np.float32(0.5),
    np.float64(0.25),
    np.float16(1.0),
    np.int64(7),
    np.int32(0),
    np.uint8(3),
    np.int8(-2),
    np.bool_(True),
    np.bool_(False),
    np.int64(2**40),
    np.float64(np.nan),
]
ARRAYS = [
    np.array([0.0, 1.0]),
    np.array([1, 2]),
    np.array([True, False]),
    np.array(0.5),
    np.array(3),
    np.array(True),
    jnp.float32(0.5),
    jnp.array([0.1, 0.2]),
    jnp.int32(4),
    jnp.array(False),
]
ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(["0.5", "10", "False", "", "1"]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(0, 1),
    st.integers(-3, 12),
    st.sampled_from([2**31 - 1, 2**31, 2**40, 2**63, -(2**63), 10**30]),
    st.lists(st.integers(0, 1), min_size=1, max_size=3),
    st.tuples(st.floats(0, 1)),
    st.sampled_from(NUMPY_SCALARS),
    st.sampled_from(ARRAYS),
)
KEYWORDS = ("sticky_action_prob", "difficulty_ramping", "max_steps", "difficulty", "full_action_space")


def play_both(env_id: str, steps: int = 110, **kwargs):
    """The same seed and actions on both backends of `gymnasium.make`: the same observations, rewards and flags
    at every step (Asterix ramps at step 102) and the same state at the end."""
    runs = []
    for backend in ("python", "jax"):
        env = build(f"gym-{backend}", env_id, **kwargs)
        rng = np.random.default_rng(0)
        out = [env.reset(seed=4)[0]]
        n = env.action_space.n
        for _ in range(steps):
            obs, reward, terminated, truncated, _ = env.step(int(rng.integers(n)))
            out.append((obs, reward, terminated, truncated))
            if terminated or truncated:
                out.append(env.reset()[0])
        runs.append((out, env.unwrapped.state))
    (a, state_a), (b, state_b) = runs
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert_same(x, y)
    assert_same(state_a, state_b)


@settings(max_examples=examples(70))
@given(front=st.sampled_from(ALL_FRONTS), keyword=st.sampled_from(KEYWORDS), value=ODD)
def test_keywords_of_every_type(front, keyword, value):
    try:
        built = build(front, **{keyword: value})
    except REFUSED as error:
        assert keyword in str(error)
        return
    if keyword == "full_action_space":
        assert isinstance(value, (bool, np.bool_))
        return
    params = params_of(front, built)
    got = getattr(params, keyword)
    if front != "pure" or np.ndim(value) == 0:  # one set of params: Python scalars, as maxatar.make gives them
        assert type(got) in (bool, int, float)
        assert got == getattr(maxatar.make(GAME, **{keyword: value})[1], keyword)
        if front == "gym-python":  # accepted: the same episode on both backends
            play_both(GAME, **{keyword: value})
    else:  # the pure API's batched params: numpy or JAX arrays of one dtype per kind
        assert isinstance(got, (np.ndarray, jax.Array)) and np.shape(got) == np.shape(value)


@settings(max_examples=examples(30))
@given(value=ODD)
def test_a_games_own_params_field(value):
    """Doors' `random_doors` is a flag like `difficulty_ramping`, on every front end."""
    for front in ("pure", "gym-python", "gym-jax", "vec-jax"):
        try:
            params = params_of(front, build(front, "maxatar/Doors-v0", random_doors=value))
        except REFUSED as error:
            assert "random_doors" in str(error)
            continue
        if front == "pure" and np.ndim(value):
            assert np.asarray(params.random_doors).dtype == np.bool_
        else:
            assert params.random_doors is bool(value) and isinstance(value, (bool, np.bool_, np.ndarray, jax.Array))
    if isinstance(value, (bool, np.bool_)):
        play_both("maxatar/Doors-v0", steps=30, random_doors=value)


@settings(max_examples=examples(20))
@given(value=ODD)
def test_num_envs_of_every_type(value):
    for front in ("vec-python", "vec-jax", "sb3"):
        try:
            built = build(front, num_envs=value)
        except REFUSED as error:
            assert "num_envs" in str(error)
            continue
        assert isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
        assert built.num_envs == int(value) and type(built.num_envs) is int


# --- actions -------------------------------------------------------------------------------------------------

SCALAR_ACTIONS = st.one_of(
    st.integers(-3, 8),
    st.booleans(),
    st.floats(),
    st.none(),
    st.text(max_size=1),
    st.lists(st.integers(0, 2), max_size=2),
    st.sampled_from(
        [
            np.int64(2),
            np.uint8(1),
            np.int8(-1),
            np.float32(1),
            np.bool_(True),
            np.int64(2**40),
            np.array(2),
            np.array([1]),
            jnp.int32(1),
            jnp.int32(99),
            jnp.int16(2),
            jnp.uint8(7),
            jnp.float32(1),
            jnp.array([1]),
        ]
    ),
)


def as_valid(action, n):
    """The int an accepted action stands for, or None where every front end must refuse it."""
    array = np.asarray(action) if not isinstance(action, (list, str)) and action is not None else None
    if array is None or array.shape != () or not np.issubdtype(array.dtype, np.integer):
        return None
    return int(array) if 0 <= int(array) < n else None


@settings(max_examples=examples(60))
@given(front=st.sampled_from(["pure", "gym-python", "gym-jax", "gymnax"]), action=SCALAR_ACTIONS)
def test_single_actions_of_every_type(front, action):
    valid = as_valid(action, 6)
    if front in ("pure", "gymnax"):
        env, params = pair(front)[0]
        obs, state = env.reset(KEY, params)
        if valid is None:
            refused(lambda: env.step(KEY, state, action, params), "action")
        else:
            assert_same(env.step(KEY, state, action, params)[:3], env.step(KEY, state, valid, params)[:3])
        return
    env, untouched = pair(front)
    for e in (env, untouched):
        start(front, e, 8)
    if valid is None:
        refused(lambda: env.step(action), "action")
        step_both(front, env, untouched)
    else:
        a, b = env.step(action), untouched.step(valid)
        for x, y in zip(a[:4], b[:4], strict=True):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@st.composite
def vector_actions(draw, n):
    kind = draw(st.sampled_from(["numpy", "jax", "list"]))
    shape = draw(st.sampled_from([(n,), (n,), (n - 1,), (n, 1), ()]))
    dtype = draw(st.sampled_from([np.int64, np.int32, np.uint8, np.int8, np.float32, np.bool_]))
    values = np.asarray(draw(st.lists(st.integers(-2, 7), min_size=int(np.prod(shape)), max_size=int(np.prod(shape)))))
    array = values.reshape(shape).astype(dtype)
    return array.tolist() if kind == "list" else jnp.asarray(array) if kind == "jax" else array


@settings(max_examples=examples(60))
@given(front=st.sampled_from(["vec-python", "vec-jax", "sb3"]), data=st.data())
def test_vector_actions_of_every_type(front, data):
    n = num_envs(front)
    actions = data.draw(vector_actions(n))
    env, untouched = pair(front)
    for e in (env, untouched):
        start(front, e, 6)
    array = np.asarray(actions)
    if front == "sb3" and array.shape == (n, 1):
        array = array.reshape(n)  # SB3 hands (n, 1) action batches over too
    ok = array.shape == (n,) and np.issubdtype(array.dtype, np.integer) and np.all((array >= 0) & (array < 6))
    if not ok:
        refused(lambda: env.step(actions), "actions")
        step_both(front, env, untouched)
        return
    a, b = env.step(actions), untouched.step(array.astype(np.int64))
    for x, y in zip(a[:3], b[:3], strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


# --- seeds ---------------------------------------------------------------------------------------------------

SEEDS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**64), 2**64),
    st.sampled_from([0, 2**32, 2**63, 2**64 - 1, 2**64, -1]),
    st.floats(),
    st.text(max_size=2),
    st.sampled_from(
        [np.int64(7), np.uint64(2**63), np.uint64(2**64 - 1), np.uint64(5), np.int32(-1), np.bool_(True)]
        + [np.float64(3.0), jnp.int32(5)]
    ),
)


@settings(max_examples=examples(50))
@given(front=st.sampled_from(["gym-python", "gym-jax", "vec-python", "vec-jax", "sb3"]), seed=SEEDS)
def test_seeds_of_every_type(front, seed):
    valid = seed is None or (
        isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)) and 0 <= seed < 2**64
    )
    if front == "sb3":
        if not valid:
            refused(lambda: make_sb3_vec_env(GAME, num_envs=2, seed=seed), "seed")
        elif seed is not None:
            a, b = make_sb3_vec_env(GAME, num_envs=2, seed=seed), make_sb3_vec_env(GAME, num_envs=2, seed=int(seed))
            np.testing.assert_array_equal(a.reset(), b.reset())
        return
    env, untouched = pair(front)
    for e in (env, untouched):
        start(front, e, 9)
    if not valid:
        refused(lambda: env.reset(seed=seed), "seed", "2**64")
    else:
        a, b = env.reset(seed=seed)[0], untouched.reset(seed=None if seed is None else int(seed))[0]
        np.testing.assert_array_equal(a, b)
    step_both(front, env, untouched)


# --- reset options: states outside the ranges each game declares ---------------------------------------------

# The single games' ids: a start state of a multi-game environment (`maxatar.continual`) holds every game's state,
# whose values their own ids' ranges cover; it takes no `state` option of its own.
IDS = [env_id for env_id in maxatar.registered_ids() if "MinAtar-" not in env_id]


@functools.cache
def reachable_states(env_id: str, steps: int = 600):
    """States of random play on the Python backend (a few episodes, at random difficulty levels), numpy leaves."""
    env = build("gym-python", env_id)
    rng = np.random.default_rng(1)
    env.reset(seed=0)
    n, levels = env.action_space.n, env.unwrapped.func_env.env.max_difficulty
    states, action = [], 0
    for t in range(steps):
        if t % 4 == 0:
            action = int(rng.integers(n))
        _, _, terminated, truncated, _ = env.step(action)
        states.append(jax.device_get(env.unwrapped.state))
        if terminated or truncated or rng.random() < 0.01:
            level = int(rng.integers(levels + 1)) if levels else 0
            env.reset(options={"difficulty": level} if levels else None)
    return states


def test_reachable_states_pass_the_range_checks():
    """The ranges are those the episodes reach: every state of random play passes, and Seaquest's late game (a
    full rescue, negative diver counts, the whole ramp) too."""
    from maxatar.episode import TwinEnv
    from maxatar.twin import load_twin
    from tests.test_twin_seaquest import surviving_policy

    for env_id in IDS:
        env = maxatar.make(env_id)[0]
        states = reachable_states(env_id)
        check_state_values(env, jax.tree.map(lambda *leaves: np.stack(leaves), *states))
        assert all(
            name in env.states.ranges
            for name, v in env.state_values(states[0].game).items()
            if np.asarray(v).dtype != np.bool_
        )
    env, params = maxatar.make("Seaquest-v0")
    twin = TwinEnv(env, params, load_twin(env, params))
    twin.reset([0.0] * env.num_auto_reset_uniforms, fresh=True)
    policy, rng, states = surviving_policy(3, 0.0), np.random.default_rng(3), []
    for t in range(1500):
        twin.step(policy(t, twin.game), rng.random(env.num_auto_reset_uniforms).tolist())
        states.append(twin.numpy_state())
    assert int(states[-1].game.diver_count) < 0 and int(states[-1].game.ramp_index) > 5
    check_state_values(env, jax.tree.map(lambda *leaves: np.stack(leaves), *states))


PACKED = ("f_bullets", "divers")  # Seaquest's packed records: bits, not numbers


@st.composite
def perturbed(draw, env_id):
    """A reachable state with one to three of its values changed: flags flipped, integers moved a little or to a
    value just outside or inside their range, bit planes and packed words with a bit flipped, floats anywhere."""
    states = reachable_states(env_id)
    state = states[draw(st.integers(0, len(states) - 1))]
    paths, treedef = jax.tree_util.tree_flatten_with_path(state)
    leaves = [np.array(leaf) for _, leaf in paths]
    names = [jax.tree_util.keystr(path) for path, _ in paths]
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(leaves) - 1))
        leaf = leaves[i]
        flat = leaf.reshape(-1)
        j = draw(st.integers(0, flat.size - 1))
        if leaf.dtype == np.bool_:
            flat[j] = not flat[j]
        elif np.issubdtype(leaf.dtype, np.floating):
            flat[j] = draw(st.floats(width=32) | st.sampled_from([5.0, -5.0, 0.3, -0.3, 0.01]))
        elif leaf.dtype in (np.uint32, np.uint16) or any(name in names[i] for name in PACKED):
            bits = {np.dtype(np.uint32): 32, np.dtype(np.uint16): 16}.get(leaf.dtype, 31)
            flat[j] ^= leaf.dtype.type(1 << draw(st.integers(0, bits - 1)))
        else:
            info = np.iinfo(leaf.dtype)
            change = draw(st.integers(-4, 4) | st.sampled_from([-100, 100]))
            flat[j] = np.clip(int(flat[j]) + change, info.min, info.max)
    return treedef.unflatten(leaves)


def near_cartpole_limits(obs) -> bool:
    """Within float32 rounding of CartPole's termination limits, where the float64 twin and the float32 JAX step
    may end an episode a step apart."""
    x, theta = float(obs[0]), float(obs[2])
    return abs(abs(x) - 2.4) < 1e-3 or abs(abs(theta) - 12 * 2 * np.pi / 360) < 1e-3


@settings(max_examples=examples(60))
@given(env_id=st.sampled_from(IDS), data=st.data())
def test_start_states_are_refused_or_play_alike(env_id, data):
    """A state with values outside its game's ranges is refused by both backends naming the field (the env left
    as it was); one inside them plays the same 20 steps on both."""
    state = data.draw(perturbed(env_id))
    envs = pair("gym-python", env_id)[0], pair("gym-jax", env_id)[0]
    for env in envs:
        env.reset(seed=3)
    before = [env.unwrapped.state for env in envs]
    messages = []
    for env, was in zip(envs, before, strict=True):
        try:
            env.reset(seed=5, options={"state": state})
        except REFUSED as error:
            messages.append(str(error))
            assert_same(env.unwrapped.state, was)
    if messages:
        assert len(messages) == 2 and messages[0] == messages[1], messages
        assert "reset option 'state'" in messages[0]
        event("refused")
        return
    event("accepted: plays alike")
    actions = data.draw(st.lists(st.integers(0, envs[0].action_space.n - 1), min_size=20, max_size=20))
    if env_id == "maxatar/CartPole-v1":  # its twin is the float64 reference: the same to rounding
        for action in actions:
            a, b = (env.step(action) for env in envs)
            np.testing.assert_allclose(a[0], b[0], rtol=1e-4, atol=1e-5)
            if near_cartpole_limits(a[0]):
                return
            assert a[1:4] == b[1:4]
        return
    for action in actions:
        a, b = (env.step(action) for env in envs)
        assert_same(a[:4], b[:4])
    assert_same(envs[0].unwrapped.state, envs[1].unwrapped.state)


def test_state_ranges_name_field_and_range():
    env = maxatar.make("Breakout-v0")[0]
    state = jax.device_get(env.reset(KEY)[1])
    bad = dataclasses.replace(state, game=dataclasses.replace(state.game, ball_x=np.int8(50)))
    message = refused(lambda: check_state_values(env, bad), "game.ball_x", "50", "0..9")
    assert isinstance(InputError(message), ValueError) and isinstance(InputError(message), TypeError)
    finished = dataclasses.replace(state, game=dataclasses.replace(state.game, ball_y=np.int8(9)))
    refused(lambda: check_state_values(env, finished), "bottom row")
    check_state_values(env, dataclasses.replace(finished, terminated=np.bool_(True)))
    assert outside(np.array([-1, 0, 1, 2]), range(-1, 2, 2)).tolist() == [False, True, False, True]


@pytest.mark.parametrize("front", ["vec-python", "vec-jax"])
def test_vector_start_states_and_options(front):
    """The vector env checks a batch of states value by value; a chosen state whose episode ended counts as
    finished (next-step mode: the following step resets it), on both backends alike."""
    venv, untouched = pair(front, "maxatar/Breakout-v0")
    n = num_envs(front)
    for e in (venv, untouched):
        start(front, e, 2)
    batch = jax.device_get(venv.state)
    bad_x = batch.game.ball_x.copy()
    bad_x[n - 1] = 12
    bad = dataclasses.replace(batch, game=dataclasses.replace(batch.game, ball_x=bad_x))
    refused(lambda: venv.reset(options={"state": bad}), "game.ball_x", "12", f"index [{n - 1}]")
    refused(lambda: venv.reset(options={"reset_mask": np.ones(n, bool), "mode": 1}), "mode")
    refused(lambda: venv.reset(options={"difficulty": 1}), "no difficulty ramp")
    assert_same(venv.state, batch)
    step_both(front, venv, untouched)
    runs = []
    for backend in ("python", "jax"):
        v = build(f"vec-{backend}", "maxatar/Breakout-v0", num_envs=2)
        v.reset(seed=0)
        for t in range(400):
            if v.step(np.array([t % 3, 0]))[2].any():
                break
        ended = jax.device_get(v.state)
        v.reset(seed=1, options={"state": ended})
        runs.append([v.step(np.array([1, 2]))[:4] for _ in range(6)])
    for a, b in zip(*runs, strict=True):
        assert_same(a, b)


# --- params built by hand -------------------------------------------------------------------------------------


@functools.cache
def jitted(env):
    return jax.jit(env.reset), jax.jit(env.step)


@settings(max_examples=examples(40))
@given(field=st.sampled_from(["sticky_action_prob", "difficulty_ramping", "max_steps", "difficulty"]), value=ODD)
def test_params_built_by_hand(field, value):
    """Hand-built params are checked where they enter the pure API (reset, step, transition) and the gymnax
    facade, outside jit: refused naming the field, or used as given, as under jit."""
    env = maxatar.make("SpaceInvaders-v0")[0]
    facade = gymnax.make("SpaceInvaders-MinAtar")[0]
    hand = EnvParams(**{field: value})
    reset, step = jitted(env)
    try:
        obs, state = env.reset(KEY, hand)
    except REFUSED as error:
        assert field in str(error)
        for call in (lambda: facade.reset(KEY, hand), lambda: env.step(KEY, reset(KEY)[1], 0, hand)):
            refused(call, field)
        return
    if any(np.ndim(leaf) for leaf in jax.tree.leaves(hand)):
        return  # batched: the pure API vmaps over them
    assert_same((obs, state), reset(KEY, hand))
    assert_same(env.step(KEY, state, 5, hand)[:5], step(KEY, state, 5, hand)[:5])
    assert_same(facade.reset(KEY, hand), (obs, state))


def test_every_refusal_in_maxatar_is_an_input_error():
    """No module of `maxatar` raises a plain ValueError or TypeError: each refusal is an `InputError` (so the
    message names the parameter, and `except ValueError` and `except TypeError` both catch it)."""
    import ast
    from pathlib import Path

    plain = []
    for path in sorted(Path(maxatar.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                name = getattr(node.exc.func, "id", None)
                if name in ("ValueError", "TypeError"):
                    plain.append(f"{path.name}:{node.lineno} {name}")
    assert not plain, plain


def test_register_refuses_the_packages_namespace_bad_entry_points_and_a_second_game_under_one_id(monkeypatch):
    from maxatar import registry

    monkeypatch.setattr(registry, "SPECS", dict(registry.SPECS))  # nothing registered here leaks out
    for env_id in ("maxatar/Catch-v0", "Catch-v0", "my_games/Catch", 7):
        refused(lambda env_id=env_id: registry.register(env_id, "tests.toy_game:Catch"), "env_id", "namespace")
    for entry_point in ("tests.toy_game.Catch", "tests.toy_game:", None):
        refused(lambda e=entry_point: registry.register("my_games/Catch-v0", e), "entry_point", "module:Class")
    registry.register("my_games/Catch-v0", "tests.toy_game:Catch")
    registry.register("my_games/Catch-v0", "tests.toy_game:Catch")  # again, as it is: nothing changes
    refused(lambda: registry.register("my_games/Catch-v0", "tests.toy_game:Other"), "registered already")
    assert "my_games/Catch-v0" in registry.registered_ids() and maxatar.make("my_games/Catch-v0")[0].name == "catch"
