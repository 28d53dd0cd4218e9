"""`maxatar.prng.uniform` is `jax.random.uniform` (JAX's default threefry), bit for bit, under every JAX setting."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import maxatar
from maxatar.checks import InputError
from maxatar.episode import AutoReset
from maxatar.prng import uniform
from tests.tiers import examples

SHAPES = [(), (0,), (1,), (2,), (5,), (17,), (3, 7), (64, 33), (4096, 5), (2, 3, 4), (1, 1, 1, 9)]


def assert_same_bits(a, b):
    assert a.dtype == b.dtype == jnp.float32 and a.shape == b.shape
    np.testing.assert_array_equal(np.asarray(a).view(np.uint32), np.asarray(b).view(np.uint32))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kind", ["raw", "typed"])
def test_uniform_equals_jax_random_uniform_over_many_keys(shape, kind):
    """500 keys per shape (split from one seed, so all key words vary), eager and under jit and vmap."""
    keys = jax.random.split(jax.random.key(len(shape) * 1000 + sum(shape)), 500)
    keys = jax.random.key_data(keys) if kind == "raw" else keys
    ours = jax.jit(jax.vmap(lambda k: uniform(k, shape)))(keys)
    theirs = jax.jit(jax.vmap(lambda k: jax.random.uniform(k, shape)))(keys)
    assert_same_bits(ours, theirs)
    assert_same_bits(uniform(keys[7], shape), jax.random.uniform(keys[7], shape))


@settings(max_examples=examples(60))
@given(
    words=st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)),
    shape=st.lists(st.integers(0, 40), min_size=0, max_size=3).map(tuple),
)
def test_uniform_equals_jax_random_uniform_for_any_key_words(words, shape):
    """Any key data (extreme words included), any small shape."""
    raw = jnp.asarray(words, jnp.uint32)
    typed = jax.random.wrap_key_data(raw)
    expected = jax.random.uniform(typed, shape)
    assert_same_bits(jax.jit(uniform, static_argnums=1)(raw, shape), expected)
    assert_same_bits(jax.jit(uniform, static_argnums=1)(typed, shape), expected)


@pytest.mark.parametrize("impl", ["rbg", "unsafe_rbg"])
def test_rbg_keys_draw_the_numbers_of_the_threefry_key_of_their_seed(impl):
    """An rbg or unsafe_rbg key stands for the threefry key in its first two words, which `jax.random.key(seed)`
    fills with the threefry key of the seed: the same seed draws the same numbers, typed or raw."""
    expected = jax.random.uniform(jax.random.key(3, impl="threefry2x32"), (4, 5))
    key = jax.random.key(3, impl=impl)
    assert_same_bits(uniform(key, (4, 5)), expected)
    assert_same_bits(jax.jit(uniform, static_argnums=1)(jax.random.key_data(key), (4, 5)), expected)


def test_keys_of_another_implementation_are_refused():
    from jax.extend.random import define_prng_impl

    def split(key, shape):
        return jnp.broadcast_to(key, (*shape, 2))

    toy = define_prng_impl(
        key_shape=(2,),
        seed=lambda s: jnp.stack([s, s]).astype(jnp.uint32),
        split=split,
        random_bits=lambda key, width, shape: jnp.zeros(shape, jnp.uint32),
        fold_in=lambda key, d: key,
        name="toy",
        tag="toy",
    )
    env, params = maxatar.make("Breakout-v0")
    with pytest.raises(InputError, match="key must be a key of one of threefry2x32, rbg, unsafe_rbg, got a toy key"):
        env.reset(jax.random.key(0, impl=toy), params)


@pytest.mark.parametrize("setting", [("jax_threefry_partitionable", False), ("jax_enable_x64", True)])
def test_no_jax_setting_changes_the_numbers(setting):
    """JAX < 0.5's threefry (`jax_threefry_partitionable=False`) gives other `jax.random.uniform` numbers for
    the same key; `uniform` hashes the key's words itself, so its numbers stay those of JAX's default."""
    keys = jax.random.split(jax.random.key(5), 50)
    expected = jax.vmap(lambda k: jax.random.uniform(k, (3, 7)))(keys)
    name, value = setting
    before = getattr(jax.config, name)
    jax.config.update(name, value)
    try:
        ours = jax.jit(jax.vmap(lambda k: uniform(k, (3, 7))))(keys)
    finally:
        jax.config.update(name, before)
    assert_same_bits(ours, expected)


@pytest.mark.parametrize("env_id", maxatar.registered_ids())
def test_steps_draw_what_jax_random_uniform_draws(env_id):
    """`sample_draws`, `sample_reset_draws` and `AutoReset.step` consume the uniforms `jax.random.uniform` gives
    for their key, so a seed gives the same trajectory as with `jax.random.uniform` itself."""
    env, params = maxatar.make(env_id)
    auto = AutoReset(env)
    key = jax.random.key(11)
    _, state = env.reset(key, params)
    draws = env.sample_draws(key, state, params)
    expected = env.draws_from_uniforms(jax.random.uniform(key, (env.num_draws,)), state, params)
    jax.tree.map(lambda a, b: np.testing.assert_array_equal(a, b), draws, expected)
    reset = env.sample_reset_draws(key, params)
    expected_reset = env.reset_draws(jax.random.uniform(key, (env.num_reset_uniforms,)), params)
    jax.tree.map(lambda a, b: np.testing.assert_array_equal(a, b), reset, expected_reset)
    out = auto.step(key, state, 0, params)
    expected_out = auto.step_from_uniforms(jax.random.uniform(key, (auto.num_uniforms,)), state, 0, params)
    jax.tree.map(lambda a, b: np.testing.assert_array_equal(a, b), out, expected_out)


def test_freeway_speed_and_direction_from_one_uniform_are_independent():
    """Freeway draws one uniform per car: over every float32 value `jax.random.uniform` can give (the 2**23
    multiples of 2**-23), the signed speed is uniform in sign and in speed 1..5, the two independent, apart
    from u = 0.5 exactly (sign 0, as the reference's sign(u - 0.5))."""
    env, params = maxatar.make("Freeway-v0")
    grid = np.arange(2**23, dtype=np.float32) * np.float32(2**-23)
    draws = jax.jit(lambda u: env.reset_draws(u, params))(jnp.asarray(grid))
    speeds, directions = np.asarray(draws.speeds), np.asarray(draws.directions)
    np.testing.assert_array_equal(directions, grid)
    sign = np.sign(directions.astype(np.float64) - 0.5)
    assert (sign == 0).sum() == 1
    counts = np.array([np.bincount(speeds[sign == s], minlength=6)[1:] for s in (-1, 1)])
    # 2**22 values per sign, split over 5 speeds as evenly as the grid allows; the sign-0 value takes one.
    assert counts.min() >= 2**22 // 5 - 1 and counts.max() <= 2**22 // 5 + 1, counts
