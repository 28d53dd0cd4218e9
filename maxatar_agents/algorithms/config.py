"""The configs every run builds on: `RunConfig` (environment and setting, frames, environments, discount,
logging, evaluation) and `NetworkConfig` (a network's size and observation, `keep_best`), which each agent's
`Config` extends; the environment a config names (`env_from_config`), made once when the config is built
(`check_env`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import maxatar
from maxatar.core import Environment, EnvParams
from maxatar_agents.algorithms.fields import ConfigError, check_fields, knob


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """The knobs every agent's run has, tabular or neural: the environment, the frame budget, logging and
    evaluation. `NetworkConfig` adds a network's; each agent's `Config` adds its own (and may give other
    defaults). Frames count environment steps of one seed over all its vectorised environments."""

    env_id: str = knob("maxatar/Breakout-v0", "environment id (`--env` for short)")
    total_steps: int = knob(5_000_000, "frames per seed (rounded up to whole logging intervals)")
    num_envs: int = knob(1, "environments stepped together (vmap) per seed")
    gamma: float = knob(0.99, "discount")
    sticky_action_prob: float | None = knob(None, "None: the environment's default (0.1 for MinAtar games)")
    difficulty_ramping: bool | None = knob(None, "None: the environment's default (on)")
    env_setting: str = knob(
        "minatar",
        "a paper's MinAtar setting (`maxatar.settings`): 'minatar', 'gymnax' or 'pgx'",
    )
    protocol: str | None = knob(
        None,
        "a continual protocol of `maxatar.continual.PRESETS` ('c-chain', 'nap', 'short') for "
        "maxatar/MinAtar-Continual-v0: its games, order and cycles; the run's frames are split evenly over its "
        "stages (None: the environment's default protocol)",
    )
    log_points: int = knob(100, "logged points over the run; also the unit of resumable chunks")
    eval_episodes: int = knob(100, "final evaluation of the trained policy, all episodes in parallel")
    eval_max_steps: int = knob(10_000, "safety cap on an evaluation episode's length")

    def __post_init__(self):
        """Fail on a bad value before anything is written or compiled: every field's type and bounds, the
        subclass's fields too (`fields.check_fields`), then the environment, made once from the config
        (`check_env`). An agent's config checks what one field cannot say alone after this."""
        check_fields(self)
        check_env(self)


@dataclasses.dataclass(frozen=True)
class NetworkConfig(RunConfig):
    """A neural agent's run: a run's knobs (`RunConfig`), then the network's size, the observation it learns
    from, and keeping the best evaluated params. `off_policy.OffPolicyConfig` and `on_policy.OnPolicyConfig`
    add their skeleton's."""

    hidden: tuple[int, ...] = knob((128,), "dense layers after the observation encoder")
    conv_features: int = knob(16, "filters of the MinAtar 3x3 convolution (MinAtar games only)")
    obs_type: str | None = knob(None, "'rgb' or 'grayscale': learn from the game's picture (`maxatar.pixels`)")
    obs_scale: int | None = knob(None, "pixels per grid cell of the picture (None: 16 for the MinAtar games)")
    keep_best: bool = knob(
        False,
        "Evaluate the evaluation policy after every logging interval and keep its best params (SB3's EvalCallback "
        "'best model') for the final evaluation, the checkpoint's policy and load_policy: a value-based learner's "
        "CartPole policy swings from interval to interval (DQN's and PQN's `cartpole`).",
    )
    keep_best_episodes: int = knob(10, "episodes of each of those evaluations (all in parallel)")
    reset_optimizer: bool = knob(False, "continual runs: a new task starts with a fresh optimiser state")


def env_kwargs(config: Any) -> dict[str, Any]:
    """The `maxatar.make` keywords, besides the id, of the config's environment: its `env_setting`, its
    sticky-action and ramping choices (None = the setting's) and, for a neural agent, its observation type
    (pixels with `obs_type`). A trained policy is played in the environment these make
    (`policies.policy_env_kwargs`)."""
    overrides = {}
    if config.sticky_action_prob is not None:
        overrides["sticky_action_prob"] = config.sticky_action_prob
    if config.difficulty_ramping is not None:
        overrides["difficulty_ramping"] = config.difficulty_ramping
    if config.protocol is not None:
        overrides["preset"] = config.protocol
    pixels = {name: getattr(config, name, None) for name in ("obs_type", "obs_scale")}
    return {"setting": config.env_setting, **overrides, **pixels}


def env_from_config(config: Any) -> tuple[Environment, EnvParams]:
    """`maxatar.make(config.env_id, **env_kwargs(config))`, so every agent reads those knobs the same way."""
    return maxatar.make(config.env_id, **env_kwargs(config))


# The config fields that choose the environment, in the order `check_env` adds them to `maxatar.make`'s call:
# (field, the keyword it sets), so the call that refuses a value knows which field gave it.
ENV_FIELDS = (
    ("env_setting", "setting"),
    ("sticky_action_prob", "sticky_action_prob"),
    ("difficulty_ramping", "difficulty_ramping"),
    ("obs_type", "obs_type"),
    ("obs_scale", "obs_scale"),
    ("protocol", "preset"),
)


def check_env(config: Any) -> None:
    """Make the config's environment once, a field at a time (the id, then each keyword of `env_kwargs` in
    `ENV_FIELDS`' order), so that a value the environment refuses (an id, a setting, a sticky-action
    probability, an observation type) fails when the config is built, as a `ConfigError` naming the field
    whose keyword the refusing call added."""
    wanted = env_kwargs(config)
    kwargs: dict[str, Any] = {}
    for field, keyword in (("env_id", None), *ENV_FIELDS):
        if keyword is not None:
            if wanted.get(keyword) is None and keyword != "setting":
                continue
            kwargs[keyword] = wanted[keyword]
        try:
            maxatar.make(config.env_id, **kwargs)
        except (TypeError, ValueError) as error:
            raise ConfigError(field, str(error)) from None
