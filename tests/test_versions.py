"""Each environment's behaviour `version` is tied to a recorded trajectory, so dynamics cannot change unnoticed.

`tests/data/trajectories.json` maps every registered id to its class's `version` and the sha256 digest of a
fixed-seed rollout: `STEPS` steps of seeded random actions through `AutoReset` on the default params, hashing
the observations, rewards and termination flags. A change in dynamics changes the digest; it lands only with a
bumped `version` and a new record, made with

    python -m tests.test_versions --record

(digests are those of JAX on CPU, where the tests run).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import maxatar
from maxatar.episode import AutoReset
from maxatar.registry import SPECS, env_class, registered_ids

RECORD = Path(__file__).parent / "data" / "trajectories.json"
RECORD_COMMAND = "python -m tests.test_versions --record"
STEPS = 500
SEED = 0
IDS = [name for name, spec in SPECS.items() if spec.obs_type is None]  # the variants add no dynamics of their own
assert len(IDS) == len(registered_ids())


def rollout_digest(env_id: str) -> str:
    """sha256 of the first observation, then every step's observation, reward, terminated and truncated flags."""
    env, params = maxatar.make(env_id)
    stepper = AutoReset(env)
    reset_key, step_key = jax.random.split(jax.random.key(SEED))
    actions = np.random.default_rng(SEED).integers(0, env.num_actions, STEPS).astype(np.int32)

    @jax.jit
    def run(reset_key, keys, actions):
        obs, state = env.reset(reset_key, params)

        def body(state, xs):
            key, action = xs
            obs, state, reward, terminated, truncated, _ = stepper.step(key, state, action, params)
            return state, (obs, reward, terminated, truncated)

        return obs, jax.lax.scan(body, state, (keys, actions))[1]

    first, steps = run(reset_key, jax.random.split(step_key, STEPS), actions)
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


def record() -> None:
    RECORD.parent.mkdir(exist_ok=True)
    RECORD.write_text(json.dumps({env_id: current(env_id) for env_id in IDS}, indent=2) + "\n")
    print(f"wrote {RECORD}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit(f"usage: {RECORD_COMMAND}")
    record()
