"""Reset options: a chosen start state and a difficulty level, in the pure, Gymnasium, vector and SB3 front ends.

A start at difficulty k is checked against the reference twice: its ramp variables are those minatar 1.0.15
reaches by running its own ramp k times, and from there the episode plays exactly as the reference put at that
level (the parity harness, step by step). A chosen state continues exactly as the pure environment from it, on
both backends.
"""

from __future__ import annotations

import dataclasses
import functools

import gymnasium
import jax
import jax.numpy as jnp
import minatar
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import maxatar
from maxatar import gymnax
from maxatar.episode import AutoReset, TwinEnv
from maxatar.reset_options import check_state
from maxatar.sb3 import make_sb3_vec_env
from maxatar.tape import tape_row
from maxatar.twin import load_twin
from tests.parity import harness
from tests.parity.scripted_random import SeededSource
from tests.parity.test_asterix import AsterixParity
from tests.parity.test_seaquest import SeaquestParity
from tests.parity.test_space_invaders import SpaceInvadersParity

# Per ramping game: the reference's ramp variables (speeds, then its level), and the timers a reset loads with
# the speeds (as the start at a level does), in the reference's names.
RAMPS = {
    "Asterix-v0": (
        ("spawn_speed", "move_speed", "ramp_index"),
        {"spawn_timer": "spawn_speed", "move_timer": "move_speed"},
    ),
    "Seaquest-v0": (("e_spawn_speed", "move_speed", "ramp_index"), {"e_spawn_timer": "e_spawn_speed"}),
    "SpaceInvaders-v0": (
        ("enemy_move_interval", "ramp_index"),
        {"alien_move_timer": "enemy_move_interval"},
    ),
}
MAX_LEVEL = {"Asterix-v0": 9, "Seaquest-v0": 19, "SpaceInvaders-v0": 6}


def reference_ramp(name: str, level: int) -> dict:
    """The reference's ramp variables after it ramps `level` times, by its own code: Asterix ramps when its
    countdown runs out, Seaquest on surfacing, SpaceInvaders when a wave is cleared."""
    ref = minatar.Environment(name.removesuffix("-v0").lower().replace("spaceinvaders", "space_invaders"))
    game = ref.env
    for _ in range(level):
        if name == "Asterix-v0":
            game.ramp_timer = -1
            game.act(0)
        elif name == "Seaquest-v0":
            game._surface()
        else:
            game.alien_map[:] = 0
            game.act(0)
    return {field: int(getattr(game, field)) for field in RAMPS[name][0]}


@functools.cache
def levels_of(name: str):
    """Our start state at every level 0..max (one vmapped reset) as numpy."""
    env, params = maxatar.make(name)
    levels = jnp.arange(env.max_difficulty + 1)
    reset = jax.jit(jax.vmap(lambda level: env.reset(jax.random.key(0), params.replace(difficulty=level))[1]))
    return jax.device_get(reset(levels).game)


@pytest.mark.parametrize("name", list(RAMPS))
def test_levels_are_the_references_ramp(name):
    env, _ = maxatar.make(name)
    assert env.max_difficulty == MAX_LEVEL[name]
    games = levels_of(name)
    fields, timers = RAMPS[name]
    for level in range(env.max_difficulty + 1):
        want = reference_ramp(name, level)
        assert {f: int(getattr(games, f)[level]) for f in fields} == want, level
        for timer, speed in timers.items():
            assert int(getattr(games, timer)[level]) == want[speed]
    # The last level is where the reference's ramp stops.
    assert reference_ramp(name, env.max_difficulty + 1) == reference_ramp(name, env.max_difficulty)
    # The twin's start at every level is the JAX one.
    twin = load_twin(env, env.default_params())
    for level in range(env.max_difficulty + 1):
        got = twin.to_pure(twin.at_difficulty(twin.reset([]), level))
        want = jax.tree.map(lambda a, i=level: a[i], games)
        jax.tree.map(np.testing.assert_array_equal, got, want)


def level_adapter(base):
    """A parity adapter whose crafted start is a difficulty level: the reference gets its own ramp variables
    for that level (`reference_ramp`) and its timers loaded with them; the port starts at that difficulty."""

    class LevelStart(base):
        def apply_start(self, ref, level):
            name = {"asterix": "Asterix-v0", "seaquest": "Seaquest-v0"}.get(self.env.name, "SpaceInvaders-v0")
            ramp = reference_ramp(name, level)
            for field, value in ramp.items():
                setattr(ref.env, field, value)
            for timer, speed in RAMPS[name][1].items():
                setattr(ref.env, timer, ramp[speed])

        def port_start(self, level):
            return self.env.reset_from_draws((), self.env.default_params().replace(difficulty=level))[1]

    return LevelStart()


@pytest.mark.parametrize(
    "base, levels",
    [(AsterixParity, (3, 8)), (SeaquestParity, (5, 19)), (SpaceInvadersParity, (2, 6))],
    ids=["asterix", "seaquest", "space_invaders"],
)
def test_difficulty_plays_as_the_reference_at_that_level(base, levels):
    adapter = level_adapter(base)
    rng = np.random.default_rng(0)
    for level in levels:
        for ramping in (True, False):
            actions = rng.integers(0, 6, 300).tolist()
            episode = harness.play(adapter, SeededSource(level), 0.1, ramping, harness.from_list(actions), 300, level)
            harness.check_parity(adapter, episode)


# --- the pure front end ---


def test_pure_difficulty_is_a_traced_param_that_auto_reset_keeps():
    env, params = maxatar.make("SpaceInvaders-v0", difficulty=4)
    _, state = env.reset(jax.random.key(0), params)
    assert int(state.game.enemy_move_interval) == 8 and int(state.game.ramp_index) == 4
    # vmapped over levels, one program
    reset = jax.jit(jax.vmap(lambda level: env.reset(jax.random.key(0), params.replace(difficulty=level))))
    assert reset(jnp.arange(7))[1].game.enemy_move_interval.tolist() == list(range(12, 5, -1))
    # AutoReset starts every episode at the params' level; a traced level out of range is clipped
    auto = AutoReset(env)
    dead = dataclasses.replace(state, terminated=jnp.bool_(True))
    _, fresh, *_ = jax.jit(auto.step)(jax.random.key(1), dead, 0, params.replace(difficulty=99))
    assert int(fresh.game.ramp_index) == 6 and not bool(fresh.terminated)


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(difficulty=10), "0..9"),
        (dict(difficulty=-1), "0..9"),
        (dict(difficulty=1.0), "integer"),
        (dict(difficulty=True), "integer"),
    ],
)
def test_make_rejects_bad_levels(kwargs, error):
    with pytest.raises((TypeError, ValueError), match=error):
        maxatar.make("Asterix-v0", **kwargs)


@pytest.mark.parametrize("env_id", ["Breakout-v0", "Freeway-v0", "CartPole-v1", "Doors-v0"])
def test_games_without_a_ramp_take_level_zero_only(env_id):
    env, params = maxatar.make(env_id, difficulty=0)
    assert env.max_difficulty == 0 and params.difficulty == 0
    with pytest.raises(ValueError, match="no difficulty ramp"):
        maxatar.make(env_id, difficulty=1)
    with pytest.raises(ValueError, match="no difficulty ramp"):
        gymnasium.make(f"maxatar/{env_id}").reset(options={"difficulty": 1})


def test_gymnax_facade_takes_difficulty():
    env, params = gymnax.make("Seaquest-MinAtar", difficulty=7)
    _, state = env.reset(jax.random.key(0), params)
    assert int(state.game.ramp_index) == 7 and int(state.game.e_spawn_speed) == 13


# --- Gymnasium: a chosen state continues as the pure environment from it ---


def pure_continuation(env, params, state, seed: int, actions) -> list:
    """Observations of the pure environment stepping from `state` with the tape rows a seeded Gymnasium reset
    with that state leaves for the steps (row 0 is the reset's)."""
    key = jax.random.key(seed)
    step = jax.jit(
        lambda s, call, a: env.transition(
            s,
            a,
            env.draws_from_uniforms(tape_row(key, call, (env.num_auto_reset_uniforms,))[: env.num_draws], s, params),
            params,
        )[:2]
    )
    out = []
    for call, action in enumerate(actions, start=1):
        obs, state = step(state, call, action)
        out.append(np.asarray(obs))
    return out


@pytest.mark.parametrize("env_id", ["maxatar/Breakout-v0", "maxatar/Asterix-v0"])
def test_chosen_state_continues_as_the_pure_env(env_id):
    env, params = maxatar.make(env_id)
    twin = TwinEnv(env, params, load_twin(env, params))  # somewhere into an episode, with a sticky action set
    rng = np.random.default_rng(1)
    twin.reset(rng.random(env.num_auto_reset_uniforms).tolist(), fresh=True)
    for t in range(12):
        twin.step(t % env.num_actions, rng.random(env.num_auto_reset_uniforms).tolist())
    state = twin.pure_state()
    actions = [int(a) for a in rng.integers(0, env.num_actions, 40)]
    want = pure_continuation(env, params, state, 9, actions)
    for backend in ("python", "jax"):
        gym_env = gymnasium.make(env_id, backend=backend)
        gym_env.reset(seed=3)
        gym_env.step(0)
        obs, _ = gym_env.reset(seed=9, options={"state": state})
        np.testing.assert_array_equal(obs, np.asarray(env.observation(state)))
        jax.tree.map(np.testing.assert_array_equal, gym_env.unwrapped.state, state)
        for action, expected in zip(actions, want, strict=True):
            np.testing.assert_array_equal(gym_env.step(action)[0], expected, err_msg=backend)


@pytest.mark.parametrize("env_id", maxatar.registered_ids())
def test_twins_load_every_games_states(env_id):
    """`from_pure` inverts `to_pure` for every twin, mid-episode (no JAX involved)."""
    env, params = maxatar.make(env_id)
    twin = TwinEnv(env, params, load_twin(env, params))
    rng = np.random.default_rng(0)
    twin.reset(rng.random(env.num_auto_reset_uniforms).tolist(), fresh=True)
    for _ in range(30):
        twin.step(int(rng.integers(env.num_actions)), rng.random(env.num_auto_reset_uniforms).tolist())
    state = twin.numpy_state()
    copy = TwinEnv(env, params, load_twin(env, params))
    obs = copy.load(state)
    np.testing.assert_array_equal(obs, twin.twin.observation(twin.game))
    jax.tree.map(np.testing.assert_array_equal, copy.numpy_state(), state)
    for _ in range(30):  # and they go on alike
        action, row = int(rng.integers(env.num_actions)), rng.random(env.num_auto_reset_uniforms).tolist()
        a, b = twin.step(action, row), copy.step(action, row)
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1:] == b[1:]


@pytest.mark.parametrize("backend", ["python", "jax"])
def test_gymnasium_difficulty_option_and_errors_leave_the_env_alone(backend):
    env = gymnasium.make("maxatar/Asterix-v0", backend=backend)
    env.reset(seed=0, options={"difficulty": 6})
    game = env.unwrapped.state.game
    assert (int(game.spawn_speed), int(game.move_speed), int(game.ramp_index)) == (4, 2, 6)
    env.step(1)
    before = env.unwrapped.state
    bad = [
        ({"level": 1}, ValueError, "accepted: state, difficulty"),
        ({"difficulty": 10}, ValueError, "0..9"),
        ({"difficulty": [1, 2]}, TypeError, "one integer level"),
        ({"difficulty": 1, "state": before}, ValueError, "not both"),
        ({"state": before.game}, TypeError, "EnvState"),
        ({"state": dataclasses.replace(before, time=np.int64(3))}, TypeError, "dtype"),
        ({"state": dataclasses.replace(before, last_action=np.zeros(2, np.int32))}, TypeError, "shape"),
    ]
    for options, error, match in bad:
        with pytest.raises(error, match=match):
            env.reset(options=options)
        jax.tree.map(np.testing.assert_array_equal, env.unwrapped.state, before)
    env.reset()  # without options: the params' level (0)
    assert int(env.unwrapped.state.game.ramp_index) == 0


@pytest.mark.parametrize("backend", ["python", "jax"])
@pytest.mark.parametrize("kwargs", [dict(difficulty=3), dict(setting="gymnax"), dict(setting="pgx")])
def test_check_env_passes_with_options(backend, kwargs):
    env = gymnasium.make("maxatar/SpaceInvaders-v0", backend=backend, **kwargs)
    check_env(env.unwrapped)
    obs, _ = env.reset(seed=1, options={"difficulty": 5})
    assert env.observation_space.contains(obs)
    obs, _ = env.reset(seed=1, options={"state": env.unwrapped.state})
    assert env.observation_space.contains(obs)


# --- vector and SB3 ---


@pytest.mark.parametrize("backend", ["python", "jax"])
def test_vector_options_apply_to_the_envs_being_reset(backend):
    venv = gymnasium.make_vec("maxatar/SpaceInvaders-v0", num_envs=3, backend=backend, autoreset_mode="Disabled")
    venv.reset(seed=0, options={"difficulty": [0, 3, 6]})
    assert venv.state.game.enemy_move_interval.tolist() == [12, 9, 6]
    venv.step(np.array([1, 1, 1]))
    mask = np.array([True, False, True])
    venv.reset(options={"reset_mask": mask, "difficulty": 2})
    assert venv.state.game.ramp_index.tolist() == [2, 3, 2]
    # a chosen state: one for all, or one per sub-environment
    single = jax.tree.map(lambda a: np.asarray(a)[1], venv.state)
    obs, _ = venv.reset(options={"state": single, "reset_mask": np.array([True, False, False])})
    assert venv.state.game.ramp_index.tolist() == [3, 3, 2]
    np.testing.assert_array_equal(obs[0], obs[1])
    batch = venv.state
    obs, _ = venv.reset(seed=4, options={"state": batch})
    jax.tree.map(np.testing.assert_array_equal, venv.state, batch)
    with pytest.raises(TypeError, match="one level or 3 levels"):
        venv.reset(options={"difficulty": [1, 2]})
    with pytest.raises(ValueError, match="accepted: reset_mask, state, difficulty"):
        venv.reset(options={"seed": 1})
    jax.tree.map(np.testing.assert_array_equal, venv.state, batch)


def test_vector_backends_agree_with_options():
    runs = []
    for backend in ("python", "jax"):
        venv = gymnasium.make_vec("maxatar/Asterix-v0", num_envs=2, backend=backend)
        obs = [venv.reset(seed=2, options={"difficulty": [9, 4]})[0]]
        obs += [venv.step(np.array([t % 5, 3]))[0] for t in range(30)]
        runs.append((np.stack(obs), jax.device_get(venv.state)))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    jax.tree.map(np.testing.assert_array_equal, runs[0][1], runs[1][1])


def test_sb3_set_options():
    venv = make_sb3_vec_env("maxatar/Seaquest-v0", num_envs=2, seed=0)
    venv.set_options({"difficulty": 5})
    venv.reset()
    assert venv.venv.state.game.e_spawn_speed.tolist() == [15, 15]
    venv.set_options([{"difficulty": 19}, {}])  # per sub-environment; the other at the params' level
    venv.reset()
    assert venv.venv.state.game.ramp_index.tolist() == [19, 0]
    venv.reset()  # options apply to one reset only
    assert venv.venv.state.game.ramp_index.tolist() == [0, 0]
    state = jax.tree.map(lambda a: np.asarray(a)[0], venv.venv.state)
    venv.set_options({"state": state})
    venv.reset()
    jax.tree.map(lambda a, b: np.testing.assert_array_equal(a[1], b), venv.venv.state, state)
    venv.set_options([{"state": state}, {}])
    with pytest.raises(ValueError, match="every sub-environment or to none"):
        venv.reset()
    venv.set_options({"mode": 1})
    with pytest.raises(ValueError, match="accepted: state, difficulty"):
        venv.reset()


def test_check_state_broadcasts_one_state_to_a_batch():
    env, params = maxatar.make("Breakout-v0")
    state = env.reset(jax.random.key(0), params)[1]
    batch = check_state(env, state, num_envs=4)
    assert batch.game.bricks.shape == (4,)
