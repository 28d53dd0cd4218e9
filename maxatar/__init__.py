"""MaxAtar: MinAtar, CartPole and Doors as pure, fast JAX environments with Gymnasium and SB3 front ends."""

from maxatar.core import Draws, Environment, EnvParams, EnvState
from maxatar.episode import AutoReset
from maxatar.registry import make, registered_ids

__version__ = "0.1.0"

__all__ = ["AutoReset", "Draws", "EnvParams", "EnvState", "Environment", "make", "registered_ids", "sharding"]

from maxatar import sharding  # noqa: E402  (several devices: meshes, placement, batched reset/step)
from maxatar.gym import register_envs  # noqa: E402  (registration needs the registry above)

register_envs()
