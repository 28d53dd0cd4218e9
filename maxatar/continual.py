"""Continual and multi-task MinAtar: one environment that plays any of the five games, their schedules and the
published protocols as presets.

* `MultiGame` (id `maxatar/MinAtar-Continual-v0`): the union of some MinAtar games (all five by default). Its
  observation is the 10x10x10 bool union (`layout="front"`: channel i of a game in slot i, as C-CHAIN and the NaP
  harnesses pad; `"semantic"`: one slot per role across games, `ROLES`; a per-game seeded channel permutation
  with `permute_seed`), its actions MinAtar's six
  (`full_action_space=False`: an action outside the current game's minimal set is a no-op). The game being played
  is `params.task`, an index into `games`: params are not batched under the agents' and the vector envs' `vmap`,
  so the `lax.switch` on it picks one branch at run time, a step costs the current game's step, and changing the
  task (`begin_task`) compiles nothing. Each game reads the draws the single game reads for the same key or tape
  row (the uniforms it needs come first, `reset_offset`), so it plays exactly as the single game.
* `MultiTask` (id `maxatar/MinAtar-MultiTask-v0`): the same environment whose batches are spread over the games in
  contiguous groups (`groups`), each stepped with its own game: `MixedBatch` steps such a batch.
* `Schedule`: the sequence of tasks (a fixed order, or a seeded random order per cycle, `cycles` times) and the
  frames each lasts, counted as environment steps summed over the batch; `PRESETS` the protocols.
* `MultiGameTwin`: the plain-Python twin, each game's own twin inside the union.

The games are the registry's MinAtar games; this module names none of them (their names come from their classes).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from maxatar.checks import InputError, check_choice, check_flag, check_size
from maxatar.core import EnvParams, Looks, pytree_dataclass
from maxatar.episode import AutoReset, Environment, in_groups
from maxatar.pixels import ObservationVariant
from maxatar.prng import uniform
from maxatar.registry import MINATAR_GAMES, env_class
from maxatar.twin import Twin, load_twin

UNION_SHAPE = (10, 10, 10)
LAYOUTS = ("front", "semantic")
# The semantic layout's slots: a channel whose `role` (`maxatar.core.Channel`) is one of these takes its slot in
# every game; a channel with no role takes the game's first free slot, in channel order (the guide's table).
ROLES = (
    "player",
    "player_rear",
    "enemy",
    "enemy_alt",
    "player_shot",
    "enemy_shot",
    "motion",
    "goal",
    "gauge",
    "gauge_alt",
)


def minatar_games() -> dict[str, type[Environment]]:
    """The MinAtar games by their `name` ("breakout", ...), in the registry's order."""
    return {cls.name: cls for cls in map(env_class, MINATAR_GAMES)}


def semantic_slots(env: Environment) -> tuple[int, ...]:
    """The semantic layout's slot of each of a game's channels: its role's (`ROLES`), or for a channel without
    one the first slot no channel of the game takes, in channel order."""
    roles = [channel.role for channel in env.looks.channels]
    taken = {ROLES.index(role) for role in roles if role is not None}
    free = iter(s for s in range(len(ROLES)) if s not in taken)
    return tuple(next(free) if role is None else ROLES.index(role) for role in roles)


# --- schedules -------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Schedule:
    """Which task is played when. A cycle plays every task once, in `range(num_tasks)` order or, with `shuffle`, in
    an order drawn from `seed` anew for each cycle; `cycles` cycles follow one another. Each task lasts
    `frames_per_task` frames: environment steps summed over the batch (one vector step of N environments is N
    frames), as the agents count `total_frames` and as C-CHAIN (one environment) and the NaP harness count them."""

    num_tasks: int
    frames_per_task: int
    cycles: int = 1
    shuffle: bool = False
    seed: int = 0

    def __post_init__(self):
        check_size("frames_per_task", self.frames_per_task, what=" (frames each task lasts)")
        check_size("cycles", self.cycles, what=" (passes over the games)")
        check_flag("shuffle", self.shuffle)
        check_size("seed", self.seed, low=0, high=2**63 - 1)

    @functools.cached_property
    def stages(self) -> tuple[int, ...]:
        """The task of each stage, every cycle in turn."""
        rng = np.random.default_rng(self.seed)
        order = []
        for _ in range(self.cycles):
            cycle = rng.permutation(self.num_tasks) if self.shuffle else np.arange(self.num_tasks)
            order.extend(int(task) for task in cycle)
        return tuple(order)

    @property
    def total_frames(self) -> int:
        """Frames of the whole schedule."""
        return len(self.stages) * self.frames_per_task

    def stage_at(self, frame):
        """The stage (0-based) a frame falls in, the last one after the schedule's end (jittable)."""
        return jnp.minimum(jnp.asarray(frame) // self.frames_per_task, len(self.stages) - 1)

    def task_at(self, frame):
        """The task played at `frame` (jittable; a traced frame gives a traced task)."""
        return jnp.asarray(self.stages, jnp.int32)[self.stage_at(frame)]


@dataclasses.dataclass(frozen=True)
class Preset:
    """A published protocol: its games in order, frames per game, cycles and order."""

    games: tuple[str, ...]
    frames_per_task: int
    cycles: int = 1
    shuffle: bool = False
    about: str = ""


PRESETS: dict[str, Preset] = {
    "c-chain": Preset(
        ("space_invaders", "asterix", "seaquest"),
        2_000_000,
        about="C-CHAIN (Tang et al., ICML 2025): SpaceInvaders, Asterix, Seaquest, 2M frames each, one pass",
    ),
    "nap": Preset(
        ("breakout", "asterix", "space_invaders", "freeway", "seaquest"),
        10_000_000,
        cycles=2,
        about="NaP (Lyle et al. 2024): Breakout, Asterix, SpaceInvaders, Freeway, Seaquest, 10M frames each, 2 cycles",
    ),
    "short": Preset(
        ("breakout", "space_invaders", "asterix"),
        200_000,
        about="a laptop CPU's protocol: Breakout, SpaceInvaders, Asterix, 200k frames each, one pass",
    ),
}
DEFAULT_PRESET = "short"


# --- the environment ---------------------------------------------------------------------------------------------


@pytree_dataclass
class MultiGameParams(EnvParams):
    """`EnvParams` plus `task`: the index into `games` of the game being played. Params are not batched where the
    agents and the vector envs vmap over environments, so the switch on it runs one game's code."""

    task: Any = 0

    kinds: ClassVar[dict[str, str]] = {**EnvParams.kinds, "task": "task"}


@pytree_dataclass
class MultiGameState:
    """Every game's own state (the current task's; the other games' slots hold zeros or a game left earlier), the
    index of the game being played, and whether the next step is a task's first (`begin_task`)."""

    games: tuple
    task: jax.Array
    boundary: jax.Array


class MultiGame(Environment):
    """The MinAtar games in one environment, one game at a time: `params.task` (module docstring). Keywords:
    `preset` (a name of `PRESETS`, which fills the others; explicit ones override it), `games` (names, in the
    order a cycle plays them), the schedule's `frames_per_task`, `cycles`, `shuffle` and `seed`, the
    observation's `layout` and `permute_seed` (None: no permutation; an int: each game's channels permuted over
    the ten slots, by a permutation drawn from it)."""

    name = "minatar-continual"
    follows_schedule = True  # the Gymnasium front ends play the schedule's task at their frame count (`TaskClock`)
    num_game_actions = 6
    minimal_action_set = tuple(range(6))  # six either way: `full_action_space=False` makes per-game no-ops
    obs_shape = UNION_SHAPE
    obs_dtype = jnp.bool_
    params_class = MultiGameParams
    twin = "maxatar.continual:MultiGameTwin"
    randomness = (
        "The current game's: each game reads the first of the union's uniforms, the single game's draws for the "
        "same key or tape row."
    )
    looks = Looks()

    def __init__(
        self,
        preset: str | None = None,
        games: tuple[str, ...] | None = None,
        frames_per_task: int | None = None,
        cycles: int | None = None,
        shuffle: bool | None = None,
        seed: int = 0,
        layout: str = "front",
        permute_seed: int | None = None,
        minimal_actions: bool = False,
    ):
        known = minatar_games()
        base = PRESETS[check_choice("preset", preset, tuple(PRESETS), none=True) or DEFAULT_PRESET]
        games = base.games if games is None else games
        if isinstance(games, str) or not isinstance(games, (tuple, list)) or not games:
            raise InputError(f"games must be a non-empty list of game names from {tuple(known)}, got {games!r}")
        for game in games:
            check_choice("games", game, tuple(known))
        if len(set(games)) != len(games):
            raise InputError(f"games must name each game once (cycles repeat them), got {games!r}")
        self.games = tuple(games)
        self.schedule = Schedule(
            len(self.games),
            base.frames_per_task if frames_per_task is None else frames_per_task,
            base.cycles if cycles is None else cycles,
            base.shuffle if shuffle is None else shuffle,
            seed,
        )
        self.layout = check_choice("layout", layout, LAYOUTS)
        self.permute_seed = None if permute_seed is None else check_size("permute_seed", permute_seed, 0, 2**63 - 1)
        self.minimal_actions = check_flag("minimal_actions", minimal_actions)
        self.action_set = tuple(range(self.num_game_actions))  # always six: the no-ops are per game

    @functools.cached_property
    def game_envs(self) -> tuple[Environment, ...]:
        """One single-game environment per task, with the full action set (the union maps its own)."""
        known = minatar_games()
        return tuple(known[game]() for game in self.games)

    def _config(self) -> tuple:  # the cached tables are derived from the configuration, not part of it
        return (type(self), tuple(sorted((k, v) for k, v in vars(self).items() if k not in _DERIVED)))

    def __repr__(self):
        return f"{type(self).__name__}(games={self.games}, schedule={self.schedule}, layout={self.layout!r})"

    # --- the uniforms: each game reads its own first

    @property
    def num_step_uniforms(self) -> int:
        return max(env.num_step_uniforms for env in self.game_envs)

    @property
    def num_reset_uniforms(self) -> int:
        return max(env.num_reset_uniforms for env in self.game_envs)

    def reset_offset(self, params: EnvParams):
        """Game k's reset uniforms follow its own step draws in a row, as in the single game's row."""
        offsets = [env.num_draws for env in self.game_envs]
        if isinstance(params.task, jax.core.Tracer):
            return jnp.asarray(offsets, jnp.int32)[params.task]
        return offsets[int(params.task)]

    # --- the static tables: channel slots, playable actions

    @functools.cached_property
    def slots(self) -> tuple[tuple[int, ...], ...]:
        """Per game, the union slot of each of its channels: in order from slot 0 (`layout="front"`) or by role
        (`"semantic"`, `semantic_slots`), then moved by the game's seeded permutation where `permute_seed` is set."""
        slots = []
        for k, env in enumerate(self.game_envs):
            order = np.arange(UNION_SHAPE[-1])
            if self.permute_seed is not None:
                order = np.random.default_rng([self.permute_seed, k]).permutation(UNION_SHAPE[-1])
            placed = semantic_slots(env) if self.layout == "semantic" else range(env.obs_shape[-1])
            slots.append(tuple(int(order[s]) for s in placed))
        return tuple(slots)

    def slot_names(self, task: int) -> tuple[str, ...]:
        """The name of game `task`'s channel in each union slot ("" for an empty one)."""
        names = [""] * UNION_SHAPE[-1]
        for channel, slot in zip(self.game_envs[task].looks.channels, self.slots[task], strict=True):
            names[slot] = channel.name
        return tuple(names)

    @functools.cached_property
    def legal_actions(self) -> np.ndarray:
        """(tasks, 6) bool: the actions of each game's minimal set, the ones that act in that game."""
        table = np.zeros((len(self.games), self.num_game_actions), bool)
        for k, env in enumerate(self.game_envs):
            table[k, list(env.minimal_action_set or range(env.num_game_actions))] = True
        return table

    def union_observation(self, task: int, obs) -> jax.Array:
        """Game `task`'s observation placed in the union's slots (either engine's array). Built from static slices
        and zero planes, one per slot: a scatter into the union would be a serial loop per environment on CPU."""
        xp = jnp if isinstance(obs, jax.Array) else np
        channel = {slot: c for c, slot in enumerate(self.slots[task])}
        zero = xp.zeros(obs.shape[:-1] + (1,), bool)
        planes = [obs[..., channel[s] : channel[s] + 1] if s in channel else zero for s in range(UNION_SHAPE[-1])]
        return xp.concatenate(planes, axis=-1)

    def zeros(self) -> tuple:
        """Every game's state, all zeros: the slots of the games not being played."""
        params = self.default_params()

        def fresh(env):
            return env.init(env.reset_draws(jnp.zeros(env.num_reset_uniforms), params), params)

        shapes = [jax.eval_shape(functools.partial(fresh, env)) for env in self.game_envs]
        return tuple(jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shape) for shape in shapes)

    def _played(self, task: int, action):
        """The executed action as game `task` plays it: a no-op outside its minimal set with `minimal_actions`."""
        if not self.minimal_actions:
            return action
        return jnp.where(jnp.asarray(self.legal_actions[task])[action], action, 0)

    # --- the game hooks: one branch per game, chosen by the unbatched `params.task`

    def reset_draws(self, uniforms, params):
        return uniforms

    def init(self, uniforms, params) -> MultiGameState:
        def branch(k):
            def run(uniforms):
                env = self.game_envs[k]
                game = env.init(env.reset_draws(uniforms[: env.num_reset_uniforms], params), params)
                return tuple(game if i == k else zero for i, zero in enumerate(self.zeros()))

            return run

        games = _switch(params.task, [branch(k) for k in range(len(self.games))], uniforms)
        return MultiGameState(games, jnp.asarray(params.task, jnp.int32), jnp.bool_(False))

    def step_draws(self, uniforms, game, params):
        return uniforms

    def game_step(self, game: MultiGameState, action, uniforms, params):
        def branch(k):
            def run(games, action, uniforms):
                env = self.game_envs[k]
                draws = env.step_draws(uniforms[: env.num_step_uniforms], games[k], params)
                stepped, reward, terminal = env.game_step(games[k], self._played(k, action), draws, params)
                games = tuple(stepped if i == k else g for i, g in enumerate(games))
                return games, jnp.asarray(reward, jnp.float32), jnp.asarray(terminal, bool)

            return run

        branches = [branch(k) for k in range(len(self.games))]
        games, reward, terminal = _switch(params.task, branches, game.games, action, uniforms)
        return MultiGameState(games, game.task, jnp.bool_(False)), reward, terminal

    def game_observation(self, game: MultiGameState) -> jax.Array:
        """The played game's observation in the union's slots. The state's `task` is batched where environments
        are, so this switch evaluates every game's observation under `vmap`: the protocol's steps observe inside
        `as_task` instead, once, as the played game."""

        def branch(k):
            return lambda games: self.union_observation(k, self.game_envs[k].game_observation(games[k]))

        return jax.lax.switch(game.task, [branch(k) for k in range(len(self.games))], game.games)

    def as_task(self, params: MultiGameParams, state, fn):
        """`fn` run by `task_game(params.task)` on the played game's own state (`core.Environment.as_task`), the
        other games' slots passed through: one branch per game, each the single game's code alone."""

        def branch(k):
            def run(state):
                game_env = self.task_games[k]
                played, *outputs = fn(
                    game_env, dataclasses.replace(state, game=state.game.games[k]), game_env.game_params(params)
                )
                games = tuple(played.game if i == k else g for i, g in enumerate(state.game.games))
                union = MultiGameState(games, jnp.int32(k), jnp.bool_(False))
                return (dataclasses.replace(played, game=union), *outputs)

            return run

        return tuple(_switch(params.task, [branch(k) for k in range(len(self.games))], state))

    def step_info(self, state, params) -> dict[str, jax.Array]:
        """`task_id`, `task_boundary` (the step is the task's first) and `legal_action_mask` (the task's minimal
        action set, six bools)."""
        task = jnp.asarray(params.task, jnp.int32)
        legal = jnp.asarray(self.legal_actions)[task]
        return {"task_id": task, "task_boundary": state.game.boundary, "legal_action_mask": legal}

    def task_info(self, tasks, boundary) -> dict[str, np.ndarray]:
        """`step_info` on the host, for the Gymnasium front ends: from the played `tasks` (an index, or one per
        environment: `env_tasks`) and their `boundary` flags, as numpy arrays."""
        tasks = np.asarray(tasks, np.int32)
        return {
            "task_id": tasks,
            "task_boundary": np.broadcast_to(np.asarray(boundary, bool), tasks.shape).copy(),
            "legal_action_mask": self.legal_actions[tasks],
        }

    def env_tasks(self, num_envs: int, params) -> np.ndarray:
        """The task each of `num_envs` environments plays: `params.task` for all (a mixed batch: its groups')."""
        return np.full(num_envs, int(params.task), np.int32)

    # --- tasks

    def assignment(self, num_envs: int) -> np.ndarray:
        """A mixed batch's game of each environment: floor(i * tasks / N), contiguous groups of near-equal size in
        the order of `games` (fixed: the same for every seed)."""
        return (np.arange(num_envs) * len(self.games)) // num_envs

    def groups(self, num_envs: int) -> tuple[tuple[int, int, int], ...]:
        """(task, start, stop) of each non-empty group of a mixed batch of `num_envs`."""
        tasks = self.assignment(num_envs)
        return tuple(
            (k, int(np.searchsorted(tasks, k)), int(np.searchsorted(tasks, k, "right")))
            for k in range(len(self.games))
            if (tasks == k).any()
        )

    def task_game(self, task: int) -> TaskGame:
        """Game `task` alone with the union's observation and actions (`TaskGame`)."""
        return self.task_games[task]

    @functools.cached_property
    def task_games(self) -> tuple[TaskGame, ...]:
        return tuple(TaskGame(self, k) for k in range(len(self.games)))

    def task_params(self, params: MultiGameParams, frame) -> MultiGameParams:
        """`params` playing the schedule's task at `frame` (jittable)."""
        return params.replace(task=self.schedule.task_at(frame))

    def begin_task(self, uniforms, params: MultiGameParams):
        """A batch's first episodes of `params.task`, from one row of `num_reset_uniforms` per environment (any
        leading axes): (observation, state), each flagged as the task's start (`info["task_boundary"]` on its
        first step). Jittable with a traced task: a switch compiles nothing."""
        from maxatar.episode import restart  # the protocol's fresh episode, vmapped over the batch

        def one(u):
            obs, state = restart(self, u, params)
            return obs, dataclasses.replace(state, game=dataclasses.replace(state.game, boundary=jnp.bool_(True)))

        for _ in range(uniforms.ndim - 1):
            one = jax.vmap(one)
        return one(uniforms)


class TaskGame(ObservationVariant):
    """Game `task` of a `MultiGame` alone, with the union's observation and actions: what a training loop steps
    for a whole stretch of one task (the agents switch games once per logging interval, outside their step loop,
    so each step runs one game's code and no conditional). Its params are the game's own (`game_params`); it
    plays exactly as the union does on that task."""

    obs_shape = UNION_SHAPE
    obs_dtype = jnp.bool_

    def __init__(self, union: MultiGame, task: int):
        super().__init__(union.game_envs[task])
        self.union, self.task = union, task
        self.twin = None

    def game_observation(self, game) -> jax.Array:
        return self.union.union_observation(self.task, self.env.game_observation(game))

    def game_step(self, game, action, draws, params):
        return self.env.game_step(game, self.union._played(self.task, action), draws, params)

    def game_params(self, params: MultiGameParams) -> EnvParams:
        """The union's params as this game's (every field but `task`)."""
        fields = {f.name for f in dataclasses.fields(EnvParams)}
        return self.env.params_class(**{name: getattr(params, name) for name in fields})


_DERIVED = ("game_envs", "slots", "legal_actions", "task_games")


def _switch(task, branches, *operands):
    """`lax.switch` on a traced task; a Python int (a mixed batch's group) calls its branch alone."""
    if isinstance(task, int):
        return branches[task](*operands)
    return jax.lax.switch(task, branches, *operands)


class MultiTask(MultiGame):
    """The MinAtar games in one environment, a batch spread over them (all five by default): environment i of N
    plays game `assignment(N)[i]` (`groups`). `MixedBatch` and `make_vec` step each group with its own game; there is no
    schedule to follow (every game is played all the time)."""

    name = "minatar-multitask"
    follows_schedule = False  # every game is played all the time

    def env_tasks(self, num_envs: int, params) -> np.ndarray:
        return self.assignment(num_envs).astype(np.int32)

    def mixed_groups(self, num_envs: int, params: MultiGameParams):
        """Each group of `groups` with its own task: how `make_vec` and `MixedBatch` step a batch."""
        return tuple((params.replace(task=k), a, b) for k, a, b in self.groups(num_envs))

    def __init__(self, games: tuple[str, ...] | None = None, layout="front", permute_seed=None, minimal_actions=False):
        super().__init__(
            games=tuple(minatar_games()) if games is None else games,
            layout=layout,
            permute_seed=permute_seed,
            minimal_actions=minimal_actions,
        )


@dataclasses.dataclass(frozen=True)
class MixedBatch:
    """A mixed batch of `num_envs` environments of a `MultiTask` (or `MultiGame`), its groups each stepped with its
    own game and the outputs concatenated, so that a step costs the sum of its groups' steps. `reset` and
    `step_from_uniforms` are `AutoReset`'s, batched (one row of uniforms per environment)."""

    env: MultiGame
    num_envs: int

    @property
    def groups(self) -> tuple[tuple[int, int, int], ...]:
        return self.env.groups(self.num_envs)

    @property
    def num_uniforms(self) -> int:
        return self.env.num_auto_reset_uniforms

    def _each(self, fn, params, *batched):
        groups = tuple((params.replace(task=k), a, b) for k, a, b in self.groups)
        return in_groups(groups, fn, params, *batched)

    def reset_from_uniforms(self, uniforms, params):
        """Every environment's fresh episode of its game: (observation, state)."""
        return self._each(lambda p, u: jax.vmap(self.env.reset_from_uniforms, (0, None))(u, p), params, uniforms)

    def reset(self, key, params):
        """`reset_from_uniforms` with each environment's uniforms drawn from `key`."""
        uniforms = uniform(key, (self.num_envs, self.env.num_reset_uniforms))
        return self.reset_from_uniforms(uniforms, params)

    def step_from_uniforms(self, uniforms, state, action, params):
        """One auto-resetting step of every environment (`AutoReset.step_from_uniforms`)."""
        step = jax.vmap(AutoReset(self.env).step_from_uniforms, (0, 0, 0, None))
        return self._each(lambda p, u, s, a: step(u, s, a, p), params, uniforms, state, action)


# --- the Python twin ---------------------------------------------------------------------------------------------


class MultiGameTwin(Twin):
    """The union around the current game's own twin. State: [every game's pure state (numpy), the current game's
    twin state, boundary flag]."""

    def __init__(self, env: MultiGame, params: MultiGameParams):
        super().__init__(env, params)
        self.task = int(params.task)
        self.game_env = env.game_envs[self.task]
        self.game_twin = load_twin(self.game_env, params)
        self.legal = env.legal_actions[self.task]
        self.zeros = jax.device_get(env.zeros())

    def reset(self, uniforms):
        return [list(self.zeros), self.game_twin.reset(uniforms[: self.game_env.num_reset_uniforms]), False]

    def step(self, game, action, uniforms):
        if self.env.minimal_actions and not self.legal[action]:
            action = 0
        stepped, reward, terminal = self.game_twin.step(game[1], action, uniforms[: self.game_env.num_step_uniforms])
        return [game[0], stepped, False], reward, terminal

    def observation(self, game) -> np.ndarray:
        return self.env.union_observation(self.task, self.game_twin.observation(game[1]))

    def to_pure(self, game) -> MultiGameState:
        games = tuple(self.game_twin.to_pure(game[1]) if i == self.task else g for i, g in enumerate(game[0]))
        return MultiGameState(games, np.int32(self.task), np.bool_(game[2]))

    def from_pure(self, state: MultiGameState):
        return [list(state.games), self.game_twin.from_pure(state.games[self.task]), bool(state.boundary)]


__all__ = [
    "PRESETS",
    "MixedBatch",
    "MultiGame",
    "MultiGameParams",
    "MultiGameState",
    "MultiGameTwin",
    "MultiTask",
    "Preset",
    "Schedule",
    "TaskGame",
]
