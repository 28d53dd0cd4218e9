"""`maxatar.gymnax`: gymnax's API over the pure environments, checked with a PureJaxRL-style rollout.

One jitted program rolls out Breakout-MinAtar and CartPole-v1 (8 environments, 64 steps each, vmap inside
`lax.scan`, params traced, time limits below 64 steps) three times with the same keys: through the facade
(gymnax 1.x's API), through its `legacy_step_api` mode (0.0.x's) and through `maxatar.AutoReset`, so the facade
is shown to be AutoReset itself, not merely shaped like it. The rest needs no compilation or only CartPole's
small one. gymnax's own wrappers on the facade: tests/test_gymnax_wrappers.py.
"""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxatar
from maxatar import gymnax
from maxatar.episode import AutoReset

N, T = 8, 64
LIMITS = {"breakout": 12, "cartpole": 24}  # below T, so time-limit truncations happen alongside terminations


def rollout(env, params, key, autoreset=None):
    """PureJaxRL's rollout shape: reset a batch, then scan vmapped steps with random actions. With
    `autoreset`, step through that `AutoReset` (MaxAtar's six values) instead of the facade's `step`. Each
    step records (obs, state, action, reward, (terminated, truncated, done, discount), final observation);
    the legacy API has no final observation (its `obs` stands in)."""
    key, k_reset = jax.random.split(key)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(k_reset, N), params)
    step = jax.vmap(env.step if autoreset is None else autoreset.step, in_axes=(0, 0, 0, None))

    def body(carry, key):
        obs, state = carry
        k_act, k_step = jax.random.split(key)
        action = jax.vmap(env.action_space(params).sample)(jax.random.split(k_act, N))
        out = step(jax.random.split(k_step, N), state, action, params)
        if autoreset is None and env.legacy_step_api:
            obs, state, reward, done, info = out
            flags, final = (info["terminated"], info["truncated"], done, info["discount"]), obs
        else:
            obs, state, reward, term, trunc, info = out
            final = info["final_obs"] if autoreset is not None else info["final_observation"]
            discount = 1.0 - term.astype(jnp.float32) if autoreset is not None else info["discount"]
            flags = (term, trunc, term | trunc, discount)
        return (obs, state), (obs, state, action, reward, flags, final)

    _, trajectory = jax.lax.scan(body, (obs, state), jax.random.split(key, T))
    return (obs, state), trajectory


BREAKOUT, BREAKOUT_PARAMS = gymnax.make("Breakout-MinAtar", max_steps_in_episode=LIMITS["breakout"])
CARTPOLE, CARTPOLE_PARAMS = gymnax.make("CartPole-v1", max_steps_in_episode=LIMITS["cartpole"])
ENVS = {"breakout": BREAKOUT, "cartpole": CARTPOLE}
LEGACY = {name: gymnax.make(env.name, legacy_step_api=True)[0] for name, env in ENVS.items()}


@jax.jit
def run_all(key, breakout_params, cartpole_params):
    """Both games, facade, legacy facade and AutoReset, in one compiled program (params are traced arguments)."""
    out = {}
    for name, params in (("breakout", breakout_params), ("cartpole", cartpole_params)):
        env = ENVS[name]
        out[name] = rollout(env, params, key)
        out[name + "_legacy"] = rollout(LEGACY[name], params, key)
        out[name + "_auto"] = rollout(env, params, key, AutoReset(env.env, final_obs=True))
        # The observations a fresh episode can start from (Breakout: ball left or right).
        out[name + "_fresh"] = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(key, 64), params)[0]
    # CartPole's steps taken again without the reset, each from the state before it (its dynamics draw nothing
    # and it has no sticky actions): what each step reached, so the final observation can be checked against it.
    (_, start), (_, states, actions, *_) = out["cartpole"]
    before = jax.tree.map(lambda s0, s: jnp.concatenate([s0[None], s[:-1]]), start, states)
    step_env = jax.vmap(CARTPOLE.step_env, in_axes=(None, 0, 0, None))
    out["cartpole_reached"] = jax.vmap(step_env, in_axes=(None, 0, 0, None))(key, before, actions, cartpole_params)[0]
    return out


@pytest.fixture(scope="module")
def results():
    return jax.device_get(run_all(jax.random.key(0), BREAKOUT_PARAMS, CARTPOLE_PARAMS))


@pytest.mark.parametrize("name", ["breakout", "cartpole"])
def test_rollout_shapes_and_dtypes(results, name):
    env = ENVS[name]
    (first_obs, _), (obs, state, action, reward, (term, trunc, done, discount), final) = results[name]
    space = env.observation_space(env.default_params)
    assert first_obs.shape == (N, *space.shape) and first_obs.dtype == space.dtype
    for o in (obs, final):
        assert o.shape == (T, N, *space.shape) and o.dtype == space.dtype
    assert action.shape == (T, N) and action.dtype == jnp.int32
    assert reward.shape == (T, N) and reward.dtype == jnp.float32
    for flag in (term, trunc, done):
        assert flag.shape == (T, N) and flag.dtype == jnp.bool_
    assert discount.dtype == jnp.float32
    np.testing.assert_array_equal(done, term | trunc)
    np.testing.assert_array_equal(discount, 1.0 - term)  # gymnax 1.x: a time limit is no end of the game
    assert ((action >= 0) & (action < env.num_actions)).all() and len(np.unique(action)) == env.num_actions


@pytest.mark.parametrize("name", ["breakout", "cartpole"])
def test_step_is_autoreset_exactly(results, name):
    """Same keys, same everything: observations, states, rewards, flags and final observations, bit for bit."""
    facade, auto = results[name], results[name + "_auto"]
    for a, b in zip(jax.tree.leaves(facade), jax.tree.leaves(auto), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["breakout", "cartpole"])
def test_legacy_step_api_is_the_same_step_with_done(results, name):
    """gymnax 0.0.x's API: the same steps, one `done` flag, `discount = 1 - done`, no final observation."""
    start, (obs, state, action, reward, (term, trunc, done, discount), _) = results[name]
    legacy_start, (*legacy, (l_term, l_trunc, l_done, l_discount), _) = results[name + "_legacy"]
    for a, b in zip(
        jax.tree.leaves((start, obs, state, action, reward, term, trunc)),
        jax.tree.leaves((legacy_start, *legacy, l_term, l_trunc)),
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(l_done, term | trunc)
    np.testing.assert_array_equal(l_discount, 1.0 - l_done)


@pytest.mark.parametrize("name", ["breakout", "cartpole"])
def test_done_episodes_reset_in_the_same_step(results, name):
    env = ENVS[name]
    _, (obs, state, _, reward, (term, trunc, done, _), final) = results[name]
    assert term.any(), "the rollout should contain terminations"
    assert (trunc & ~term).any(), "the rollout should contain time-limit truncations"
    assert (state.time <= LIMITS[name]).all()
    # A done step returns the next episode's first state and observation.
    assert (state.time[done] == 0).all() and not state.terminated[done].any()
    assert (state.time[~done] > 0).all()
    fresh = {o.tobytes() for o in results[name + "_fresh"]}
    if name == "breakout":
        assert len(fresh) == 2  # the ball starts on the left or the right
        assert all(o.tobytes() in fresh for o in obs[done])
    else:
        assert (np.abs(obs[done]) <= 0.05).all()  # CartPole starts uniformly in [-0.05, 0.05]
    np.testing.assert_array_equal(obs, jax.vmap(jax.vmap(env.get_obs))(state))
    # The final observation is the step's own: the new episode's where none ended, the old one's last where one did.
    np.testing.assert_array_equal(final[~done], obs[~done])
    assert all(a.tobytes() != b.tobytes() for a, b in zip(final[done], obs[done], strict=True))


def test_final_observation_is_the_episodes_last(results):
    """CartPole's steps taken again without auto-reset reach exactly the final observations, also at the time
    limit and at the pole's fall, where the returned observation is already the next episode's."""
    _, (_, _, _, _, (term, trunc, _, _), final) = results["cartpole"]
    assert (trunc & ~term).any() and term.any()
    np.testing.assert_array_equal(final, results["cartpole_reached"])


def test_names_action_sets_and_defaults():
    env, params = gymnax.make("Breakout-MinAtar")
    assert env.name == "Breakout-MinAtar" and env.default_params is params
    assert env.num_actions == 6 and env.action_space(params).n == 6  # MinAtar's full set by default
    assert params.sticky_action_prob == pytest.approx(0.1) and params.difficulty_ramping and params.max_steps == 0
    assert env.observation_space(params).shape == (10, 10, 4) and env.obs_shape == (10, 10, 4)

    minimal, params = gymnax.make("Breakout-MinAtar", use_minimal_action_set=True)
    assert minimal.num_actions == 3 and minimal.action_space().n == 3 and minimal.env.action_set == (0, 1, 3)
    assert minimal != env and gymnax.make("Breakout-MinAtar")[0] == env
    env, params = gymnax.make("Breakout-MinAtar", **gymnax.GYMNAX_SETTINGS["Breakout-MinAtar"])
    assert (env.num_actions, params.sticky_action_prob, params.max_steps) == (3, 0.0, 1000)
    assert gymnax.make("Breakout-MinAtar", max_steps=7)[1].max_steps == 7

    for gymnax_id, n_actions in [("Asterix-MinAtar", 5), ("Freeway-MinAtar", 3), ("SpaceInvaders-MinAtar", 4)]:
        assert gymnax.make(gymnax_id)[0].num_actions == 6
        assert gymnax.make(gymnax_id, use_minimal_action_set=True)[0].num_actions == n_actions
    seaquest, params = gymnax.make("Seaquest-MinAtar")
    assert seaquest.observation_space(params).shape == (10, 10, 10) and params.sticky_action_prob == pytest.approx(0.1)

    cartpole, params = gymnax.make("CartPole-v1")
    assert cartpole.num_actions == 2 and params.sticky_action_prob == 0.0 and params.max_steps == 500
    assert gymnax.make("maxatar/Breakout-v0")[0].name == "maxatar/Breakout-v0"
    assert gymnax.make("maxatar/Doors-v0", size=5)[0].observation_space().shape == (25,)
    flat, params = gymnax.make("maxatar/Breakout-flat-v0")  # any id maxatar.make takes: the variants too
    assert flat.name == "maxatar/Breakout-flat-v0" and flat.observation_space(params).shape == (400,)


def test_bad_ids_and_keywords_raise_clearly():
    with pytest.raises(ValueError, match=r"unknown environment id 'Pong-misc'.*Breakout-MinAtar.*maxatar/Doors-v0"):
        gymnax.make("Pong-misc")
    with pytest.raises(ValueError, match="unknown environment id"):
        gymnax.make("Breakout-v1")
    with pytest.raises(TypeError, match="not both"):
        gymnax.make("Breakout-MinAtar", max_steps=5, max_steps_in_episode=5)
    with pytest.raises(TypeError, match="use_minimal_action_set"):
        gymnax.make("Breakout-MinAtar", use_minimal_action_set="yes")
    with pytest.raises(ValueError, match="single action set"):
        gymnax.make("CartPole-v1", use_minimal_action_set=True)
    with pytest.raises(ValueError, match="sticky_action_prob"):
        gymnax.make("Breakout-MinAtar", sticky_action_prob=1.5)


def test_spaces_sample_and_contains():
    keys = jax.random.split(jax.random.key(1), 256)
    envs = [gymnax.make(env_id) for env_id in ("Breakout-MinAtar", "CartPole-v1", "maxatar/Doors-v0")]
    discrete, boxes = gymnax.Discrete(3), [env.observation_space(params) for env, params in envs]

    @jax.jit
    def sample_and_check(keys):  # one small compilation: eager vmapped sampling dispatches op by op
        actions = jax.vmap(discrete.sample)(keys)
        samples = [jax.vmap(box.sample)(keys[:16]) for box in boxes]
        inside = [jax.vmap(box.contains)(x) for box, x in zip(boxes, samples, strict=True)]
        starts = [box.contains(env.reset(keys[0], params)[0]) for box, (env, params) in zip(boxes, envs, strict=True)]
        return actions, jax.vmap(discrete.contains)(actions), samples, inside, starts

    actions, actions_inside, samples, inside, starts = sample_and_check(keys)
    assert all(starts)
    assert actions.dtype == jnp.int32 and set(np.unique(actions).tolist()) == {0, 1, 2} and actions_inside.all()
    assert [bool(discrete.contains(x)) for x in (0, 2, 3, -1, 1.5, 1.0)] == [True, True, False, False, False, True]
    assert not discrete.contains(jnp.zeros(2, jnp.int32))  # a batch is not an element

    for box, x, ok in zip(boxes, samples, inside, strict=True):
        assert x.shape == (16, *box.shape) and x.dtype == box.dtype
        assert ok.all() and np.isfinite(np.asarray(x, np.float32)).all()
        assert len(np.unique(np.asarray(x))) > 1
        assert not box.contains(x)  # wrong shape
    box = boxes[1]
    assert not box.contains(jnp.array([5.0, 0.0, 0.0, 0.0])) and not box.contains(jnp.array([jnp.nan, 0, 0, 0]))
    assert box.contains(jnp.array([4.8, 1e30, -0.4, -1e30]))


def test_eager_calls_step_env_and_helpers():
    """Eager use, as in an evaluation loop: jitted inside, bad actions raise, step_env never resets."""
    env, params = CARTPOLE, CARTPOLE_PARAMS
    obs, state = env.reset(jax.random.key(3))  # params=None means the defaults
    with pytest.raises(ValueError, match="outside"):
        env.step(jax.random.key(0), state, 2, params)
    with pytest.raises(TypeError, match="integer"):
        env.step_env(jax.random.key(0), state, 0.5, params)
    key = jax.random.key(4)
    for _ in range(200):
        key, k = jax.random.split(key)
        obs, state, reward, terminated, info = env.step_env(k, state, 1, params)  # always push right: falls soon
        assert bool(env.is_terminal(state, params)) == bool(env.is_terminated(state)) == bool(terminated)
        assert float(env.discount(state, params)) == float(info["discount"]) == 1.0 - bool(terminated)
        if terminated:
            break
    assert terminated and info["terminated"] and not info["truncated"] and reward == 1.0
    obs, state, reward, terminated, info = env.step_env(key, state, 0, params)  # no auto-reset: stays terminated
    assert terminated and reward == 0.0 and state.terminated and state.time > 1
    np.testing.assert_array_equal(obs, env.get_obs(state))

    # The time limit (24 steps; pushing left and right in turn keeps the pole up): truncated, not terminated, and
    # the discount stays 1 (gymnax 1.x); the legacy API reports it as done, with discount 0 (0.0.x).
    _, state = env.reset(jax.random.key(5))
    legacy = LEGACY["cartpole"]
    for t in range(LIMITS["cartpole"]):
        outs = [facade.step_env(jax.random.key(t), state, t % 2, params) for facade in (env, legacy)]
        state = outs[0][1]
    (_, _, _, terminated, info), (_, _, _, done, legacy_info) = outs
    assert info["truncated"] and not terminated and info["discount"] == 1.0 and not env.is_terminal(state)
    assert done and legacy_info["truncated"] and legacy_info["discount"] == 0.0


def test_params_answer_to_gymnax_names():
    """gymnax's `max_steps_in_episode`, read and replaced, beside MaxAtar's `max_steps`; still MaxAtar params."""
    params = CARTPOLE_PARAMS
    assert isinstance(params, maxatar.EnvParams) and params.max_steps_in_episode == params.max_steps == 24
    shorter = params.replace(max_steps_in_episode=2)
    assert type(shorter) is type(params) and (shorter.max_steps, shorter.max_steps_in_episode) == (2, 2)
    assert params.replace(max_steps=3, sticky_action_prob=0.5).max_steps_in_episode == 3
    with pytest.raises(TypeError, match="not both"):
        params.replace(max_steps=3, max_steps_in_episode=3)
    assert jax.tree.leaves(params) == jax.tree.leaves(maxatar.make("maxatar/CartPole-v1", max_steps=24)[1])
    doors = gymnax.make("maxatar/Doors-v0", size=5, max_steps_in_episode=9)[1]
    assert isinstance(doors, gymnax.params_class(type(doors).maxatar_class)) and doors.max_steps_in_episode == 9
    # The replaced time limit is the one the environment keeps.
    _, state = CARTPOLE.reset(jax.random.key(0), shorter)
    for t in range(2):
        _, state, _, terminated, truncated, _ = CARTPOLE.step(jax.random.key(t), state, t % 2, shorter)
    assert truncated and not terminated and state.time == 0  # reset in the same step
    with pytest.raises(TypeError, match="legacy_step_api"):
        gymnax.make("CartPole-v1", legacy_step_api="yes")


def test_envs_params_and_wrappers_copy_and_pickle():
    """Copies and pickles equal the original (so a static jit argument stays the same) and still run."""
    env, params = gymnax.make("CartPole-v1")
    auto = AutoReset(env.env)
    stats = maxatar.EpisodeStatistics(auto)
    for thing in (env, LEGACY["cartpole"], params, auto, stats, env.observation_space(params), env.action_space()):
        for copied in (copy.copy(thing), copy.deepcopy(thing), pickle.loads(pickle.dumps(thing))):
            assert type(copied) is type(thing)
            if not isinstance(thing, (gymnax.Box, gymnax.Discrete)):
                assert copied == thing and hash(copied) == hash(thing)
    assert pickle.loads(pickle.dumps(auto)).num_actions == 2  # forwarding works again once rebuilt
    copied = pickle.loads(pickle.dumps(env))
    key = jax.random.key(0)
    np.testing.assert_array_equal(copied.reset(key, params)[0], env.reset(key, params)[0])


def test_the_facade_works_without_gymnax():
    """Where gymnax cannot be imported, the facade's spaces are its own and everything else is unchanged."""
    code = (
        "import sys; sys.modules['gymnax'] = None\n"
        "import jax\n"
        "from maxatar import gymnax\n"
        "env, params = gymnax.make('CartPole-v1')\n"
        "assert type(gymnax.Box).__name__ == 'type' and gymnax.Box.__mro__[1] is object\n"
        "obs, state = env.reset(jax.random.key(0), params)\n"
        "assert len(env.step(jax.random.key(1), state, 1, params)) == 6\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)
