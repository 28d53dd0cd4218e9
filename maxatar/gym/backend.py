"""What both Gymnasium classes choose alike: the backend (the Python twins or one jitted call), the output
kind, the render plugin, and the seed of a new tape."""

from __future__ import annotations

import numpy as np

from maxatar.checks import InputError, check_choice
from maxatar.core import (
    Environment,
    EnvParams,
)
from maxatar.twin import Twin, load_twin

OUTPUTS = ("numpy", "jax")
BACKENDS = ("auto", "python", "jax")
# "auto" steps at most this many sub-environments with the Python twins: above it, one jitted call for all
# of them costs less than stepping them one by one (measured by `python -m benchmarks.clients`).
PYTHON_MAX_ENVS = 32
RENDER_MODES = ["rgb_array", "human"]
RENDER_PLUGIN_GROUP = "maxatar.renderers"


def render_plugin(name: str):
    """Drawing code lives in the `renderers` package, which imports `maxatar` (never the reverse); it is
    found through the `maxatar.renderers` entry-point group: "frame" is a jittable `frame(env, state) ->
    uint8 (H, W, 3)`, "window" a class `Window(title, fps)` with `show(frame)` and `close()`."""
    from importlib.metadata import entry_points

    found = entry_points(group=RENDER_PLUGIN_GROUP, name=name)
    if not found:
        raise RuntimeError(
            f"rendering needs the `renderers` package (entry point {RENDER_PLUGIN_GROUP}:{name} not found); "
            "install MaxAtar with its [render] extra"
        )
    return next(iter(found)).load()


def check_output(output: str) -> str:
    return check_choice("output", output, OUTPUTS)


def check_render_mode(render_mode, metadata) -> None:
    check_choice("render_mode", render_mode, metadata["render_modes"], none=True)


def tape_seed(seed, np_random: np.random.Generator) -> int:
    """The seed of a new tape: the user's, or one drawn from the env's np_random for `reset(seed=None)`."""
    return int(seed) if seed is not None else int(np_random.integers(2**63))


def pick_twin(
    backend: str, output: str, env_id: str, env: Environment, params: EnvParams, num_envs: int = 1, mesh=None
) -> Twin | None:
    """The twin to step with (the Python backend), or None for the JAX backend, from the user's choice. "auto"
    takes the Python twins only where they are faster and able: numpy output, one device, at most
    `PYTHON_MAX_ENVS` sub-environments, and a game with a twin (for these params); an explicit "python" that
    cannot be honoured raises instead."""
    check_choice("backend", backend, BACKENDS)
    if backend == "python" and output == "jax":
        raise InputError("output='jax' needs backend='jax' (the Python backend computes numpy)")
    if backend == "jax" or output == "jax":
        return None
    if mesh is not None:
        if backend == "python":
            raise InputError("devices= needs backend='jax'")
        return None
    if backend == "auto" and num_envs > PYTHON_MAX_ENVS:
        return None
    twin = load_twin(env, params)
    if twin is None and backend == "python":
        raise InputError(f"{env_id} has no Python twin; use backend='jax'")
    return twin


class TaskClock:
    """The schedule a continual environment's Gymnasium front ends follow (`maxatar.continual.MultiGame`): its
    frames (environment steps, summed over a vector env's batch) counted over the front end's life, seeded resets
    included. The step whose frames end a stage is truncated; the next reset plays the next stage's game, and its
    first step reports `info["task_boundary"]`. A `task=` keyword fixes the game instead (no clock)."""

    def __init__(self, schedule):
        self.schedule = schedule
        self.frame = 0

    @classmethod
    def of(cls, env: Environment, kwargs: dict) -> TaskClock | None:
        """A clock for an environment that follows its schedule, unless `task` was given."""
        return cls(env.schedule) if getattr(env, "follows_schedule", False) and "task" not in kwargs else None

    def stage(self) -> int:
        return min(self.frame // self.schedule.frames_per_task, len(self.schedule.stages) - 1)

    def task(self) -> int:
        """The current stage's task."""
        return self.schedule.stages[self.stage()]

    def params(self, params: EnvParams) -> EnvParams:
        """`params` playing the current stage's task."""
        return params.replace(task=self.task())

    def tick(self, frames: int) -> bool:
        """Count a step's frames: True when they end a stage that another follows (the step is cut there)."""
        before = self.stage()
        self.frame += frames
        return self.stage() != before
