"""A2C, the tests' toy agent (tests/test_new_agent.py): the synchronous advantage actor-critic, written as PPO's
program with one epoch of one minibatch per rollout, where the policy ratio is 1 at the update, so the clipped
objective's gradient is the plain policy gradient with GAE advantages. It lives only in the tests, to prove that an
agent is one file and one registry line (`maxatar_agents.register`), as Catch (tests/toy_game/) proves it for a
game."""

from __future__ import annotations

import dataclasses
from typing import Any

from maxatar_agents.algorithms import ppo, program
from maxatar_agents.algorithms.fields import knob

ALGORITHM = "toy_a2c"
TITLE = "A2C (toy)"
DEFAULT_PRESET = "cartpole"


@dataclasses.dataclass(frozen=True)
class Config(ppo.Config):
    """PPO's knobs (`ppo.Config`), with A2C's one pass over each rollout as one minibatch, unclipped values."""

    num_epochs: int = knob(1, "passes over each rollout (A2C: one)")
    num_minibatches: int = knob(1, "minibatches per pass (A2C: the whole rollout)")
    clip_value: bool = knob(False, "A2C's value loss is not clipped")


PRESETS: dict[str, dict[str, Any]] = {
    "cartpole": dict(
        env_id="maxatar/CartPole-v1", total_steps=4_096, log_points=2, num_envs=8, num_steps=16, lr=2.5e-3, hidden=(32,)
    ),
}
SEARCH_SPACE: dict[str, dict[str, Any]] = {"lr": {"low": 1e-4, "high": 1e-2, "log": True}}

make_program = ppo.make_program
make_train = program.make_train_for(make_program)
