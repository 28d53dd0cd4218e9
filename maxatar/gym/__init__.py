"""Gymnasium front end, one module per job, and the registration of every id.

* `functional`: `MaxAtarFuncEnv` (Gymnasium's functional API) and `observation_space`;
* `single`: `MaxAtarEnv`; `vector`: `MaxAtarVectorEnv`; `backend`: what both choose alike (Python twins or one
  jitted call, outputs, rendering, the seed of a new tape). The tape is `maxatar.tape`, reset options
  `maxatar.reset_options`, input checks `maxatar.checks`, the episode rules `maxatar.episode`.

`MaxAtarVectorEnv` supports Gymnasium's next-step, same-step and disabled autoreset modes, returns numpy or JAX
arrays, and can split its environments over several devices (`devices=`).

Numpy outputs are fresh, writable copies (as Gymnasium's own environments return): changing them never
changes the environment's state.
"""

from __future__ import annotations

import gymnasium

from maxatar import registry
from maxatar.gym import registered
from maxatar.gym.functional import MaxAtarFuncEnv, StepState, observation_space
from maxatar.gym.single import MaxAtarEnv
from maxatar.gym.vector import MaxAtarVectorEnv
from maxatar.registry import registered_ids


def register(env_id: str, entry_point: str, **kwargs) -> None:
    """`maxatar.register`: a game of another package, registered with MaxAtar (`maxatar.registry.register`) and
    with Gymnasium (`gymnasium.make`, `make_vec`), for its package to call when imported."""
    registry.register(env_id, entry_point, **kwargs)
    register_envs()


def register_envs() -> None:
    """Register every MaxAtar id with Gymnasium (idempotent), the observation variants' ids
    (`maxatar/Breakout-flat-v0`, ...) included. Importing `maxatar` calls this."""
    for env_id in registered_ids(variants=True):
        if env_id in gymnasium.registry:
            continue
        gymnasium.register(
            id=env_id,
            # Entry points that know their id, and refuse a keyword naming another (`registered`).
            entry_point=f"maxatar.gym.registered:{env_id.removeprefix('maxatar/')}",
            vector_entry_point=f"maxatar.gym.registered:{registered.VECTOR}{env_id.removeprefix('maxatar/')}",
            # As Gymnasium registers its own JAX environments (phys2d/, tabular/): its passive checker expects
            # numpy values, so with output="jax" it warns on every first reset and step (obs, reward and flags
            # are JAX arrays, by design). The numpy output passes Gymnasium's full `check_env` on every id in
            # the tests (tests/test_gym_api.py); `gymnasium.make(id, disable_env_checker=False)` still adds it.
            disable_env_checker=True,
        )


__all__ = [
    "MaxAtarEnv",
    "MaxAtarFuncEnv",
    "MaxAtarVectorEnv",
    "StepState",
    "observation_space",
    "register",
    "register_envs",
]
