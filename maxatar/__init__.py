"""MaxAtar: MinAtar, CartPole and Doors as pure, fast JAX environments with Gymnasium and SB3 front ends."""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

from maxatar.core import Draws, EnvParams, EnvState
from maxatar.episode import AutoReset, Environment, EpisodeStatistics, keep_last_action
from maxatar.registry import make, registered_ids

try:  # stated once, in pyproject.toml; the installed package's metadata carries it
    __version__ = _version("maxatar")
except PackageNotFoundError:  # imported from a checkout that was never installed
    __version__ = "0+unknown"

__all__ = [
    "AutoReset",
    "Draws",
    "EnvParams",
    "EnvState",
    "Environment",
    "EpisodeStatistics",
    "keep_last_action",
    "make",
    "register",
    "registered_ids",
    "sharding",
]

from maxatar import sharding  # noqa: E402  (several devices: meshes, placement, batched reset/step)
from maxatar.gym import register, register_envs  # noqa: E402  (registration needs the registry above)

register_envs()
