"""The contract every MaxAtar environment fills: its data and its hooks, and nothing of the episode around them.

An environment object holds only static configuration and is hashable, so it can be a static argument to
`jax.jit`. Everything that changes lives in pytrees passed in and out:

* `EnvParams`  values a user may change without recompiling (and may vmap over);
* `EnvState`   the game's own state plus what the episode needs (sticky action, step counter, terminal flag);
* `Draws`      the random variates one step consumes, so a step is deterministic.

A game implements a handful of hooks (`init`, `game_step`, `game_observation`, and the draw maps) on a subclass of
`maxatar.Environment` (`maxatar.episode.Environment`: this class plus the episode protocol, `reset`, `step`,
`transition`). It also declares what the spaces and the renderers read (observation bounds, channel names and
colours, keys) as plain data next to its rules, so no other layer keeps a table keyed by game name. This module
imports nothing of `maxatar` but the input checks, the random numbers and the table of old names (`_compat`). See
docs/architecture.md.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from maxatar import _compat
from maxatar.checks import InputError, check_key

# The input checks live in maxatar.checks; these are re-exported here for older imports.
from maxatar.checks import check_action as check_action
from maxatar.checks import check_difficulty as check_difficulty
from maxatar.checks import check_params as check_params
from maxatar.checks import check_params_entry as check_params_entry
from maxatar.checks import check_traced_action as check_traced_action
from maxatar.prng import uniform


def pytree_dataclass(cls):
    """A frozen dataclass registered as a pytree whose fields are all data (traced, vmappable)."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    return jax.tree_util.register_dataclass(cls, data_fields=names, meta_fields=[])


@pytree_dataclass
class EnvParams:
    """Runtime parameters. Changing them does not recompile; they can be batched with `vmap`.

    sticky_action_prob: probability that the previous executed action repeats (MinAtar: 0.1).
    difficulty_ramping: whether the game speeds up over time (MinAtar: True; ignored where a game has none).
    max_steps: time limit in steps, reported as truncation; 0 means no limit (MinAtar's behaviour).
    difficulty: the level of the difficulty ramp a new episode starts at, what the reference's
        `difficulty_ramp()` returns after that many ramps (0: the reference's start; see
        `Environment.max_difficulty`). With `difficulty_ramping=False` the game stays at that level.
    """

    sticky_action_prob: Any = 0.1
    difficulty_ramping: Any = True
    max_steps: Any = 0
    difficulty: Any = 0

    # The kind of each field, which `maxatar.checks` checks it by ("probability", "flag", "count", "level"); a
    # game's params subclass adds its own fields' kinds.
    kinds: ClassVar[dict[str, str]] = {
        "sticky_action_prob": "probability",
        "difficulty_ramping": "flag",
        "max_steps": "count",
        "difficulty": "level",
    }

    def replace(self, **changes) -> EnvParams:
        """A copy with `changes` applied (the dataclass is frozen, so params are values, safe to share)."""
        return dataclasses.replace(self, **changes)


@pytree_dataclass
class EnvState:
    """game: the environment's own state. last_action: the last *executed* action (in the full action set),
    which MinAtar keeps across resets. time: steps since reset. terminated: the game has ended."""

    game: Any
    last_action: jax.Array
    time: jax.Array
    terminated: jax.Array


@pytree_dataclass
class Draws:
    """One step's random variates: the sticky-action uniform (drawn first, always) and the game's own."""

    sticky: jax.Array
    game: Any


RGB = tuple[int, int, int]


class Channel(NamedTuple):
    """How a renderer draws one observation channel: its name, colour and the shape it fills inside a cell
    ("cell"; "inset", a small centred square, for trails; "hbar" or "vbar" for bullets; "left" or "right", a
    triangle pointing that way, for direction channels). Plain data, so `maxatar` needs no drawing library.
    `role`: what the channel shows in terms other games share (`maxatar.continual.ROLES`: "player", "enemy",
    "player_shot", ...), which the multi-game environment's semantic layout gives one slot across games; None for
    a channel with no counterpart elsewhere."""

    name: str
    colour: RGB
    shape: str = "cell"
    role: str | None = None


# The MinAtar games' trail channel (the cell a moving object just left), drawn small so the objects stay visible.
TRAIL = Channel("trail", (105, 110, 150), "inset", role="motion")

# MinAtar's full action set (its `Environment.action_map`): the names of actions 0-5, and keys by pygame's names.
MINATAR_ACTIONS = ("noop", "left", "up", "right", "down", "fire")
MINATAR_KEYMAP = {"left": 1, "up": 2, "right": 3, "down": 4, "space": 5}


@dataclasses.dataclass(frozen=True)
class Looks:
    """How a game looks: what `maxatar.pixels`, the renderers, hand play and the docs pictures read.

    channels      one `Channel` per plane of `Environment.grid` (observation order); empty: renderers give each
                  plane a hue of its own
    draw_order    channel names, bottom first, so overlapping objects stay visible; empty: as `channels`
    canvas_cells  a game whose observation is no grid (CartPole): the (rows, cols) cells of the canvas its `draw`
                  hook paints; None (grid games: `maxatar.pixels` draws the observation's planes)
    keymap        key names (pygame's) -> game action, for playing by hand; MinAtar's by default
    idle_action   the game action when no key is pressed; None repeats the previous one
    """

    channels: tuple[Channel, ...] = ()
    draw_order: tuple[str, ...] = ()
    canvas_cells: tuple[int, int] | None = None
    keymap: Mapping[str, int] = dataclasses.field(default_factory=lambda: MINATAR_KEYMAP)
    idle_action: int | None = 0


@dataclasses.dataclass(frozen=True)
class States:
    """What a game's states may hold: what `maxatar.checks` reads to refuse a chosen start state
    (`reset(options={"state": ...})`) that no episode reaches, so neither the JAX step nor a twin ever sees one.

      ranges  name -> the values a game state value reaches in the game's episodes: a `range` of integers or a
              (low, high) pair of finite reals, inclusive. The names are those of the game's `state_values` hook
              (the state's fields by default); every value but bools needs one. Rules across values that no
              episode breaks are the game's `state_rules` hook.
    """

    ranges: Mapping[str, range | tuple[float, float]] = dataclasses.field(default_factory=dict)


def tree_select(pred, on_true, on_false):
    """Branch-free select between two pytrees of identical structure (cheap under vmap)."""
    return jax.tree.map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)


class Tabular(NamedTuple):
    """An environment seen as a table: `num_states` states, the index of a game state and of an observation
    (the evaluation policy sees only observations), and the game state of an index (to fill the tables)."""

    num_states: int
    state_index: Callable[[Any], jax.Array]  # game state -> int32 index
    obs_index: Callable[[jax.Array], jax.Array]  # observation -> int32 index (any leading batch axes)
    game_state: Callable[[jax.Array], Any]  # index -> a game state with that index
    reset_uniforms: int  # how many of the reset's uniforms the game reads (the rest are passed as 0)


class Environment:
    """What an environment declares: the game hooks below and its data. Games subclass `maxatar.Environment`
    (`maxatar.episode.Environment`), which adds the episode protocol; this class is the type every layer reads.

    A game declares three things: its rules (the class attributes below and the game hooks), how it looks
    (`looks`, a `Looks`) and what its states may hold (`states`, a `States`, with the `state_values` and
    `state_rules` hooks). Class attributes a game sets, in this order: always name, num_game_actions, obs_shape,
    obs_dtype, the two uniform counts, twin, randomness and (grid games) looks, so each game states its contract in
    full; the others only where the game differs from the default.

      name                 short name, e.g. "breakout"
      num_game_actions     size of the game's full action set
      minimal_action_set   the game actions of the minimal set (`full_action_space=False`), defaults to all
      action_names         the name of each game action (docs); MinAtar's six by default
      params_class         the game's params: `EnvParams` or a subclass adding the game's own runtime params
      obs_shape, obs_dtype the observation's static shape and dtype
      obs_nvec             integer observations: each element is a code in [0, obs_nvec) (a MultiDiscrete
                           space); None (the default) for bool and float observations
      obs_high             float observations: the bound |x| <= obs_high (a Box), a scalar or one per element;
                           unbounded by default
      obs_low              float observations bounded otherwise: obs_low <= x <= obs_high (a scalar or one per
                           element); None (the default) for -obs_high
      obs_pixels           uint8 images (`maxatar.pixels.PixelObservation`): a Box(0, 255), not integer codes
      num_reset_uniforms   how many uniforms `reset_draws` consumes
      num_step_uniforms    how many uniforms `step_draws` consumes (the sticky uniform comes on top)
      randomness           one sentence: what is drawn when (at reset, at which steps), for the docs
      default_sticky_action_prob / default_max_steps   defaults for `default_params`
      max_difficulty       the last level of the game's difficulty ramp (`EnvParams.difficulty`); 0 (the
                           default) for a game without one
      settings             setting name -> the `maxatar.make` keywords of that paper's setting (`maxatar.settings`);
                           MinAtar's own ("minatar": the defaults) only, by default
      gymnax_name          gymnax's name for the environment (`maxatar.gymnax.make` takes it), or None
      twin                 "module:Class" of the game's plain-Python twin (`maxatar.twin`), or None
      version              the behaviour version: bumped when fixed-seed trajectories change (`tests/test_versions.py`)
      looks                how it looks (`Looks`): channels, draw order, canvas, keys
      states               what its states may hold (`States`): the ranges of its values

    A game class that still sets 0.2.0's loose attributes (channels, draw_order, canvas_cells, keymap, idle_action,
    state_ranges) is refused when made, with one error saying what to declare (`maxatar._compat`).
    """

    name: ClassVar[str] = "environment"
    num_game_actions: ClassVar[int] = 1
    minimal_action_set: ClassVar[tuple[int, ...] | None] = None
    action_names: ClassVar[tuple[str, ...]] = MINATAR_ACTIONS
    params_class: ClassVar[type] = EnvParams
    obs_shape: ClassVar[tuple[int, ...]] = ()
    obs_dtype: ClassVar[Any] = jnp.bool_
    obs_nvec: ClassVar[int | None] = None
    obs_high: ClassVar[float | tuple[float, ...]] = math.inf
    obs_low: ClassVar[float | tuple[float, ...] | None] = None
    obs_pixels: ClassVar[bool] = False
    num_reset_uniforms: ClassVar[int] = 0
    num_step_uniforms: ClassVar[int] = 0
    randomness: ClassVar[str] = ""
    default_sticky_action_prob: ClassVar[float] = 0.1
    default_max_steps: ClassVar[int] = 0
    max_difficulty: ClassVar[int] = 0
    settings: ClassVar[dict[str, dict[str, Any]]] = {"minatar": {}}
    gymnax_name: ClassVar[str | None] = None
    twin: ClassVar[str | None] = None
    version: ClassVar[int] = 0
    looks: ClassVar[Looks] = Looks()
    states: ClassVar[States] = States()

    def __init__(self, minimal_actions: bool = False):
        _compat.check_game_class(type(self))
        full = tuple(range(self.num_game_actions))
        self.action_set = tuple(self.minimal_action_set or full) if minimal_actions else full

    # --- static configuration: equality and hashing make the object a valid static jit argument ---

    def _config(self) -> tuple:
        return (type(self), tuple(sorted(vars(self).items())))

    def __eq__(self, other):
        return isinstance(other, Environment) and self._config() == other._config()

    def __hash__(self):
        return hash(self._config())

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in sorted(vars(self).items()))
        return f"{type(self).__name__}({fields})"

    @property
    def num_actions(self) -> int:
        """Size of the action set the agent picks from (full or minimal, chosen at construction)."""
        return len(self.action_set)

    @property
    def num_draws(self) -> int:
        """Uniforms one `step` consumes: the sticky draw plus the game's."""
        return 1 + self.num_step_uniforms

    @property
    def num_auto_reset_uniforms(self) -> int:
        """Uniforms a step that may reset consumes: the step's draws, then a reset's (`AutoReset`'s vector, and
        one row of the Gymnasium front ends' tape, which serves a reset or a step alike)."""
        return self.num_draws + self.num_reset_uniforms

    def default_params(self) -> EnvParams:
        """The game's params with MinAtar's defaults, what `make` and every `params=None` call use."""
        return self.params_class(
            sticky_action_prob=self.default_sticky_action_prob,
            difficulty_ramping=True,
            max_steps=self.default_max_steps,
        )

    # --- game hooks (override) ---

    def reset_draws(self, uniforms: jax.Array, params: EnvParams) -> Any:
        """Map `num_reset_uniforms` uniforms to the variates the game's reset consumes."""
        return ()

    def init(self, draws: Any, params: EnvParams) -> Any:
        """The game's initial state from its reset variates (deterministic)."""
        raise NotImplementedError

    def at_difficulty(self, game: Any, level: jax.Array) -> Any:
        """The initial state `game` moved to ramp level `level` (int32, 0..`max_difficulty`): the ramp's
        variables as the reference has them after `level` ramps, the rest as at reset. Games with a ramp
        override it."""
        raise NotImplementedError(f"{self.name} has no difficulty ramp")

    def step_draws(self, uniforms: jax.Array, game: Any, params: EnvParams) -> Any:
        """Map `num_step_uniforms` uniforms to the variates one game step consumes (may depend on state)."""
        return ()

    def game_step(self, game: Any, action: jax.Array, draws: Any, params: EnvParams) -> tuple[Any, Any, Any]:
        """One deterministic game step with a full-action-set `action`: (game, reward, terminal)."""
        raise NotImplementedError

    def game_observation(self, game: Any) -> jax.Array:
        """The observation of a game state (`obs_shape`, `obs_dtype`)."""
        raise NotImplementedError

    def grid(self, obs: jax.Array) -> jax.Array | None:
        """The observation as a (rows, cols, channels) bool grid, one plane per entry of `looks.channels`, for
        renderers; None where the observation is no grid (renderers then draw the game in a way of their own).
        The MinAtar observations are such grids already."""
        return obs if obs.ndim == 3 and obs.dtype == jnp.bool_ else None

    def tabular(self, params: EnvParams) -> Tabular:
        """The environment as a table of states, for tabular agents; an InputError where it has none."""
        raise InputError(f"{self.name} has no small discrete state for a tabular agent; use maxatar/Doors-v0")

    def state_values(self, game: Any) -> dict[str, Any]:
        """The values of a game state (numpy leaves, maybe with leading batch axes) that `states.ranges` bounds, by
        name: the state's fields, by default. A game whose fields pack several values (bit planes, packed
        records) unpacks them here, so that each is checked against its own range."""
        return {f.name: getattr(game, f.name) for f in dataclasses.fields(game)}

    def state_rules(self, state: EnvState) -> list[str]:
        """What no episode reaches although every value is in its range, for a full state with numpy leaves (maybe
        batched): one message per broken rule, none by default."""
        return []

    def draw(self, game: Any, scale: int) -> jax.Array:
        """A game with `looks.canvas_cells`: its uint8 RGB picture, those cells times `scale` pixels (jittable)."""
        raise NotImplementedError(f"{self.name} is drawn from its observation grid")

    # --- the draws: uniforms to the variates a reset or a step consumes ---

    def sample_reset_draws(self, key: jax.Array, params: EnvParams) -> Any:
        """The reset variates drawn from `key` (kept apart from `init` so tests can feed the reference's)."""
        check_key(key)
        return self.reset_draws(uniform(key, (self.num_reset_uniforms,)), params)

    def draws_from_uniforms(self, uniforms: jax.Array, state: EnvState, params: EnvParams) -> Draws:
        """Split a vector of `num_draws` uniforms: the first is the sticky draw, the rest the game's."""
        return Draws(sticky=uniforms[0], game=self.step_draws(uniforms[1:], state.game, params))

    def sample_draws(self, key: jax.Array, state: EnvState, params: EnvParams | None = None) -> Draws:
        """One step's variates drawn from `key`, so that `transition` itself stays deterministic."""
        check_key(key)
        params = self.default_params() if params is None else params
        return self.draws_from_uniforms(uniform(key, (self.num_draws,)), state, params)

    def observation(self, state: EnvState) -> jax.Array:
        """The observation of a full state (the game's, whatever the wrapper fields hold)."""
        return self.game_observation(state.game)

    def reset_offset(self, params: EnvParams):
        """Where a reset's uniforms start in a row of `num_auto_reset_uniforms` (the step's draws come first):
        right after them. A multi-game environment (`maxatar.continual`) starts them after the current game's own
        step draws instead, so that each game reads the row as the single game does; it may be traced there."""
        return self.num_draws

    def mixed_groups(self, num_envs: int, params: EnvParams) -> tuple[tuple[EnvParams, int, int], ...] | None:
        """A batch of `num_envs` spread over tasks: (params, start, stop) of each contiguous group, which the
        batched front ends step with its own params (a multi-task environment, `maxatar.continual`); None (the
        default) for one set of params for all."""
        return None

    def as_task(self, params: EnvParams, state: EnvState, fn):
        """`fn(env, state, params) -> (state, *outputs)` run by the game being played. A game runs it itself; a
        multi-game environment (`maxatar.continual`) runs it as its current task's game alone, one branch per
        game chosen by the unbatched `params.task`, so a whole auto-resetting step costs that game's step."""
        return fn(self, state, params)

    def step_info(self, state: EnvState, params: EnvParams) -> dict[str, jax.Array]:
        """What a step adds to `info` about the state it steps from, besides `invalid_action`: nothing by default
        (a multi-game environment reports its task)."""
        return {}


def observation_bounds(env: Environment) -> tuple:
    """(low, high, dtype) of one observation, bounds inclusive, from the environment's static description: the
    numbers behind both the Gymnasium space (`maxatar.gym.observation_space`) and gymnax's (`gymnax.observation_box`),
    so the two front ends never disagree. Bool and integer-code bounds are scalars; float bounds are per element."""
    if env.obs_dtype == jnp.bool_:
        return 0, 1, np.dtype(np.bool_)
    if jnp.issubdtype(env.obs_dtype, jnp.integer):
        return 0, int(env.obs_nvec) - 1, np.dtype(env.obs_dtype)
    high = np.broadcast_to(np.asarray(env.obs_high, np.float32), env.obs_shape)
    low = -high if env.obs_low is None else np.broadcast_to(np.asarray(env.obs_low, np.float32), env.obs_shape)
    return low, high, np.dtype(np.float32)


__getattr__ = _compat.moved_attribute(__name__)  # 0.2.0's names of this module (`maxatar._compat`)
