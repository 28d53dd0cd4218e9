"""A gymnax-compatible front end: PureJaxRL / purejaxql style code runs unchanged apart from the import.

    from maxatar import gymnax                    # instead of `import gymnax`
    env, env_params = gymnax.make("Breakout-MinAtar")
    obs, state = env.reset(key, env_params)
    obs, state, reward, terminated, truncated, info = env.step(key, state, action, env_params)   # auto-resets

The environment underneath is the pure MaxAtar environment (exact MinAtar dynamics) and `step` is
`maxatar.AutoReset.step`, bit for bit, so everything works under `jit`, `vmap` and `lax.scan` with traced params,
exactly as the pure environment does. The API is gymnax 1.x's: six values from `step`, with
`info["final_observation"]` (the finished episode's last observation, for bootstrapping at a time limit), so
gymnax's own wrappers run on it. Code written for gymnax 0.0.x (PureJaxRL's and purejaxql's wrappers: five values,
`done`) runs on `make(..., legacy_step_api=True)`. With gymnax installed, the spaces are instances of gymnax's own
`Box` and `Discrete` (wrappers check them with `isinstance`), and importing this module imports gymnax; without it
nothing changes but that.

Defaults are MinAtar's own setting, the one its published results use: sticky actions with probability 0.1, the
full action set (six actions) and difficulty ramping, with no time limit. gymnax's MinAtar differs: no sticky
actions, the minimal action set, and a time limit (`max_steps_in_episode`, 1000 steps for most games).
Each of those is one keyword away, `GYMNAX_SETTINGS[env_id]` holds all of them, and `setting="gymnax"` is them:

    gymnax.make("Breakout-MinAtar", use_minimal_action_set=True, sticky_action_prob=0.0, max_steps_in_episode=1000)
    gymnax.make("Breakout-MinAtar", **gymnax.GYMNAX_SETTINGS["Breakout-MinAtar"])          # the same
    gymnax.make("Breakout-MinAtar", setting="gymnax")                                       # the same

Observations keep MaxAtar's dtypes (bool for the games, 4x smaller than gymnax's float32 in a replay buffer;
float32 for CartPole); flax layers promote bool inputs to float32 by themselves.
"""

from __future__ import annotations

import dataclasses
from functools import cache, partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from maxatar.checks import (
    InputError,
    check_env_id,
    check_flag,
    check_key,
    check_params_entry,
    check_registered,
    check_scalar_params,
)
from maxatar.core import Environment, EnvParams, EnvState, observation_bounds, pytree_dataclass
from maxatar.episode import AutoReset, check_state
from maxatar.prng import uniform, uniform_to_int
from maxatar.registry import SPECS, canonical_name, env_class, registered_ids
from maxatar.registry import make as maxatar_make

try:  # gymnax's space classes as the spaces' bases, so gymnax's and PureJaxRL's isinstance checks pass
    from gymnax.environments import spaces as _gymnax_spaces
except ImportError:  # the facade needs nothing from gymnax
    _gymnax_spaces = None

__all__ = [
    "GYMNAX_IDS",
    "GYMNAX_SETTINGS",
    "Box",
    "Discrete",
    "GymnaxEnv",
    "make",
    "params_class",
    "registered_envs",
]

# gymnax's environment names -> MaxAtar's ids, from each game's `gymnax_name`.
GYMNAX_IDS: dict[str, str] = {
    env_class(name).gymnax_name: name
    for name, spec in SPECS.items()
    if spec.obs_type is None and env_class(name).gymnax_name is not None
}


def _gymnax_keywords(knobs: dict[str, Any]) -> dict[str, Any]:
    """A game's gymnax setting (`maxatar.settings`) in gymnax's own keywords."""
    renamed = {"full_action_space": "use_minimal_action_set", "max_steps": "max_steps_in_episode"}
    keywords = {renamed.get(k, k): (not v if k == "full_action_space" else v) for k, v in knobs.items()}
    keywords.pop("difficulty_ramping", None)  # gymnax ramps, as MaxAtar does by default
    return keywords


# The keywords that reproduce gymnax's defaults (`make(..., setting="gymnax")` in short), so a comparison with
# gymnax, or a run meant to match a gymnax-based paper, is `make(env_id, **GYMNAX_SETTINGS[env_id])`.
GYMNAX_SETTINGS: dict[str, dict[str, Any]] = {
    name: _gymnax_keywords(env_class(id_).settings["gymnax"]) for name, id_ in GYMNAX_IDS.items()
}


# --- spaces -----------------------------------------------------------------------------------------------


class Discrete(_gymnax_spaces.Discrete if _gymnax_spaces else object):
    """The integers {0, ..., n - 1}: gymnax's `spaces.Discrete` (a subclass of it where gymnax is installed), so
    code that samples random actions with `env.action_space(params).sample(key)` or sizes a policy head with `.n`
    runs unchanged."""

    def __init__(self, n: int, dtype: Any = jnp.int32):
        if int(n) < 1:
            raise InputError(f"Discrete needs at least one element, got n={n!r}")
        self.n = int(n)
        self.shape: tuple[int, ...] = ()
        self.dtype = jnp.dtype(dtype)

    def __repr__(self) -> str:
        return f"Discrete({self.n})"

    def sample(self, key: jax.Array) -> jax.Array:
        """A uniformly random element (jittable, vmappable over keys): PureJaxRL's random-action baseline and
        epsilon-greedy exploration call this."""
        # MaxAtar's uniform (bit for bit jax.random.uniform) compiles and runs faster on CPU than
        # jax.random.randint; n is far below 2**24, so floor(u * n) is uniform up to a negligible bias.
        return uniform_to_int(uniform(key, self.shape), 0, self.n).astype(self.dtype)

    def contains(self, x) -> jax.Array:
        """Whether `x` is one element of the space (a scalar integer value in range), as a bool array, so it
        can be checked inside `jit`. Shapes other than () are not elements (`vmap` it for a batch)."""
        x = jnp.asarray(x)
        if x.shape != self.shape:
            return jnp.bool_(False)
        inside = (x >= 0) & (x < self.n)
        if not jnp.issubdtype(x.dtype, jnp.integer) and x.dtype != jnp.bool_:
            inside &= x == jnp.floor(x)
        return inside


class Box(_gymnax_spaces.Box if _gymnax_spaces else object):
    """An array of fixed shape and dtype with elementwise bounds: gymnax's `spaces.Box` (a subclass of it where
    gymnax is installed), so code that reads `observation_space(params).shape` (network init, buffers) or
    `.low`/`.high`/`.dtype`, and gymnax's `FlattenObservationWrapper`, run unchanged.

    `low` and `high` are kept as given: scalars where the bound is the same everywhere (as gymnax's MinAtar
    spaces, which wrappers reshaping the observation rely on), numpy arrays otherwise."""

    def __init__(self, low, high, shape: tuple[int, ...], dtype: Any = jnp.float32):
        self.low = low
        self.high = high
        self.shape = tuple(int(d) for d in shape)
        self.dtype = jnp.dtype(dtype)

    def __repr__(self) -> str:
        return f"Box(low={self.low!r}, high={self.high!r}, shape={self.shape}, dtype={self.dtype.name})"

    def _bounds(self) -> tuple[np.ndarray, np.ndarray]:
        low = np.broadcast_to(np.asarray(self.low, np.float64), self.shape)
        high = np.broadcast_to(np.asarray(self.high, np.float64), self.shape)
        return low, high

    def sample(self, key: jax.Array) -> jax.Array:
        """A random element (jittable): uniform where both bounds are finite, as Gymnasium does otherwise
        (normal where unbounded, shifted exponential where bounded on one side), so the sample is always a
        finite member of the space, which gymnax's uniform draw between infinite bounds is not."""
        u = uniform(key, self.shape)  # one uniform per element (fast on CPU), mapped per kind of bound
        if self.dtype == jnp.bool_:
            return u < 0.5
        low, high = self._bounds()
        if jnp.issubdtype(self.dtype, jnp.integer):
            return uniform_to_int(u, low.astype(np.int32), high.astype(np.int32) + 1).astype(self.dtype)
        has_low, has_high = np.isfinite(low), np.isfinite(high)
        lo, hi = np.where(has_low, low, 0.0).astype(np.float32), np.where(has_high, high, 0.0).astype(np.float32)
        expo = -jnp.log1p(-u)
        normal = np.float32(np.sqrt(2.0)) * jax.lax.erf_inv(jnp.maximum(2.0 * u - 1.0, np.float32(-1 + 2**-23)))
        x = jnp.where(
            has_low & has_high,
            lo + u * (hi - lo),
            jnp.where(has_low, lo + expo, jnp.where(has_high, hi - expo, normal)),
        )
        return x.astype(self.dtype)

    def contains(self, x) -> jax.Array:
        """Whether `x` has the space's shape and lies within the bounds everywhere (NaN never does), as a bool
        array, so it can be checked inside `jit`."""
        x = jnp.asarray(x)
        if x.shape != self.shape:
            return jnp.bool_(False)
        low, high = self._bounds()
        return jnp.all((x >= low.astype(np.float32)) & (x <= high.astype(np.float32)))


def observation_box(env: Environment) -> Box:
    """The observation space of a MaxAtar environment in gymnax form: the bounds of the Gymnasium space
    (`maxatar.core.observation_bounds`), so code moving between the front ends sees the same numbers."""
    low, high, dtype = observation_bounds(env)
    return Box(low, high, env.obs_shape, dtype)


# --- params -----------------------------------------------------------------------------------------------


def _maxatar_names(keywords: dict[str, Any]) -> dict[str, Any]:
    """gymnax's name for the time limit as MaxAtar's: `max_steps_in_episode` -> `max_steps`."""
    keywords = dict(keywords)
    if "max_steps_in_episode" in keywords:
        if "max_steps" in keywords:
            raise InputError("give max_steps_in_episode or max_steps, not both (they are the same setting)")
        keywords["max_steps"] = keywords.pop("max_steps_in_episode")
    return keywords


class _GymnaxNames:
    """Mixed into a MaxAtar params class by `params_class`: gymnax's field name, read and replaced."""

    maxatar_class: type

    @property
    def max_steps_in_episode(self):
        """gymnax's name for `max_steps`, the time limit (0 = none)."""
        return self.max_steps

    def replace(self, **changes):
        """A copy with `changes` applied, by gymnax's field names or MaxAtar's."""
        return dataclasses.replace(self, **_maxatar_names(changes))

    def __reduce__(self):  # the class is made at run time, so pickle and copy rebuild it from its MaxAtar base
        return _gymnax_params, (self.maxatar_class, vars(self).copy())


@cache
def params_class(base: type) -> type:
    """The class of the params `make` returns: MaxAtar's params class `base` (the same fields, a pytree, an
    `EnvParams` that every MaxAtar API takes as `base`'s), which also answers to gymnax's `max_steps_in_episode`
    and `.replace(max_steps_in_episode=...)`."""
    cls = type(f"Gymnax{base.__name__}", (_GymnaxNames, base), {"__module__": __name__, "maxatar_class": base})
    return pytree_dataclass(cls)


def _gymnax_params(base: type, fields: dict[str, Any]):
    return params_class(base)(**fields)


# --- the environment ----------------------------------------------------------------------------------------


def _params_key(params) -> tuple:
    """A hashable fingerprint of concrete params, so two facades with different defaults never share a trace."""
    leaves, treedef = jax.tree.flatten(params)
    return (treedef, tuple((np.asarray(v).dtype.str, np.shape(v), np.asarray(v).tobytes()) for v in leaves))


class GymnaxEnv:
    """A MaxAtar environment behind gymnax's `Environment` interface (1.x, or 0.0.x with `legacy_step_api`).

    `reset`/`step` are gymnax's (with same-step auto-reset), `reset_env`/`step_env` the plain ones; both take
    `params=None` for the defaults. The object is hashable, copies and pickles, and its methods are jitted with
    it static, as gymnax's are, so it can be called eagerly at compiled speed or passed as a static argument.
    `env` is the pure environment and `auto` its `AutoReset`.
    """

    def __init__(self, env: Environment, params: EnvParams, name: str, legacy_step_api: bool = False):
        self.env = env
        self.legacy_step_api = legacy_step_api
        self.auto = AutoReset(env, final_obs=not legacy_step_api)  # gymnax 1.x's info["final_observation"]
        self._default_params = params
        self._name = name
        self.obs_shape = tuple(env.obs_shape)

    # Static configuration: equality and hashing make the object a valid static jit argument.
    def _key(self) -> tuple:
        return (self.env, self._name, self.legacy_step_api, _params_key(self._default_params))

    def __eq__(self, other) -> bool:
        return isinstance(other, GymnaxEnv) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        legacy = ", legacy_step_api=True" if self.legacy_step_api else ""
        return f"GymnaxEnv({self._name!r}, {self.env!r}{legacy})"

    @property
    def default_params(self) -> EnvParams:
        """The params `make` was given (a property, as in gymnax, which PureJaxRL reads as `env.default_params`)."""
        return self._default_params

    @property
    def name(self) -> str:
        """The id the environment was made with (gymnax's name, or `maxatar/...`), for logs and run names."""
        return self._name

    @property
    def num_actions(self) -> int:
        """Size of the action set in use (6 for the full MinAtar set), for sizing a policy or Q head."""
        return self.env.num_actions

    def action_space(self, params: EnvParams | None = None) -> Discrete:
        """gymnax's action space; the action count is static, so `params` is accepted and ignored."""
        return Discrete(self.env.num_actions)

    def observation_space(self, params: EnvParams | None = None) -> Box:
        """gymnax's observation space (shape, dtype, bounds); static, so `params` is accepted and ignored."""
        return observation_box(self.env)

    def _params(self, params):
        return self._default_params if params is None else params

    def _check_action(self, action) -> None:
        """Outside `jit`, a bad action raises here (as MaxAtar's `step` does) instead of being clipped silently
        inside the compiled step; a traced action passes through to the pure environment's own checks."""
        if not isinstance(action, jax.core.Tracer):
            self.env._check_action(action)

    def _check_inputs(self, key, params) -> None:
        """The key and params checked before the jitted call (`maxatar.checks`), where they are still concrete:
        inside it the pure environment sees only tracers."""
        check_key(key)
        check_params_entry(self.env, params, scalar=True)  # one state: vmap the calls for batched params

    def reset(self, key: jax.Array, params: EnvParams | None = None) -> tuple[jax.Array, EnvState]:
        """gymnax's `reset(key, params) -> (obs, state)`: start an episode (MaxAtar's `reset`)."""
        self._check_inputs(key, params)
        return self._reset(key, params)

    def step(self, key: jax.Array, state: EnvState, action, params: EnvParams | None = None):
        """gymnax 1.x's `step(key, state, action, params) -> (obs, state, reward, terminated, truncated, info)`,
        which resets a finished episode in the same step (the returned obs and state start the next episode;
        reward and the flags describe the finished step). `info` holds, as gymnax fills it, `terminated`,
        `truncated`, `final_observation` (the observation the step reached, before any reset: the episode's
        last one where it ended, to bootstrap from at a time limit) and `discount` (`1 - terminated`).

        With `legacy_step_api=True` (gymnax 0.0.x, PureJaxRL, purejaxql): `(obs, state, reward, done, info)`
        with `done = terminated | truncated`, `info["discount"] = 1 - done`, and `info["terminated"]` and
        `info["truncated"]` to tell a real end (bootstrap with 0) from a time limit (bootstrap with the value).

        It is `maxatar.AutoReset.step` bit for bit: one uniform draw covers the step and the reset, and the
        sticky action carries over the reset as in MinAtar."""
        self._check_inputs(key, params)
        self._check_action(action)
        return self._step(key, state, action, params, auto_reset=True)

    def reset_env(self, key: jax.Array, params: EnvParams | None = None) -> tuple[jax.Array, EnvState]:
        """gymnax's environment-specific reset; the same as `reset` (gymnax code calls either)."""
        self._check_inputs(key, params)
        return self._reset(key, params)

    def step_env(self, key: jax.Array, state: EnvState, action, params: EnvParams | None = None):
        """gymnax's step without the auto-reset, `(obs, state, reward, terminated, info)`, for code that manages
        episodes itself (evaluation loops): a terminated state stays frozen with reward 0, as in MinAtar. As in
        gymnax 1.x the flag is the game's end and a time limit is `info["truncated"]`; with `legacy_step_api`
        the flag is `done` (either), as in 0.0.x. `info` is `step`'s without `final_observation`."""
        self._check_inputs(key, params)
        self._check_action(action)
        return self._step(key, state, action, params, auto_reset=False)

    def get_obs(self, state: EnvState, params: EnvParams | None = None, key: jax.Array | None = None) -> jax.Array:
        """gymnax's observation of a state (deterministic: `params` and `key` are accepted and ignored)."""
        check_state(self.env, state)
        return self.env.observation(state)

    def is_terminated(self, state: EnvState, params: EnvParams | None = None) -> jax.Array:
        """gymnax 1.x's `is_terminated`: the game has ended (a time limit is not an end: `step` reports it as
        `truncated`)."""
        return state.terminated

    is_terminal = is_terminated  # gymnax 1.x: the same

    def discount(self, state: EnvState, params: EnvParams | None = None) -> jax.Array:
        """gymnax's discount: 0.0 where the game has ended (`is_terminated`), 1.0 otherwise."""
        return jnp.where(self.is_terminated(state, params), 0.0, 1.0).astype(jnp.float32)

    @partial(jax.jit, static_argnums=0)
    def _reset(self, key, params):
        return self.env.reset(key, self._params(params))

    @partial(jax.jit, static_argnums=0, static_argnames="auto_reset")
    def _step(self, key, state, action, params, auto_reset: bool):
        stepper = self.auto if auto_reset else self.env
        obs, state, reward, terminated, truncated, info = stepper.step(key, state, action, self._params(params))
        final_obs = info.pop("final_obs", None)
        done = terminated | truncated
        ended = done if self.legacy_step_api else terminated  # 0.0.x's discount is 0 at a time limit, 1.x's is not
        info = {**info, "discount": 1.0 - ended.astype(jnp.float32), "terminated": terminated, "truncated": truncated}
        if self.legacy_step_api:
            return obs, state, reward, done, info
        if not auto_reset:
            return obs, state, reward, terminated, info
        return obs, state, reward, terminated, truncated, {**info, "final_observation": final_obs}


# --- make -------------------------------------------------------------------------------------------------


def registered_envs() -> list[str]:
    """Every id `make` accepts: gymnax's names, then MaxAtar's own ids."""
    return [*GYMNAX_IDS, *registered_ids(variants=True)]


def make(env_id: str, legacy_step_api: bool = False, **env_kwargs) -> tuple[GymnaxEnv, EnvParams]:
    """gymnax's `make(env_id, **env_kwargs) -> (env, env_params)`, so switching a PureJaxRL script from gymnax
    to MaxAtar is a change of import.

    `env_id` is a gymnax name (`Breakout-MinAtar`, `Asterix-MinAtar`, `Freeway-MinAtar`,
    `SpaceInvaders-MinAtar`, `Seaquest-MinAtar`, `CartPole-v1`) or any id `maxatar.make` takes
    (`maxatar/Doors-v0`, ...). Defaults are MinAtar's setting (sticky 0.1, full action set, ramping, no time
    limit; CartPole: no sticky actions, 500 steps). Keywords:

    * `use_minimal_action_set` (gymnax's name): True for the game's minimal action set (gymnax's default);
      MaxAtar's `full_action_space` is accepted too.
    * `max_steps_in_episode` (gymnax's params field) or `max_steps`: the time limit, reported as truncation
      (0 = none); `sticky_action_prob`, `difficulty_ramping` and a game's own params fields.
    * `setting="gymnax"` (or "pgx"; "minatar" is the default) gives that paper's setting (`maxatar.settings`);
      the keywords above override it.
    * anything else goes to the environment's constructor, as `maxatar.make` does (for example Doors' `size`).

    `GYMNAX_SETTINGS[env_id]` holds the keywords that reproduce gymnax's own defaults (`setting="gymnax"`).

    `legacy_step_api=True` gives gymnax 0.0.x's step API (five values, `done`; see `GymnaxEnv.step`) for code
    written for it, PureJaxRL's and purejaxql's wrappers among it. The params answer to gymnax's field names
    too (`params_class`).
    """
    check_env_id(env_id)
    kwargs = dict(env_kwargs)
    if "use_minimal_action_set" in kwargs:
        minimal = check_flag("use_minimal_action_set", kwargs.pop("use_minimal_action_set"))
        if "full_action_space" in kwargs:
            raise InputError("give use_minimal_action_set or full_action_space, not both")
        kwargs["full_action_space"] = not minimal
    kwargs = _maxatar_names(kwargs)
    legacy_step_api = check_flag("legacy_step_api", legacy_step_api)

    if env_id in GYMNAX_IDS:
        maxatar_id, name = GYMNAX_IDS[env_id], env_id
    elif canonical_name(env_id) in {canonical_name(i) for i in registered_ids(variants=True)}:
        maxatar_id, name = env_id, f"maxatar/{canonical_name(env_id)}"
    else:
        check_registered(env_id, registered_envs())
    env, params = maxatar_make(maxatar_id, **kwargs)
    params = check_scalar_params(params, env)  # the facade's defaults are one environment's (vmap the calls)
    params = _gymnax_params(type(params), vars(params))
    return GymnaxEnv(env, params, name, legacy_step_api), params
