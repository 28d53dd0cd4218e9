"""The Gymnasium front end's former single module: its names, now in `maxatar.gym` (one module per job)."""

from maxatar.gym import (  # noqa: F401
    MaxAtarEnv,
    MaxAtarFuncEnv,
    MaxAtarVectorEnv,
    StepState,
    observation_space,
    register_envs,
)
from maxatar.gym.backend import PYTHON_MAX_ENVS, render_plugin  # noqa: F401
