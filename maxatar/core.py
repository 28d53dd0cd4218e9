"""The functional contract shared by every MaxAtar environment.

An environment object holds only static configuration and is hashable, so it can be a static argument to
`jax.jit`. Everything that changes lives in pytrees passed in and out:

* `EnvParams`  values a user may change without recompiling (and may vmap over);
* `EnvState`   the game's own state plus what the wrapper needs (sticky action, step counter, terminal flag);
* `Draws`      the random variates one step consumes, so `transition` is deterministic.

A game implements a handful of hooks (`init`, `game_step`, `game_observation`, and the draw maps) and
inherits `reset`, `step`, `sample_draws`, `transition`, sticky actions, the time limit and auto-reset.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np


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
    """

    sticky_action_prob: Any = 0.1
    difficulty_ramping: Any = True
    max_steps: Any = 0

    def replace(self, **changes) -> EnvParams:
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


_THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _threefry2x32(k0, k1, x0, x1):
    """Threefry-2x32, 20 rounds (Salmon et al. 2011; the parameters JAX uses), written out round by round."""
    keys = (k0, k1, k0 ^ k1 ^ np.uint32(0x1BD11BDA))
    x0, x1 = x0 + keys[0], x1 + keys[1]
    for block in range(5):
        for r in _THREEFRY_ROTATIONS[block % 2]:
            x0 = x0 + x1
            x1 = ((x1 << np.uint32(r)) | (x1 >> np.uint32(32 - r))) ^ x0
        x0 = x0 + keys[(block + 1) % 3]
        x1 = x1 + keys[(block + 2) % 3] + np.uint32(block + 1)
    return x0, x1


def _raw_threefry_key(key) -> jax.Array | None:
    """The (2,) uint32 data of a single threefry key, or None if `key` is of another kind or configuration."""
    if not jax.config.jax_threefry_partitionable:
        return None
    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        if key.shape != () or str(jax.random.key_impl(key)) != "threefry2x32":
            return None
        return jax.random.key_data(key)
    if key.shape != (2,) or key.dtype != jnp.uint32 or jax.config.jax_default_prng_impl != "threefry2x32":
        return None
    return key


def materialize(x: jax.Array) -> jax.Array:
    """x itself, computed once. XLA's CPU backend copies elementwise chains into every consumer fusion (and
    drops optimization barriers before fusing); for a value read by many fusions (a step's uniforms, the
    terminal flag that the reset select of every state field reads) that multiplies the work. A running max
    over (lowest value, x) is a reduce-window, which is not fused into its consumers, so x is materialized."""
    dtype = jnp.dtype(jnp.uint8 if x.dtype == jnp.bool_ else x.dtype)
    lowest = jnp.iinfo(dtype).min if jnp.issubdtype(dtype, jnp.integer) else -jnp.inf
    pair = jnp.stack([jnp.full(x.shape, lowest, dtype), x.astype(dtype)])
    return jax.lax.cummax(pair, axis=0)[1].astype(x.dtype)


def uniform(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """float32 uniforms in [0, 1): bit for bit `jax.random.uniform(key, shape)`, only faster on CPU.

    JAX lowers the threefry hash on CPU as a rolled loop of five rounds, each a few small kernels with copies
    in between; written out in plain `jnp` (the same counters, rounds and mantissa trick as JAX's partitionable
    threefry), XLA fuses the whole hash into one elementwise loop, which halves the cost of a step's draws.
    Keys of another PRNG implementation, or a JAX configured without partitionable threefry, fall back to
    `jax.random.uniform` itself. `tests/test_random.py` proves the equality over many keys and shapes."""
    shape = tuple(int(d) for d in shape)
    size = int(np.prod(shape, dtype=np.int64))
    raw = _raw_threefry_key(key)
    if raw is None or size >= 2**32:
        return jax.random.uniform(key, shape)
    return threefry_uniform(raw[0], raw[1], shape)


def threefry_uniform(k0, k1, shape: tuple[int, ...]) -> jax.Array:
    """`uniform` for the threefry key whose raw words are (k0, k1)."""
    size = int(np.prod(shape, dtype=np.int64))
    counter = jax.lax.iota(jnp.uint32, size).reshape(shape)
    b0, b1 = _threefry2x32(k0, k1, jnp.zeros(shape, jnp.uint32), counter)
    mantissa = ((b0 ^ b1) >> np.uint32(9)) | np.uint32(0x3F800000)
    # Materialized: otherwise XLA would recompute the whole hash inside every fusion that reads a uniform.
    return jax.lax.bitcast_convert_type(materialize(mantissa), jnp.float32) - np.float32(1.0)


def tree_select(pred, on_true, on_false):
    """Branch-free select between two pytrees of identical structure (cheap under vmap)."""
    return jax.tree.map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)


def uniform_to_int(u, low, high):
    """Map a uniform in [0, 1) to an integer in [low, high), like numpy's `randint(low, high)`."""
    n = high - low
    return low + jnp.minimum((u * n).astype(jnp.int32), n - 1)


def float32_ceiling(p):
    """The smallest float32 >= p. For every float32 u, `u < float32_ceiling(p)` iff `u < p` exactly, so the
    float32 sticky draw decides as the reference's float64 `rand() < p` does, whatever p is."""
    p = np.asarray(p, np.float64)
    f = p.astype(np.float32)
    ceiling = np.where(f.astype(np.float64) < p, np.nextafter(f, np.float32(np.inf)), f)
    # XLA on CPU flushes subnormal floats to zero: lift a positive p to the smallest normal float32, which
    # keeps the answer exact (draws are multiples of 2**-24, so none lies between p and that bound).
    return np.where(p > 0, np.maximum(ceiling, np.finfo(np.float32).tiny), ceiling).astype(np.float32)


def check_params(params: EnvParams) -> EnvParams:
    """Validate concrete params at the boundary (traced params pass through untouched), and store the sticky
    probability as its float32 ceiling (see `float32_ceiling`)."""
    checks = [
        ("sticky_action_prob", lambda v: 0.0 <= v <= 1.0, "a probability in [0, 1]"),
        ("max_steps", lambda v: v >= 0 and float(v).is_integer(), "a non-negative integer (0 = no limit)"),
    ]
    for name, ok, expected in checks:
        value = getattr(params, name)
        if isinstance(value, jax.core.Tracer):
            continue
        array = np.asarray(value)
        if array.size and not all(ok(float(v)) for v in array.ravel()):
            raise ValueError(f"{name} must be {expected}, got {value!r}")
    p = params.sticky_action_prob
    if not isinstance(p, jax.core.Tracer):
        ceiling = float32_ceiling(p)
        params = params.replace(sticky_action_prob=float(ceiling) if ceiling.ndim == 0 else jnp.asarray(ceiling))
    return params


class Environment:
    """Base class of every MaxAtar environment; subclasses fill in the game hooks below.

    Class attributes a game sets:
      name                 short name, e.g. "breakout"
      num_game_actions     size of the game's full action set
      minimal_action_set   the game actions of the minimal set (`full_action_space=False`), defaults to all
      params_class         the game's params: `EnvParams` or a subclass adding the game's own runtime params
      obs_shape, obs_dtype the observation's static shape and dtype
      num_reset_uniforms   how many uniforms `reset_draws` consumes
      num_step_uniforms    how many uniforms `step_draws` consumes (the sticky uniform comes on top)
      default_sticky_action_prob / default_max_steps   defaults for `default_params`
      twin                 "module:Class" of the game's plain-Python twin (`maxatar.twins`), or None
    """

    name: ClassVar[str] = "environment"
    num_game_actions: ClassVar[int] = 1
    minimal_action_set: ClassVar[tuple[int, ...] | None] = None
    params_class: ClassVar[type] = EnvParams
    obs_shape: ClassVar[tuple[int, ...]] = ()
    obs_dtype: ClassVar[Any] = jnp.bool_
    num_reset_uniforms: ClassVar[int] = 0
    num_step_uniforms: ClassVar[int] = 0
    default_sticky_action_prob: ClassVar[float] = 0.1
    default_max_steps: ClassVar[int] = 0
    twin: ClassVar[str | None] = None

    def __init__(self, minimal_actions: bool = False):
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
        return len(self.action_set)

    @property
    def num_draws(self) -> int:
        """Uniforms one `step` consumes: the sticky draw plus the game's."""
        return 1 + self.num_step_uniforms

    def default_params(self) -> EnvParams:
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

    def step_draws(self, uniforms: jax.Array, game: Any, params: EnvParams) -> Any:
        """Map `num_step_uniforms` uniforms to the variates one game step consumes (may depend on state)."""
        return ()

    def game_step(self, game: Any, action: jax.Array, draws: Any, params: EnvParams) -> tuple[Any, Any, Any]:
        """One deterministic game step with a full-action-set `action`: (game, reward, terminal)."""
        raise NotImplementedError

    def game_observation(self, game: Any) -> jax.Array:
        raise NotImplementedError

    # --- the functional API ---

    def sample_reset_draws(self, key: jax.Array, params: EnvParams) -> Any:
        return self.reset_draws(uniform(key, (self.num_reset_uniforms,)), params)

    def reset_from_draws(self, draws: Any, params: EnvParams) -> tuple[jax.Array, EnvState]:
        state = EnvState(
            game=self.init(draws, params),
            last_action=jnp.int32(0),
            time=jnp.int32(0),
            terminated=jnp.bool_(False),
        )
        return self.observation(state), state

    def reset_from_uniforms(self, uniforms: jax.Array, params: EnvParams) -> tuple[jax.Array, EnvState]:
        """Reset from `num_reset_uniforms` uniforms (lets a batched caller draw everything in one call)."""
        return self.reset_from_draws(self.reset_draws(uniforms, params), params)

    def reset(self, key: jax.Array, params: EnvParams | None = None) -> tuple[jax.Array, EnvState]:
        params = self.default_params() if params is None else params
        return self.reset_from_draws(self.sample_reset_draws(key, params), params)

    def draws_from_uniforms(self, uniforms: jax.Array, state: EnvState, params: EnvParams) -> Draws:
        """Split a vector of `num_draws` uniforms: the first is the sticky draw, the rest the game's."""
        return Draws(sticky=uniforms[0], game=self.step_draws(uniforms[1:], state.game, params))

    def sample_draws(self, key: jax.Array, state: EnvState, params: EnvParams | None = None) -> Draws:
        params = self.default_params() if params is None else params
        return self.draws_from_uniforms(uniform(key, (self.num_draws,)), state, params)

    def transition(self, state: EnvState, action, draws: Draws, params: EnvParams | None = None):
        """Deterministic step: (obs, state, reward, terminated, truncated, info).

        `action` indexes this environment's action set. Under `jit` an out-of-range action cannot raise:
        it is clipped into range and `info["invalid_action"]` is set, so state is never indexed out of
        bounds. Outside `jit` it raises. A terminated state stays frozen (reward 0), as in MinAtar, but
        the sticky draw is still consumed and the step counter still advances.
        """
        next_state, reward, terminated, truncated, info = self._advance(state, action, draws, params, freeze=True)
        return self.observation(next_state), next_state, reward, terminated, truncated, info

    def _advance(self, state: EnvState, action, draws: Draws, params: EnvParams | None, freeze: bool):
        """`transition` without the observation. `freeze=False` skips keeping a terminated state's game: only
        for callers that replace such a state anyway (`AutoReset`, `make_vec`'s next-step mode)."""
        params = self.default_params() if params is None else params
        action = self._check_action(action)
        invalid = (action < 0) | (action >= self.num_actions)
        table = jnp.asarray(self.action_set, dtype=jnp.int32)
        chosen = table[jnp.clip(action, 0, self.num_actions - 1)]
        repeat = draws.sticky < params.sticky_action_prob
        executed = jnp.where(repeat, state.last_action, chosen).astype(jnp.int32)

        game, reward, terminal = self.game_step(state.game, executed, draws.game, params)
        if freeze:
            game = tree_select(state.terminated, state.game, game)
        reward = jnp.where(state.terminated, 0.0, reward).astype(jnp.float32)
        terminated = state.terminated | terminal
        time = state.time + 1
        truncated = (params.max_steps > 0) & (time >= params.max_steps)
        next_state = EnvState(game=game, last_action=executed, time=time, terminated=terminated)
        return next_state, reward, terminated, truncated, {"invalid_action": invalid}

    def step(self, key: jax.Array, state: EnvState, action, params: EnvParams | None = None):
        """`transition` after `sample_draws`. Does not reset: see `AutoReset`."""
        params = self.default_params() if params is None else params
        action = self._check_action(action)  # before any work, so bad input fails fast
        return self.transition(state, action, self.sample_draws(key, state, params), params)

    def observation(self, state: EnvState) -> jax.Array:
        return self.game_observation(state.game)

    def _check_action(self, action) -> jax.Array:
        if isinstance(action, jax.core.Tracer):
            if not jnp.issubdtype(action.dtype, jnp.integer) or action.shape != ():
                raise TypeError(f"action must be an integer scalar, got {action.dtype}{list(action.shape)}")
            return action.astype(jnp.int32)
        array = np.asarray(action)
        if array.shape != () or not np.issubdtype(array.dtype, np.integer):
            raise TypeError(f"action must be an integer scalar, got {array.dtype}{list(array.shape)}: {action!r}")
        if not 0 <= int(array) < self.num_actions:
            raise ValueError(f"action {int(array)} is outside this environment's actions [0, {self.num_actions})")
        return jnp.int32(array)


class AutoReset:
    """Wraps an environment so that `step` resets finished episodes in the same step (gymnax/PureJaxRL style).

    On a step that terminates or truncates, the returned observation and state are those of a fresh episode,
    while reward, terminated and truncated describe the finished step. With `final_obs=True`,
    `info["final_obs"]` holds the last observation of the finished episode. MinAtar keeps the last executed
    action across resets, so the sticky action carries over too. One uniform vector per step covers both the
    step's and the reset's variates.
    """

    def __init__(self, env: Environment, final_obs: bool = False):
        self.env = env
        self.final_obs = final_obs

    def __getattr__(self, name):
        return getattr(self.env, name)

    def __eq__(self, other):
        return isinstance(other, AutoReset) and (self.env, self.final_obs) == (other.env, other.final_obs)

    def __hash__(self):
        return hash((AutoReset, self.env, self.final_obs))

    @property
    def num_uniforms(self) -> int:
        return self.env.num_draws + self.env.num_reset_uniforms

    def reset(self, key, params=None):
        return self.env.reset(key, params)

    def step(self, key, state, action, params=None):
        env = self.env
        params = env.default_params() if params is None else params
        return self.step_from_uniforms(uniform(key, (self.num_uniforms,)), state, action, params)

    def step_from_uniforms(self, uniforms, state, action, params):
        env = self.env
        draws = env.draws_from_uniforms(uniforms[: env.num_draws], state, params)
        # A terminated input state stays terminated, so it is replaced by the reset state below whether or not
        # its game was frozen; freezing only matters for `final_obs`. Skipping the freeze's select saves XLA
        # from copying the game step into a select per field: Seaquest's HLO is a third smaller and compiles in
        # 25-30% less time (step time within noise).
        state, reward, terminated, truncated, info = env._advance(state, action, draws, params, freeze=self.final_obs)
        _, reset_state = env.reset_from_uniforms(uniforms[env.num_draws :], params)
        reset_state = dataclasses.replace(reset_state, last_action=state.last_action)
        # Select the state first, then build one observation (unused observations are compiled away).
        next_state = tree_select(terminated | truncated, reset_state, state)
        if self.final_obs:
            info = {**info, "final_obs": env.observation(state)}
        return env.observation(next_state), next_state, reward, terminated, truncated, info
