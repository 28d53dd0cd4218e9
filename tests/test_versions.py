"""Each environment's behaviour `version` is tied to a recorded trajectory, so dynamics cannot change unnoticed.

`tests/data/trajectories.json` maps every registered id to its class's `version` and the sha256 digest of a
fixed-seed rollout: `STEPS` steps of seeded random actions through `AutoReset` on the default params, hashing
the observations, rewards and termination flags. A change in dynamics changes the digest; it lands only with a
bumped `version` and a new record, made with

    python -m tests.test_versions --record

(digests are those of JAX on CPU, where the tests run). The rollout's keys are raw key data, the same under every
JAX setting, and the digests hold under each setting that could change JAX's random numbers (`JAX_SETTINGS`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import maxatar
from maxatar.episode import AutoReset
from maxatar.prng import threefry2x32
from maxatar.registry import SPECS, env_class, registered_ids

RECORD = Path(__file__).parent / "data" / "trajectories.json"
RECORD_COMMAND = "python -m tests.test_versions --record"
STEPS = 500
SEED = 0
IDS = [name for name, spec in SPECS.items() if spec.obs_type is None]  # the variants add no dynamics of their own
assert len(IDS) == len(registered_ids())


# Settings that change `jax.random`'s numbers for the same key data (JAX < 0.5's split, rbg keys) or its types.
JAX_SETTINGS = {
    "jax_threefry_partitionable=False": {"jax_threefry_partitionable": False},
    "jax_enable_x64=True": {"jax_enable_x64": True},
    "jax_default_prng_impl=rbg": {"jax_default_prng_impl": "rbg"},
    "jax_default_prng_impl=unsafe_rbg": {"jax_default_prng_impl": "unsafe_rbg"},
}


@contextlib.contextmanager
def jax_settings(**settings):
    """JAX's configuration with `settings` changed, restored afterwards."""
    before = {name: getattr(jax.config, name) for name in settings}
    try:
        for name, value in settings.items():
            jax.config.update(name, value)
        yield
    finally:
        for name, value in before.items():
            jax.config.update(name, value)


def split_words(words: np.ndarray, n: int) -> np.ndarray:
    """The (n, 2) raw data of `jax.random.split(key, n)` for the threefry key of `words` under JAX's default
    (partitionable) threefry: key i hashes the counter pair (0, i). Computed here, it is the same data under
    every setting, where JAX's own split is not."""
    with np.errstate(over="ignore"):
        return np.stack(threefry2x32(words[0], words[1], np.zeros(n, np.uint32), np.arange(n, dtype=np.uint32)), 1)


def rollout_keys() -> tuple[jax.Array, jax.Array]:
    """The reset key and the step keys, `jax.random.split(jax.random.key(SEED))` and `split(step_key, STEPS)`, as
    keys of JAX's default implementation holding the same raw data (an rbg key repeats a threefry key's words, as
    `jax.random.key(seed)` does)."""
    reset_words, step_words = split_words(np.array([0, SEED], np.uint32), 2)
    words = np.concatenate([reset_words[None], split_words(step_words, STEPS)])
    impl = jax.config.jax_default_prng_impl
    keys = jax.random.wrap_key_data(np.tile(words, 2) if impl != "threefry2x32" else words, impl=impl)
    return keys[0], keys[1:]


def rollout_digest(env_id: str) -> str:
    """sha256 of the first observation, then every step's observation, reward, terminated and truncated flags."""
    env, params = maxatar.make(env_id)
    stepper = AutoReset(env)
    reset_key, step_keys = rollout_keys()
    actions = np.random.default_rng(SEED).integers(0, env.num_actions, STEPS).astype(np.int32)

    @jax.jit
    def run(reset_key, keys, actions):
        obs, state = env.reset(reset_key, params)

        def body(state, xs):
            key, action = xs
            obs, state, reward, terminated, truncated, _ = stepper.step(key, state, action, params)
            return state, (obs, reward, terminated, truncated)

        return obs, jax.lax.scan(body, state, (keys, actions))[1]

    first, steps = run(reset_key, step_keys, actions)
    digest = hashlib.sha256()
    for leaf in (first, *steps):
        leaf = np.asarray(leaf)
        digest.update(f"{leaf.dtype}{leaf.shape}".encode())
        digest.update(leaf.tobytes())
    return digest.hexdigest()


def current(env_id: str) -> dict:
    return {"version": env_class(env_id).version, "sha256": rollout_digest(env_id)}


def test_every_id_is_recorded():
    recorded = json.loads(RECORD.read_text())
    assert sorted(recorded) == sorted(IDS), f"recorded ids differ from the registry: re-record with {RECORD_COMMAND}"


@pytest.mark.parametrize("env_id", IDS)
def test_trajectory_matches_its_version(env_id):
    recorded = json.loads(RECORD.read_text()).get(env_id)
    now = current(env_id)
    if recorded is None:
        pytest.fail(f"{env_id} has no recorded trajectory: record it with {RECORD_COMMAND}")
    if now["sha256"] != recorded["sha256"] and now["version"] == recorded["version"]:
        pytest.fail(
            f"dynamics of {env_id} changed: bump {env_class(env_id).__name__}.version "
            f"(now {now['version']}) and re-record with {RECORD_COMMAND}"
        )
    if now != recorded:
        pytest.fail(f"{env_id}: version {now['version']} is not the recorded one: re-record with {RECORD_COMMAND}")


def test_rollout_keys_are_jax_random_split():
    """Under partitionable threefry (JAX's default from 0.5; JAX 0.4's is the other)."""
    reset_key, step_keys = rollout_keys()
    with jax_settings(jax_threefry_partitionable=True):
        expected_reset, expected_step = jax.random.split(jax.random.key(SEED))
        expected = jax.random.key_data(jax.random.split(expected_step, STEPS))
    assert jax.random.key_data(reset_key).tolist() == jax.random.key_data(expected_reset).tolist()
    assert jax.random.key_data(step_keys).tolist() == expected.tolist()


@pytest.mark.parametrize("setting", JAX_SETTINGS)
def test_trajectories_hold_under_every_jax_setting(setting):
    """The same key data and actions play the same episodes whatever JAX's configuration (before, JAX < 0.5's
    threefry, the default up to 0.4.x, and rbg keys changed every game): each draw hashes the key's words
    with MaxAtar's own threefry (`maxatar.prng.key_words`)."""
    recorded = json.loads(RECORD.read_text())
    with jax_settings(**JAX_SETTINGS[setting]):
        changed = [env_id for env_id in IDS if rollout_digest(env_id) != recorded[env_id]["sha256"]]
    assert not changed, f"under {setting} these ids play other episodes: {changed}"


def record() -> None:
    RECORD.parent.mkdir(exist_ok=True)
    RECORD.write_text(json.dumps({env_id: current(env_id) for env_id in IDS}, indent=2) + "\n")
    print(f"wrote {RECORD}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit(f"usage: {RECORD_COMMAND}")
    record()
