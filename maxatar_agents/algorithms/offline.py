"""What an offline agent learns from: a dataset's steps as device arrays, so that a whole offline training
runs under `jit` like the online ones. `maxatar_agents.datasets.load` makes one from a Minari dataset."""

from __future__ import annotations

from typing import NamedTuple

import jax


class Transitions(NamedTuple):
    """Every step of a dataset, episodes one after another in the dataset's order (row t is one step).

    An episode ends on a row where `terminated` (the game ended: no bootstrapping) or `truncated` (a time
    limit: bootstrap from `next_observation`) is true; the next row starts the next episode."""

    observation: jax.Array  # (T, *observation_shape), the environment's dtype (bool for the MinAtar games)
    action: jax.Array  # (T,) int32
    reward: jax.Array  # (T,) float32
    next_observation: jax.Array  # (T, *observation_shape)
    terminated: jax.Array  # (T,) bool
    truncated: jax.Array  # (T,) bool

    @property
    def num_steps(self) -> int:
        return self.action.shape[0]
