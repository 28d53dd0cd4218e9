"""The multi-game environment (`maxatar.continual`): each game plays exactly as the single game, in a sequence and in
a mixed batch, on both engines; a task switch compiles nothing and runs one game's code; schedules and their
checks on every front end."""

from __future__ import annotations

import functools

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxatar
import maxatar.gymnax
from maxatar.checks import InputError
from maxatar.continual import PRESETS, MixedBatch, Schedule
from maxatar.episode import AutoReset
from maxatar.prng import uniform

CONTINUAL, MULTITASK = "maxatar/MinAtar-Continual-v0", "maxatar/MinAtar-MultiTask-v0"
ALL = ("breakout", "asterix", "freeway", "seaquest", "space_invaders")
STEPS = 120


@pytest.fixture(scope="module")
def union():
    env, params = maxatar.make(CONTINUAL, games=ALL, frames_per_task=STEPS)
    return env, params, jax.jit(AutoReset(env).step)


def single_of(env, k):
    return maxatar.make(f"{type(env.game_envs[k]).__name__}-v0")


@functools.cache
def single_run(single):
    """A single game's AutoReset steps from per-step keys, for a batch of environments (keys (T + 1, N))."""

    def run(keys, actions, params):
        _, state = jax.vmap(single.reset, (0, None))(keys[0], params)

        def step(state, inputs):
            obs, state, reward, terminated, _, _ = jax.vmap(AutoReset(single).step, (0, 0, 0, None))(
                *inputs[:1], state, inputs[1], params
            )
            return state, (obs, reward, terminated)

        return jax.lax.scan(step, state, (keys[1:], actions))[1]

    return jax.jit(run)


def play_single(single, params, keys, actions):
    """Observations, rewards and ends of a batch of single-game episodes from per-step keys (T + 1, N)."""
    return jax.tree.map(np.asarray, single_run(single)(keys, jnp.asarray(actions, jnp.int32), params))


def test_sequence_plays_each_game_exactly(union):
    """The schedule's stages, one after another, each as its single game for the same keys (whole tasks)."""
    env, params, step = union
    rng = np.random.default_rng(0)
    for stage, task in enumerate(env.schedule.stages):
        keys = jax.random.split(jax.random.key(stage), STEPS + 1)
        actions = rng.integers(0, 6, STEPS)
        single, single_params = single_of(env, task)
        want_obs, want_reward, want_terminated = play_single(single, single_params, keys[:, None], actions[:, None])
        task_params = env.task_params(params, stage * env.schedule.frames_per_task)
        obs, state = env.begin_task(uniform(keys[0], (env.num_reset_uniforms,)), task_params)
        channels = single.obs_shape[-1]
        for t, (key, action) in enumerate(zip(keys[1:], actions, strict=True)):
            obs, state, reward, terminated, _, info = step(key, state, action, task_params)
            assert int(info["task_id"]) == task and bool(info["task_boundary"]) == (t == 0)
            np.testing.assert_array_equal(np.asarray(obs)[..., :channels], want_obs[t, 0], err_msg=env.games[task])
            assert not np.asarray(obs)[..., channels:].any()
            assert (float(reward), bool(terminated)) == (want_reward[t, 0], want_terminated[t, 0])


def test_mixed_batch_plays_each_group_exactly():
    env, params = maxatar.make(MULTITASK, games=("seaquest", "breakout", "freeway"))
    num_envs, steps = 5, 40
    batch = MixedBatch(env, num_envs)
    step = jax.jit(batch.step_from_uniforms)
    keys = jax.random.split(jax.random.key(1), (steps + 1, num_envs))
    actions = np.random.default_rng(1).integers(0, 6, (steps, num_envs))
    rows = jax.vmap(jax.vmap(lambda k: uniform(k, (batch.num_uniforms,))))(keys)
    obs, state = batch.reset_from_uniforms(rows[0, :, : env.num_reset_uniforms], params)
    played = []
    for t in range(steps):
        obs, state, reward, terminated, _, _ = step(rows[t + 1], state, jnp.asarray(actions[t]), params)
        played.append((np.asarray(obs), np.asarray(reward), np.asarray(terminated)))
    for task, start, stop in env.groups(num_envs):
        single, single_params = single_of(env, task)
        channels = single.obs_shape[-1]
        want_obs, want_reward, want_terminated = play_single(
            single, single_params, keys[:, start:stop], actions[:, start:stop]
        )
        obs = np.stack([p[0][start:stop] for p in played])
        np.testing.assert_array_equal(obs[..., :channels], want_obs, err_msg=env.games[task])
        np.testing.assert_array_equal(np.stack([p[1][start:stop] for p in played]), want_reward)
        np.testing.assert_array_equal(np.stack([p[2][start:stop] for p in played]), want_terminated)


@pytest.mark.parametrize("env_id, kwargs", [(CONTINUAL, {"task": 1}), (MULTITASK, {})])
def test_both_backends_play_the_same(env_id, kwargs):
    """The Python twins and the jitted step of `make_vec` (and `make`), for the same seed."""
    results = {}
    for backend in ("python", "jax"):
        vec = gymnasium.make_vec(env_id, 6, backend=backend, **kwargs)
        single = gymnasium.make(env_id, backend=backend, **kwargs)
        obs, _ = vec.reset(seed=5)
        one, _ = single.reset(seed=5)
        trace = [obs, one]
        for t in range(60):
            trace.extend(vec.step(np.full(6, t % 6))[:4])
            trace.extend(single.step(t % 6)[:4])
        results[backend] = trace
    for python, jax_out in zip(*results.values(), strict=True):
        np.testing.assert_array_equal(python, jax_out)


def test_gymnasium_single_env_equals_the_single_game():
    """`gymnasium.make` on the union plays the single game's tape: the same seed, the same episode."""
    for task in (0, 2):
        union = gymnasium.make(CONTINUAL, task=task, games=ALL, backend="python")
        single = gymnasium.make(f"maxatar/{type(union.unwrapped.func_env.env.game_envs[task]).__name__}-v0")
        channels = single.observation_space.shape[-1]
        a, _ = union.reset(seed=9)
        b, _ = single.reset(seed=9)
        np.testing.assert_array_equal(a[..., :channels], b)
        for t in range(200):
            ra, rb = union.step(t % 6), single.step(t % 6)
            np.testing.assert_array_equal(ra[0][..., :channels], rb[0])
            assert ra[1:4] == rb[1:4]


def schedule_trace(make, mode=None):
    """Everything a Gymnasium front end returns over three stages of a short schedule (20 frames per task)."""
    single = mode is None
    env = make(CONTINUAL, frames_per_task=20) if single else make(CONTINUAL, 4, frames_per_task=20, autoreset_mode=mode)
    trace = [env.reset(seed=3)[0]]
    for t in range(50 if single else 13):
        if single:
            out = env.step(t % 6)
            if out[2] or out[3]:
                trace.append(env.reset()[0])
        else:
            done = None if mode != "disabled" or t == 0 else trace[-1][2] | trace[-1][3]
            if done is not None and done.any():
                trace.append(env.reset(options={"reset_mask": done})[0])
            out = env.step(np.full(4, t % 6))
        trace.append(out)
    return trace


@pytest.mark.parametrize("mode", [None, "next_step", "same_step", "disabled"])
def test_gymnasium_follows_the_schedule(mode):
    """`gymnasium.make` (mode None) and `make_vec` play the schedule: the step whose frames end a stage is cut
    (truncated), the next task starts at the next reset and its first step says `task_boundary`; both backends
    return the same, infos included."""
    frames = 1 if mode is None else 4
    traces = {}
    for backend in ("python", "jax"):
        make = functools.partial(gymnasium.make if mode is None else gymnasium.make_vec, backend=backend)
        traces[backend] = schedule_trace(make, mode)
    steps = [out for out in traces["python"] if isinstance(out, tuple)]
    tasks = [int(np.ravel(info["task_id"])[0]) for *_, info in steps]
    cut = [t for t, out in enumerate(steps) if np.all(out[3]) and (t + 1) * frames % 20 == 0]
    assert cut == [t for t in range(len(steps)) if (t + 1) * frames % 20 == 0 and (t + 1) * frames < 60]
    assert tasks == [min(t * frames // 20, 2) for t in range(len(steps))]
    boundaries = [t for t, (*_, info) in enumerate(steps) if np.all(info["task_boundary"])]
    assert boundaries == [0, *(t + 1 for t in cut)]
    np.testing.assert_array_equal(steps[0][-1]["legal_action_mask"].reshape(-1, 6)[0], [1, 1, 0, 1, 0, 0])
    for python, jax_out in zip(traces["python"], traces["jax"], strict=True):
        jax.tree.map(np.testing.assert_array_equal, python, jax_out)


def test_a_task_switch_compiles_nothing_and_runs_one_game(union):
    env, params, _ = union
    num_envs = 4

    @jax.jit
    def run(key, params):
        uniforms = jax.random.uniform(key, (num_envs, env.num_reset_uniforms))
        obs, state = env.begin_task(uniforms, params)
        step = jax.vmap(AutoReset(env).step, (0, 0, 0, None))
        return step(jax.random.split(key, num_envs), state, jnp.zeros(num_envs, jnp.int32), params)

    for task in range(len(env.games)):
        jax.block_until_ready(run(jax.random.key(task), params.replace(task=jnp.int32(task))))
    assert run._cache_size() == 1
    # Under vmap the unbatched task keeps the switch a conditional: one game's step runs, not a select of all.
    jaxpr = jax.make_jaxpr(run)(jax.random.key(0), params.replace(task=jnp.int32(0)))
    conds = [eqn for eqn in jaxpr.jaxpr.eqns[0].params["jaxpr"].eqns if eqn.primitive.name == "cond"]
    assert conds and all(len(eqn.params["branches"]) == len(ALL) for eqn in conds)


def test_info_and_actions(union):
    env, params, step = union
    _, state = env.reset(jax.random.key(0), params.replace(task=0))
    info = step(jax.random.key(1), state, 0, params.replace(task=0))[-1]
    np.testing.assert_array_equal(info["legal_action_mask"], [True, True, False, True, False, False])
    # With the minimal sets, an action a game lacks is a no-op: Breakout's "up" moves nothing.
    minimal, minimal_params = maxatar.make(CONTINUAL, games=ALL, full_action_space=False, sticky_action_prob=0.0)
    _, state = minimal.reset(jax.random.key(0), minimal_params)
    up = minimal.step(jax.random.key(1), state, 2, minimal_params)[1]
    noop = minimal.step(jax.random.key(1), state, 0, minimal_params)[1]
    assert jax.tree.all(jax.tree.map(lambda a, b: bool((a == b).all()), up.game, noop.game))


def test_permutation_moves_channels_per_game():
    env, params = maxatar.make(CONTINUAL, games=ALL, permute_seed=3)
    plain, _ = maxatar.make(CONTINUAL, games=ALL)
    assert env.slots != plain.slots and len(set(env.slots[0])) == 4
    obs, _ = env.reset(jax.random.key(0), params)
    base, _ = plain.reset(jax.random.key(0), params)
    np.testing.assert_array_equal(np.asarray(obs)[..., list(env.slots[0])], np.asarray(base)[..., :4])


def test_schedules_and_presets():
    schedule = Schedule(3, 10, cycles=2, shuffle=True, seed=4)
    assert len(schedule.stages) == 6 and sorted(schedule.stages[:3]) == [0, 1, 2] == sorted(schedule.stages[3:])
    assert schedule.stages == Schedule(3, 10, cycles=2, shuffle=True, seed=4).stages
    assert [int(schedule.task_at(f)) for f in (0, 9, 10, 59, 1000)] == [
        schedule.stages[0],
        schedule.stages[0],
        schedule.stages[1],
        schedule.stages[5],
        schedule.stages[5],
    ]
    env, _ = maxatar.make(CONTINUAL, preset="nap")
    assert env.games == PRESETS["nap"].games and env.schedule.total_frames == 100_000_000
    env, _ = maxatar.make(CONTINUAL, preset="c-chain")
    assert env.games == ("space_invaders", "asterix", "seaquest") and env.schedule.stages == (0, 1, 2)


BAD = [
    ({"games": ("pong",)}, "games"),
    ({"games": ()}, "games"),
    ({"games": ("breakout", "breakout")}, "games"),
    ({"frames_per_task": 0}, "frames_per_task"),
    ({"cycles": 0}, "cycles"),
    ({"shuffle": 1}, "shuffle"),
    ({"preset": "atari"}, "preset"),
    ({"layout": "diagonal"}, "layout"),
    ({"task": 3}, "task"),
    ({"difficulty": 1}, "difficulty"),
]


@pytest.mark.parametrize("kwargs, name", BAD)
def test_bad_options_are_refused_on_every_front_end(kwargs, name):
    makers = [
        lambda: maxatar.make(CONTINUAL, **kwargs),
        lambda: gymnasium.make(CONTINUAL, **kwargs),
        lambda: gymnasium.make_vec(CONTINUAL, 2, **kwargs),
        lambda: maxatar.gymnax.make(CONTINUAL, **kwargs),
    ]
    for make in makers:
        with pytest.raises(InputError, match=name):
            make()


def test_semantic_layout_gives_each_role_one_slot():
    """Each role has one slot in every game that has it (the guide's table); each game's channels land in their
    slots, the rest of the union zero."""
    from maxatar.continual import ROLES

    env, params = maxatar.make(CONTINUAL, games=ALL, layout="semantic")
    for game, slots in zip(env.game_envs, env.slots, strict=True):
        assert len(set(slots)) == len(slots)
        for channel, slot in zip(game.looks.channels, slots, strict=True):
            assert channel.role is None or ROLES[slot] == channel.role
    assert sorted(env.slots[3]) == list(range(10))  # Seaquest has all ten roles
    for task in (0, 4):
        single, single_params = single_of(env, task)
        key = jax.random.key(task)
        obs = np.asarray(env.reset(key, params.replace(task=task))[0])
        want = np.asarray(single.reset(key, single_params)[0])
        np.testing.assert_array_equal(obs[..., list(env.slots[task])], want)
        assert not np.delete(obs, list(env.slots[task]), axis=-1).any()
    assert env.slot_names(0)[: ROLES.index("goal") + 1] == ("paddle", "", "", "", "ball", "", "trail", "brick")
