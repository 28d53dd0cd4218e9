"""States and params the pure API, `AutoReset`, `EpisodeStatistics` and the gymnax facade do not step: another
game's state, a dict, None, a batch, a step counter outside its range, batched params where one state is stepped,
and a wrapper around something that is not an `AutoReset`. Each is refused with an `InputError` naming the
parameter (the checks are Python, once per trace under `jit`); the int32 step counter wraps alike on both
Gymnasium backends."""

from __future__ import annotations

import dataclasses

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxatar
from maxatar import gymnax
from maxatar.checks import MAX_TIME, InputError

KEY = jax.random.key(0)
ENV, PARAMS = maxatar.make("Breakout-v0")
AUTO = maxatar.AutoReset(ENV)
STATS = maxatar.EpisodeStatistics(AUTO)
FACADE, FACADE_PARAMS = gymnax.make("Breakout-MinAtar")
STATE = ENV.reset(KEY)[1]
ASTERIX_STATE = maxatar.make("Asterix-v0")[0].reset(KEY)[1]

FOREIGN = {
    "another game's": (ASTERIX_STATE, "EnvState(game=BreakoutState)"),
    "a dict": ({"game": STATE.game}, "EnvState(game=BreakoutState)"),
    "None": (None, "EnvState(game=BreakoutState)"),
    "a batch": (jax.tree.map(lambda x: jnp.stack([x, x]), STATE), "vmap"),
}


def with_env_state(stats_state, env_state):
    return dataclasses.replace(stats_state, env_state=env_state)


CALLERS = {
    "env.step": lambda s: ENV.step(KEY, s, 0),
    "jit(env.step)": lambda s: jax.jit(ENV.step)(KEY, s, 0),
    "env.transition": lambda s: ENV.transition(s, 0, ENV.sample_draws(KEY, STATE, PARAMS)),
    "AutoReset.step": lambda s: AUTO.step(KEY, s, 0),
    "EpisodeStatistics.step": lambda s: STATS.step(KEY, with_env_state(STATS.start(STATE), s), 0),
    "gymnax step": lambda s: FACADE.step(KEY, s, 0, FACADE_PARAMS),
    "gymnax step_env": lambda s: FACADE.step_env(KEY, s, 0),
    "gymnax get_obs": lambda s: FACADE.get_obs(s),
}


@pytest.mark.parametrize("caller", CALLERS)
@pytest.mark.parametrize("kind", FOREIGN)
def test_a_foreign_state_is_refused_naming_it(caller, kind):
    state, said = FOREIGN[kind]
    with pytest.raises(InputError, match="state") as error:
        CALLERS[caller](state)
    assert said in str(error.value)


def test_the_step_counter_is_checked_outside_jit_and_wraps_alike_on_both_backends():
    with pytest.raises(InputError, match=r"state\.time is -5, outside 0\.\.2147483646"):
        ENV.step(KEY, dataclasses.replace(STATE, time=jnp.int32(-5)), 0)
    last = dataclasses.replace(STATE, time=jnp.int32(MAX_TIME))
    full = ENV.step(KEY, last, 0)[1]
    assert full.time == 2**31 - 1
    with pytest.raises(InputError, match="the int32 step counter is full: set max_steps"):
        ENV.step(KEY, full, 0)
    # Under jit nothing can raise: the int32 counter wraps, as the Python backend's counter now does too.
    assert jax.jit(ENV.step)(KEY, full, 0)[1].time == -(2**31)
    times = []
    for backend in ("python", "jax"):
        env = gymnasium.make("maxatar/Breakout-v0", backend=backend)
        env.reset(seed=0, options={"state": last})
        times.append([int((env.step(0), env.unwrapped.state.time)[1]) for _ in range(3)])
    assert times[0] == times[1] == [2**31 - 1, -(2**31), -(2**31) + 1]


def test_the_gymnax_facade_steps_one_set_of_params_and_vmaps_batched_ones():
    batched = FACADE_PARAMS.replace(max_steps_in_episode=jnp.array([5, 6]))
    _, state = FACADE.reset(KEY, FACADE_PARAMS)
    for call in (lambda: FACADE.reset(KEY, batched), lambda: FACADE.step(KEY, state, 0, batched)):
        with pytest.raises(InputError, match="max_steps must be .* one set of params"):
            call()
    keys = jax.random.split(KEY, 2)
    batched = jax.tree.map(lambda x: jnp.stack([x, x]), FACADE_PARAMS).replace(max_steps_in_episode=jnp.array([5, 6]))
    _, states = jax.vmap(FACADE.reset)(keys, batched)
    stepped = jax.vmap(FACADE.step, (0, 0, None, 0))(keys, states, 0, batched)[1]
    np.testing.assert_array_equal(stepped.time, [1, 1])


@pytest.mark.parametrize(
    "wrapped, said",
    [
        (ENV, "wrap it first: EpisodeStatistics(maxatar.AutoReset(env))"),
        (gymnax.make("Breakout-MinAtar", legacy_step_api=True)[0], "got GymnaxEnv"),
        (None, "got NoneType"),
        (3, "got int"),
    ],
    ids=["bare env", "legacy gymnax env", "None", "a number"],
)
def test_episode_statistics_wraps_an_autoreset_only(wrapped, said):
    with pytest.raises(InputError, match="EpisodeStatistics wraps a maxatar.AutoReset") as error:
        maxatar.EpisodeStatistics(wrapped)
    assert said in str(error.value)


def test_episode_statistics_steps_its_own_state_only():
    for state in (STATE, None, {"env_state": STATE}):
        with pytest.raises(InputError, match="state must be the EpisodeStatisticsState"):
            STATS.step(KEY, state, 0)
