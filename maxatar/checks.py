"""Every input check, written once: each front end and both backends call these before anything changes.

An input is either refused here, with an error that names the parameter and the values it accepts (and the
environment is left as it was, its tape unmoved), or it plays the same episode on every backend. Every refusal is
an `InputError`, which is a ValueError and a TypeError at once, so callers may catch either.

* ids: `check_env_id` (`Breakout-v0`, `maxatar/Breakout-v0`, or either behind Gymnasium's `maxatar:` module
  prefix; no other prefix is dropped).
* params: `check_params` (where params are made: `maxatar.make`, and every front end built on it) and
  `check_params_entry` (params built by hand, where they enter `Environment.reset`/`step`/`transition` outside
  `jit`; cached by identity, so a loop that passes the same object pays once). Every field has a kind, declared
  by its params class (`EnvParams.kinds`, a game's subclass adds its own fields'):
    "probability"  a real number (int or float, numpy's too), finite, in [0, 1]; not bool, str or None;
    "flag"         True or False (Python's or numpy's bool);
    "count"        an integer (int or numpy integer, not bool) in 0 .. 2**31 - 1;
    "level"        an integer level of the game's difficulty ramp, 0 .. `Environment.max_difficulty`;
    "task"         an integer index into a multi-game environment's `games` (`maxatar.continual`).
  Arrays of those (numpy or JAX) are batched params: the pure API takes them (for `vmap`); the front ends that
  step one set of params (`gymnasium.make`, `make_vec`, `make_sb3_vec_env`, `maxatar.gymnax.make`) refuse them
  (`scalar=True`). Lists and tuples are refused everywhere (give an array). Traced values pass unchecked: under
  `jit` nothing can raise.
* keys: `check_key` (a JAX PRNG key: `jax.random.key(seed)` of threefry, rbg or unsafe_rbg, or a raw uint32 key).
* seeds: `check_seed`, one range for every front end: an int (or numpy integer, passed on as an int) in
  0 .. 2**64 - 1 (as Gymnasium and Minari's recorder draw them). The tape's key is built from both 32-bit
  halves of the seed (`maxatar.tape.seed_key`), so no two seeds share a stream.
* actions: `check_action` (one concrete action: an integer scalar in the action space), `check_traced_action`
  (under `jit`: an integer scalar; an out-of-range value is then clipped and flagged in `info["invalid_action"]`,
  the documented behaviour), `check_actions` (a vector env's batch, numpy or JAX: shape, integer dtype and
  range). The vector env's JAX backend checks a JAX array's values inside its jitted step rather than on the
  host (a host read would wait for the device on every step): with numpy output an out-of-range action raises
  before the step is committed, as on the Python backend; with JAX output nothing waits for the device, so it is
  clipped and flagged in `info["invalid_action"]`, as under `jit`.
* `check_key_seeds`: the seeds of the command lines, which become 32-bit PRNG keys: 0 .. 2**32 - 1.
* `check_num_envs`: an int (or numpy integer, not bool) in 1 .. `MAX_NUM_ENVS`.
* states: `check_state_layout` (a state's structure, shapes and dtypes against the environment's: the reset
  option `state` and every state entering the pure API, `maxatar.episode.check_state`), `check_time` (a concrete
  step counter in 0 .. 2**31 - 2), and for the reset option `check_state_values`, the values of a state whose layout
  `maxatar.reset_options.check_state` has checked: the wrapper's fields, then the game's, against the ranges each
  game declares next to its rules (`Environment.states`, the values its episodes reach, read through
  `Environment.state_values`; cross-field rules in `Environment.state_rules`), so that neither the JAX step nor
  a twin's `from_pure` ever sees a value its episodes cannot reach.
* options: `check_registered` (an id the registry knows, or the gymnax facade, which adds gymnax's names),
  `check_flag` (True or False: `full_action_space`, the facade's `use_minimal_action_set` and `legacy_step_api`),
  `check_choice` (one of a few names: `setting`, `backend`, `output`, `render_mode`, `obs_type`)
  and `check_size` (an integer in a range: `obs_scale`, `devices`, Doors' `size` and `num_doors`).

A refusal that depends on how one layer reads its options is raised, as an `InputError` and with these helpers,
where that layer reads them: the reset options' dict and a chosen state's structure, shapes and dtypes
(`maxatar.reset_options`; a batch's mask in `maxatar.gym.vector`, one state per sub-environment in `maxatar.sb3`),
the keywords of `maxatar.make` (`maxatar.registry`, `maxatar.settings`), the backend, output and device
combinations (`maxatar.gym.backend.pick_twin`, `maxatar.sharding.select_devices`), the gymnax facade's names
(`maxatar.gymnax.make`), the pixel options, a drawable environment and its palette (`maxatar.pixels`), a game's
constructor arguments (its `rules.py`) and an environment without a table (`Environment.tabular`).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import weakref
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from maxatar.prng import KEY_IMPLEMENTATIONS, float32_ceiling, float32_ceiling_of

if TYPE_CHECKING:
    from maxatar.core import Environment, EnvParams, EnvState

INT32_MAX = 2**31 - 1
SEED_LIMIT = 2**64  # seeds are 0 .. SEED_LIMIT - 1: the tape key's two 32-bit words
MAX_NUM_ENVS = 2**24
MAX_TIME = INT32_MAX - 1  # a state's step counter: one more step still fits the int32 counter
MODULE_PREFIX = "maxatar:"  # Gymnasium's "module:id" form
NAMESPACE = "maxatar/"


class InputError(ValueError, TypeError):
    """A refused input. Both a ValueError and a TypeError (as numpy's `AxisError` is a ValueError and an
    IndexError), so code that catches either, for a wrong value or a wrong type, catches every refusal; the
    message names the parameter and the values it accepts."""


PROBABILITY, FLAG, COUNT, LEVEL, TASK = "probability", "flag", "count", "level", "task"
KINDS = (PROBABILITY, FLAG, COUNT, LEVEL, TASK)
_WHAT = {
    PROBABILITY: "a probability: a real number in [0, 1]",
    FLAG: "True or False",
    COUNT: "a non-negative integer up to 2**31 - 1",
    LEVEL: "an integer level",
    TASK: "the index of one of the environment's games",
}

_REALS = (int, float, np.integer, np.floating)
_INTEGERS = (int, np.integer)
_BOOLS = (bool, np.bool_)


def _is_traced(value) -> bool:
    return isinstance(value, jax.core.Tracer)


# --- ids -----------------------------------------------------------------------------------------------------


def check_env_id(env_id) -> str:
    """The canonical name of an id: `Breakout-v0` for the package's games (`Breakout-v0`, `maxatar/Breakout-v0`,
    either behind Gymnasium's `maxatar:` module prefix), the id itself for a game another package registers
    (`my_games/Catch-v0`, behind its module's prefix `my_games:` or not). Whether the name is registered is the
    registry's to say (importing the prefix's module first, as Gymnasium does: `maxatar.registry.canonical_name`)."""
    if not isinstance(env_id, str):
        raise InputError(f"env_id must be a string such as 'maxatar/Breakout-v0', got {env_id!r}")
    module, _, name = env_id.rpartition(":")
    others = "/" in name and not name.startswith(NAMESPACE)  # another package's game, in its own namespace
    if module and f"{module}:" != MODULE_PREFIX and not (others and all(p.isidentifier() for p in module.split("."))):
        raise InputError(
            f"env_id {env_id!r} has an unknown module prefix: MaxAtar's ids are 'Breakout-v0' or "
            f"'maxatar/Breakout-v0', optionally behind Gymnasium's {MODULE_PREFIX!r} prefix; another package's "
            "game is named with its own, as in 'my_games:my_games/Catch-v0'"
        )
    return name.removeprefix(NAMESPACE)


# --- params --------------------------------------------------------------------------------------------------


def _check_scalar(name: str, value, kind: str, env) -> Any:
    """One concrete scalar field value, checked, as a Python scalar (or an InputError naming `name`)."""
    if kind == FLAG:
        if not isinstance(value, _BOOLS):
            raise InputError(f"{name} must be True or False, got {value!r}")
        return bool(value)
    if kind == PROBABILITY:
        if isinstance(value, _BOOLS) or not isinstance(value, _REALS):
            raise InputError(f"{name} must be {_WHAT[kind]}, got {value!r}")
        inside = 0 <= value <= 1 if isinstance(value, _INTEGERS) else math.isfinite(value) and 0.0 <= value <= 1.0
        if not inside:  # (an int is compared as an int: a huge one has no float)
            raise InputError(f"{name} must be {_WHAT[kind]}, got {value!r}")
        return float(value)
    # COUNT, LEVEL, TASK
    if isinstance(value, _BOOLS) or not isinstance(value, _INTEGERS):
        raise InputError(f"{name} must be {_WHAT[kind]}, got {value!r}")
    value = int(value)
    if kind == COUNT and not 0 <= value <= INT32_MAX:
        suffix = " (0 = no limit)" if name == "max_steps" else ""
        raise InputError(f"{name} must be {_WHAT[kind]}{suffix}, got {value!r}")
    if kind == LEVEL:
        _check_levels(name, value, value, env)
    if kind == TASK:
        _check_tasks(name, value, value, env)
    return value


def _anywhere(flags) -> bool:
    """Whether any of `flags` is set: a Python bool (an int's comparison) as it is, an array reduced by numpy,
    whose fixed cost would otherwise be most of a scalar check."""
    return flags if isinstance(flags, bool) else bool(np.any(flags))


def _check_levels(name: str, levels: int | np.ndarray, value, env) -> None:
    if env is None:
        bad = levels < 0
        expected = "0 or more"
    else:
        if env.max_difficulty == 0 and _anywhere(levels != 0):
            raise InputError(f"{env.name} has no difficulty ramp: {name} must be 0, got {value!r}")
        bad = (levels < 0) | (levels > env.max_difficulty)
        expected = f"{env.name}'s difficulty levels are 0..{env.max_difficulty}"
    if _anywhere(bad):
        raise InputError(f"{name} must be an integer level ({expected}), got {value!r}")


def _check_tasks(name: str, tasks: int | np.ndarray, value, env) -> None:
    """Task indices into `env.games` (a multi-game environment's, `maxatar.continual`)."""
    count = len(env.games) if env is not None else None
    if _anywhere(tasks < 0) or (count is not None and _anywhere(tasks >= count)):
        games = f": 0 .. {count - 1} for {env.games}" if count is not None else ""
        raise InputError(f"{name} must be {_WHAT[TASK]}{games}, got {value!r}")


def _check_array(name: str, value, kind: str, env) -> Any:
    """A batched field (an array with at least one axis), checked elementwise; normalized dtypes."""
    array = np.asarray(value)  # one transfer for a JAX array
    dtype = array.dtype
    if kind == FLAG:
        if dtype != np.bool_:
            raise InputError(f"{name} must be True or False (a bool array for batched params), got {dtype} {value!r}")
        return array
    if kind == PROBABILITY:
        if dtype == np.bool_ or not (np.issubdtype(dtype, np.integer) or np.issubdtype(dtype, np.floating)):
            raise InputError(f"{name} must be {_WHAT[kind]} (a float array for batched params), got {dtype}")
        if not np.all(np.isfinite(array) & (array >= 0) & (array <= 1)):
            raise InputError(f"{name} must be {_WHAT[kind]} everywhere, got {value!r}")
        return array
    if dtype == np.bool_ or not np.issubdtype(dtype, np.integer):
        raise InputError(f"{name} must be {_WHAT[kind]} (an integer array for batched params), got {dtype}")
    if kind == COUNT and np.any((array < 0) | (array > INT32_MAX)):
        raise InputError(f"{name} must be {_WHAT[kind]} everywhere, got {value!r}")
    if kind == LEVEL:
        _check_levels(name, array, value, env)
    if kind == TASK:
        _check_tasks(name, array, value, env)
    return array.astype(np.int32)


def check_field(name: str, value, kind: str, env=None, scalar: bool = False) -> Any:
    """One params field checked against its kind: a Python scalar, a numpy array (batched), or the tracer
    itself (unchecked). `scalar`: the caller steps one set of params, so arrays with an axis are refused."""
    if _is_traced(value):
        return value
    if isinstance(value, (list, tuple)):
        batched = "" if scalar else " (batched params: give a numpy or JAX array)"
        raise InputError(f"{name} must be {_WHAT[kind]}{batched}, got a {type(value).__name__}: {value!r}")
    if isinstance(value, (np.ndarray, jax.Array)):
        if np.ndim(value) == 0:
            value = np.asarray(value)[()]  # a numpy scalar of the array's dtype
        elif scalar:
            raise InputError(
                f"{name} must be {_WHAT[kind]}: this front end steps one set of params (batched params belong to "
                f"the pure API, maxatar.make, under vmap), got an array of shape {np.shape(value)}"
            )
        else:
            return _check_array(name, value, kind, env)
    return _check_scalar(name, value, kind, env)


def _kinds(params_class) -> dict[str, str]:
    kinds = getattr(params_class, "kinds", None)
    names = [f.name for f in dataclasses.fields(params_class)]
    missing = [n for n in names if kinds is None or n not in kinds]
    if missing:
        raise InputError(f"{params_class.__name__} declares no kind for field(s) {missing} (its `kinds`)")
    return {n: kinds[n] for n in names}


def _check_class(params, env) -> None:
    expected = env.params_class if env is not None else None
    # The gymnax facade's params are the class itself with gymnax's names added (`maxatar.gymnax.params_class`).
    if expected is not None and getattr(type(params), "maxatar_class", type(params)) is not expected:
        raise InputError(
            f"params must be {expected.__name__} for {env.name} ({env.name}'s params class; maxatar.make gives "
            f"them), got {type(params).__name__}: {params!r}"
        )
    if expected is None and not dataclasses.is_dataclass(params):
        raise InputError(f"params must be EnvParams (or a game's subclass), got {type(params).__name__}")


def check_params(params: EnvParams, env: Environment | None = None, scalar: bool = False) -> EnvParams:
    """Params where they are made (`maxatar.make` and the front ends on it): every field checked by its kind
    (module docstring), the sticky probability stored as its float32 ceiling (`prng.float32_ceiling`, so that
    the float32 draw decides as the reference's float64 one), numpy scalars turned into Python ones, batched
    fields into numpy arrays (the probability a JAX one) of fixed dtypes. `env`: the environment the params are
    for (their class and the levels of its ramp); `scalar`: refuse batched fields."""
    _check_class(params, env)
    changes = {}
    for name, kind in _kinds(type(params)).items():
        value = getattr(params, name)
        checked = check_field(name, value, kind, env, scalar)
        if kind == PROBABILITY and isinstance(checked, float):
            checked = float32_ceiling_of(checked)
        elif kind == PROBABILITY and not _is_traced(checked):
            checked = jnp.asarray(float32_ceiling(checked))
        if checked is not value:
            changes[name] = checked
    params = dataclasses.replace(params, **changes) if changes else params
    _remember(params, env)
    return params


def check_scalar_params(params: EnvParams, env: Environment) -> EnvParams:
    """`check_params` for a front end that steps one set of params (batched fields refused). Params already
    checked (those `maxatar.make` just returned) are only looked at for batched fields."""
    if _was_checked(params, env, scalar=True):
        return params
    return check_params(params, env, scalar=True)


def is_batched(value) -> bool:
    """Whether a params field holds a batch (an array with an axis); a Python scalar is told by a missing
    attribute, where `np.ndim` would cost a microsecond a field on every make."""
    return getattr(value, "ndim", 0) > 0


# Params objects already checked for an environment's params class and ramp: (id, class, max level) -> a weak
# reference to the object (an id alone could be reused by a later object) and whether a field is batched.
# Bounded: cleared when full.
_CHECKED: dict[tuple, tuple[weakref.ref, bool]] = {}
_CHECKED_LIMIT = 512


def _remember(params, env) -> None:
    if env is None or any(_is_traced(leaf) for leaf in jax.tree.leaves(params)):
        return
    if len(_CHECKED) >= _CHECKED_LIMIT:
        _CHECKED.clear()
    batched = any(is_batched(leaf) for leaf in jax.tree.leaves(params))
    try:
        _CHECKED[(id(params), env.params_class, env.max_difficulty)] = (weakref.ref(params), batched)
    except TypeError:  # an object without weak references: checked every time
        pass


def _was_checked(params, env, scalar: bool = False) -> bool:
    """Whether `params` were checked for `env` (with `scalar`: and hold no batched field)."""
    ref, batched = _CHECKED.get((id(params), env.params_class, env.max_difficulty), (None, False))
    return ref is not None and ref() is params and not (scalar and batched)


def check_params_entry(env: Environment, params, scalar: bool = False) -> None:
    """Params entering the pure API (`Environment.reset`, `step`, `transition`): None (the defaults) and params
    already checked for this kind of environment pass at the cost of a dict lookup; other concrete params are
    checked as `check_params` checks them (their values are used as given: nothing is converted here, so an
    eager call and a jitted one compute alike); traced fields pass unchecked. `scalar`: the caller steps one
    state (the gymnax facade), so batched fields are refused."""
    if params is None or _was_checked(params, env, scalar):
        return
    _check_class(params, env)
    traced = False
    for name, kind in _kinds(type(params)).items():
        value = getattr(params, name)
        traced |= _is_traced(value)
        check_field(name, value, kind, env, scalar)
    if not traced:
        _remember(params, env)


def check_difficulty(env: Environment, level, name: str = "difficulty") -> None:
    """A concrete difficulty (a scalar or an array of levels) must be integer levels of `env`'s ramp, else a
    clear error; a traced one passes (it is clipped into range inside the reset)."""
    if _is_traced(level) or (type(level) is int and 0 <= level <= env.max_difficulty):
        return  # traced, or the common valid case without numpy
    array = np.asarray(level)
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
        raise InputError(f"{name} must be an integer level, got {level!r}")
    _check_levels(name, array, level, env)


# --- keys and seeds ------------------------------------------------------------------------------------------


@functools.cache
def _key_implementations() -> frozenset[str]:
    """How JAX prints the implementations MaxAtar reads (`str(jax.random.key_impl(key))`: JAX 0.4 prints a tag,
    "fry" for threefry, later JAX the name)."""
    return frozenset(str(jax.random.key_impl(jax.random.key(0, impl=name))) for name in KEY_IMPLEMENTATIONS)


def check_key(key, name: str = "key") -> None:
    """A JAX PRNG key: a typed key of shape () (`jax.random.key(seed)`) of an implementation MaxAtar reads
    (`maxatar.prng.KEY_IMPLEMENTATIONS`) or a raw uint32 key (`jax.random.PRNGKey(seed)`), concrete or traced;
    anything else is an InputError naming `name`."""
    if isinstance(key, (jax.Array, np.ndarray)):
        dtype, shape = key.dtype, key.shape
        if jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
            if shape != ():
                raise InputError(f"{name} must be one PRNG key (shape ()), got keys of shape {shape}")
            impl = str(jax.random.key_impl(key))
            if impl not in _key_implementations():
                raise InputError(f"{name} must be a key of one of {', '.join(KEY_IMPLEMENTATIONS)}, got a {impl} key")
            return
        if dtype == np.uint32 and shape in ((2,), (4,)):
            return  # raw key data (threefry: 2 words; rbg: 4)
        raise InputError(f"{name} must be a JAX PRNG key (jax.random.key(seed)), got an array {dtype}{list(shape)}")
    raise InputError(f"{name} must be a JAX PRNG key (jax.random.key(seed)), got {type(key).__name__}: {key!r}")


def check_seed(seed) -> int | None:
    """A seed as a Python int, or None: an int or numpy integer (not bool) in 0 .. 2**64 - 1. Every seed in that
    range has a tape of its own (`maxatar.tape.seed_key` keeps both 32-bit halves)."""
    if seed is None:
        return None
    if isinstance(seed, _BOOLS) or not isinstance(seed, _INTEGERS) or not 0 <= seed < SEED_LIMIT:
        raise InputError(f"seed must be a non-negative integer below 2**64 (0 .. 2**64 - 1) or None, got {seed!r}")
    return int(seed)


def check_key_seeds(option: str, first, count: int = 1) -> int:
    """`first` as a Python int, for seeds that become 32-bit PRNG keys (`jax.random.PRNGKey(seed)`, the agents'
    seeds `first` .. `first + count - 1`, the renderers' and a sampler's seed): an integer (not bool) with all
    of them in 0 .. 2**32 - 1, where a larger seed would repeat a smaller one's keys. Refused naming `option`."""
    if isinstance(first, _BOOLS) or not isinstance(first, _INTEGERS) or not 0 <= first <= first + count - 1 < 2**32:
        last = f" (and so must the last of its {count} seeds)" if count > 1 else ""
        raise InputError(f"{option} must be an integer in 0 .. 2**32 - 1{last}, as a seed keeps 32 bits; got {first!r}")
    return int(first)


def check_num_envs(num_envs) -> int:
    """`num_envs` as a Python int: an int or numpy integer (not bool) in 1 .. `MAX_NUM_ENVS`."""
    if isinstance(num_envs, _BOOLS) or not isinstance(num_envs, _INTEGERS) or not 1 <= num_envs <= MAX_NUM_ENVS:
        raise InputError(f"num_envs must be a positive integer (1 .. 2**24), got {num_envs!r}")
    return int(num_envs)


# --- options: ids, flags, choices, sizes ----------------------------------------------------------------------


def check_registered(env_id, known) -> None:
    """An id among the `known` ones (the registry's, or the gymnax facade's, which adds gymnax's names); an
    unknown one is refused naming the closest known id, case and namespace aside ("did you mean")."""
    if env_id not in known:
        bare = lambda name: str(name).casefold().removeprefix(MODULE_PREFIX).removeprefix(NAMESPACE)
        names = {bare(name): name for name in known}  # compared without case and the shared `maxatar/`
        close = difflib.get_close_matches(bare(env_id), names, n=1)
        hint = f"; did you mean {names[close[0]]!r}?" if close else ""
        raise InputError(f"unknown environment id {env_id!r}{hint} (known ids: {', '.join(known)})")


def check_flag(name: str, value) -> bool:
    """An option that is True or False (Python's or numpy's bool), as a Python bool."""
    return _check_scalar(name, value, FLAG, None)


def check_choice(name: str, value, choices, none: bool = False):
    """An option that is one of `choices` (or None, where `none`)."""
    if (none and value is None) or (isinstance(value, str) and value in choices):
        return value
    raise InputError(f"{name} must be {'None or ' if none else ''}one of {tuple(choices)}, got {value!r}")


def check_size(name: str, value, low: int = 1, high: int | None = None, what: str = "") -> int:
    """A size option (a scale, a count of devices or doors): an int or numpy integer, not bool, in low .. high
    (no upper bound for None), as a Python int; `what` says what it counts, for the message."""
    if isinstance(value, _BOOLS) or not isinstance(value, _INTEGERS) or value < low or (high and value > high):
        accepted = (
            f"an integer in [{low}, {high}]" if high else "a positive integer" if low == 1 else f"an integer >= {low}"
        )
        raise InputError(f"{name} must be {accepted}{what}, got {value!r}")
    return int(value)


# --- actions -------------------------------------------------------------------------------------------------


def check_action(action, num_actions: int) -> int:
    """A concrete action as a Python int, or a clear error: an integer scalar (Python's, numpy's or a concrete
    JAX one; not bool) in the action space 0 .. num_actions - 1. On the host, without a device call for Python
    and numpy values: the Python backend steps in microseconds."""
    if type(action) is int:  # the common cases skip numpy's dtype checks
        pass
    elif isinstance(action, np.integer):  # what `Discrete.sample()` returns
        action = int(action)
    else:
        array = np.asarray(action)
        if array.shape != () or not np.issubdtype(array.dtype, np.integer):
            raise InputError(f"action must be an integer scalar, got {array.dtype}{list(array.shape)}: {action!r}")
        action = int(array)
    if not 0 <= action < num_actions:
        raise InputError(f"action {action} is outside the action space Discrete({num_actions})")
    return action


def check_traced_action(action) -> jax.Array:
    """A traced action as int32: its value cannot be checked under `jit` (an out-of-range one is clipped and
    flagged in `info["invalid_action"]`), its shape and dtype can."""
    if not jnp.issubdtype(action.dtype, jnp.integer) or action.shape != ():
        raise InputError(f"action must be an integer scalar, got {action.dtype}{list(action.shape)}")
    return action.astype(jnp.int32)


def check_actions(actions, num_envs: int, num_actions: int, read_device: bool = True):
    """A vector env's actions: `num_envs` integers (not bool) in 0 .. num_actions - 1, as int32 (or a clear error).
    Numpy arrays, lists and the like come back as a numpy int32 array. A JAX array is checked for shape and dtype
    without a transfer and comes back as an int32 JAX array (it need not go back to the device); its values are
    read on the host (one small transfer, which waits for the array) unless `read_device` is False, where the
    caller checks them itself (`MaxAtarVectorEnv.step` does, inside its jitted step)."""
    if _is_traced(actions):
        raise InputError("a vector env's actions must be concrete (call step outside jit)")
    if isinstance(actions, jax.Array):
        if actions.shape != (num_envs,) or not jnp.issubdtype(actions.dtype, jnp.integer):
            raise InputError(f"actions must be integers of shape ({num_envs},), got {actions.dtype}{actions.shape}")
        if read_device:
            check_actions(np.asarray(actions), num_envs, num_actions)
        return actions if actions.dtype == jnp.int32 else actions.astype(jnp.int32)
    array = np.asarray(actions)
    if array.shape != (num_envs,) or not np.issubdtype(array.dtype, np.integer):
        raise InputError(
            f"actions must be integers of shape ({num_envs},), got {array.dtype}{array.shape}: {actions!r}"
        )
    if array.size and (array.min() < 0 or array.max() >= num_actions):
        raise actions_outside(array, num_actions)
    return array.astype(np.int32)


def actions_outside(actions: np.ndarray, num_actions: int) -> InputError:
    """The error for a batch of actions with values outside the action space."""
    bad = actions[(actions < 0) | (actions >= num_actions)]
    return InputError(f"actions {bad.tolist()} are outside the action space Discrete({num_actions})")


# --- states --------------------------------------------------------------------------------------------------


def describe(spec) -> str:
    """A range spec in words: a `range` of integers or a (low, high) pair of finite reals, both inclusive."""
    if isinstance(spec, range):
        if spec.step == 1:
            return f"{spec.start}..{spec.stop - 1}"
        return ", ".join(str(v) for v in spec)
    low, high = spec
    return f"finite values in [{low}, {high}]"


def outside(values: np.ndarray, spec) -> np.ndarray:
    """Where `values` lie outside `spec` (elementwise)."""
    values = np.asarray(values)
    if isinstance(spec, range):
        inside = (values >= spec.start) & (values < spec.stop)
        if spec.step != 1:
            inside &= (values - spec.start) % spec.step == 0
        return ~inside
    low, high = spec
    return ~(np.isfinite(values) & (values >= low) & (values <= high))


def _first_bad(values: np.ndarray, bad: np.ndarray) -> str:
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    value = values[index] if index else values[()]
    where = f" at index {list(index)}" if index else ""
    return f"{value.item()!r}{where}"


def check_state_layout(spec: EnvState, state, what: str, batch: tuple[int, ...] = ()) -> list:
    """A state's structure, shapes and dtypes against `spec` (one environment's state of `jax.ShapeDtypeStruct`
    leaves; `batch`: the leading axes every leaf must have): its leaves, or an InputError naming `what` and the
    first field that differs. Python only (types and shapes, never values), so inside `jit` it runs once per
    trace and costs the compiled program nothing."""
    leaf = isinstance(spec.game, jax.ShapeDtypeStruct)  # a game whose state is one array (a table's index)
    game = "an array" if leaf else type(spec.game).__name__
    if not isinstance(state, type(spec)) or (not leaf and type(state.game) is not type(spec.game)):
        got = f"EnvState(game={type(state.game).__name__})" if isinstance(state, type(spec)) else type(state).__name__
        raise InputError(f"{what} must be an EnvState(game={game}), as this environment's reset returns, got {got}")
    paths, treedef = jax.tree_util.tree_flatten_with_path(spec)
    try:
        leaves = treedef.flatten_up_to(state)
    except (TypeError, ValueError) as error:
        raise InputError(f"{what} is not a state of {game}: {error}") from None
    for (path, want), leaf in zip(paths, leaves, strict=True):
        shape, dtype = (leaf.shape, leaf.dtype) if hasattr(leaf, "dtype") else (np.shape(leaf), np.result_type(leaf))
        name = f"{what}{jax.tree_util.keystr(path)}"
        if dtype != want.dtype:
            raise InputError(f"{name} has dtype {dtype}, expected {want.dtype}")
        if tuple(shape) != (*batch, *want.shape):
            one = " (one state: vmap the call for a batch)" if not batch and len(shape) > len(want.shape) else ""
            raise InputError(f"{name} has shape {tuple(shape)}, expected {(*batch, *want.shape)}{one}")
    return leaves


def check_time(time, what: str = "state.time") -> None:
    """A concrete step counter in 0 .. `MAX_TIME` (a traced one passes: under `jit` the int32 counter wraps after
    2**31 - 1 steps, as JAX's integers do). Read on the host: only for calls outside `jit`."""
    if _is_traced(time):
        return
    value = int(np.asarray(time))
    if not 0 <= value <= MAX_TIME:
        full = " (the int32 step counter is full: set max_steps to end such an episode)" if value > 0 else ""
        raise InputError(f"{what} is {value}, outside 0..{MAX_TIME}, the steps since reset{full}")


def check_state_values(env: Environment, state: EnvState, what: str = "reset option 'state'") -> None:
    """The values of a state (numpy or JAX leaves, one state or a batch with leading axes; structure, shapes and
    dtypes already checked): the step counter in 0 .. 2**31 - 2, the last executed action in the game's full
    action set, every game value `env.state_values` gives inside `env.states.ranges`, and `env.state_rules`
    satisfied. A ValueError names the first field outside its range and the range."""
    state = jax.device_get(state)  # numpy leaves, in one transfer
    checks = [
        ("last_action", np.asarray(state.last_action), range(env.num_game_actions)),
        ("time", np.asarray(state.time), range(0, MAX_TIME + 1)),
    ]
    ranges = env.states.ranges
    for name, values in env.state_values(state.game).items():
        values = np.asarray(values)
        if name in ranges:
            checks.append((f"game.{name}", values, ranges[name]))
        elif values.dtype != np.bool_:
            raise InputError(f"{env.name} declares no range for its state value {name!r} (its `states.ranges`)")
    for name, values, spec in checks:
        bad = outside(values, spec)
        if np.any(bad):
            raise InputError(
                f"{what}: {name} is {_first_bad(values, bad)}, outside {describe(spec)} (the values a {env.name} "
                "episode reaches)"
            )
    problems = env.state_rules(state)
    if problems:
        raise InputError(f"{what}: {problems[0]} (no {env.name} episode reaches such a state)")


__all__ = [
    "COUNT",
    "InputError",
    "FLAG",
    "KINDS",
    "LEVEL",
    "MAX_NUM_ENVS",
    "PROBABILITY",
    "SEED_LIMIT",
    "actions_outside",
    "check_action",
    "check_actions",
    "check_choice",
    "check_difficulty",
    "check_env_id",
    "check_field",
    "check_flag",
    "check_key",
    "check_key_seeds",
    "check_num_envs",
    "check_params",
    "check_params_entry",
    "check_scalar_params",
    "check_registered",
    "check_seed",
    "check_size",
    "check_state_layout",
    "check_state_values",
    "check_time",
    "check_traced_action",
    "describe",
    "outside",
]
