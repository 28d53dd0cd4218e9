"""Gymnasium front end: a `FuncEnv` adapter per environment, `Env` and `VectorEnv` classes, registration.

* `MaxAtarFuncEnv` exposes a MaxAtar environment through Gymnasium's functional API.
* `MaxAtarEnv` (what `gymnasium.make("maxatar/...")` returns) steps with one jitted call and returns numpy.
* `MaxAtarVectorEnv` (what `gymnasium.make_vec` returns) steps all sub-environments, auto-reset included,
  in one jitted call; it supports Gymnasium's next-step, same-step and disabled autoreset modes,
  returns numpy or JAX arrays, and can split its environments over several devices (`devices=`).

Numpy outputs are fresh, writable copies (as Gymnasium's own environments return): changing them never
changes the environment's state.
"""

from __future__ import annotations

import dataclasses
from functools import partial

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
from gymnasium import spaces
from gymnasium.experimental.functional import FuncEnv
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from jax.sharding import Mesh

from maxatar.core import Environment, EnvParams, EnvState, pytree_dataclass, uniform
from maxatar.registry import make, registered_ids
from maxatar.sharding import batch_sharding, check_divisible, make_mesh, replicated, to_numpy

OUTPUTS = ("numpy", "jax")
RENDER_MODES = ["rgb_array", "human"]
RENDER_PLUGIN_GROUP = "maxatar.renderers"


def render_plugin(name: str):
    """Drawing code lives in the `renderers` package, which imports `maxatar` (never the reverse); it is
    found through the `maxatar.renderers` entry-point group: "frame" is a jittable `frame(env, state) ->
    uint8 (H, W, 3)`, "window" a class `Window(title, fps)` with `show(frame)` and `close()`."""
    from importlib.metadata import entry_points

    found = entry_points(group=RENDER_PLUGIN_GROUP, name=name)
    if not found:
        raise RuntimeError(
            f"rendering needs the `renderers` package (entry point {RENDER_PLUGIN_GROUP}:{name} not found); "
            "install MaxAtar with its [render] extra"
        )
    return next(iter(found)).load()


def observation_space(env: Environment) -> spaces.Space:
    """The Gymnasium space of one observation, from the environment's static description."""
    if env.obs_dtype == jnp.bool_:
        return spaces.Box(0, 1, env.obs_shape, dtype=np.bool_)
    if jnp.issubdtype(env.obs_dtype, jnp.integer):
        return spaces.MultiDiscrete(np.full(env.obs_shape, env.obs_nvec), dtype=np.dtype(env.obs_dtype))
    high = np.broadcast_to(np.asarray(getattr(env, "obs_high", np.inf), np.float32), env.obs_shape)
    return spaces.Box(-high, high, dtype=np.float32)


@pytree_dataclass
class StepState:
    """FuncEnv state: the environment's state plus what the transition that produced it returned."""

    env: EnvState
    reward: jax.Array
    truncated: jax.Array


class MaxAtarFuncEnv(FuncEnv):
    """Gymnasium's functional API (`initial`, `transition`, `observation`, `reward`, `terminal`).

    FuncEnv computes the reward from (state, action, next_state); MinAtar's reward comes out of the step,
    so the state carries the last transition's reward and truncation flag.
    """

    def __init__(self, env: Environment, params: EnvParams):
        self.env = env
        self.params = params
        self.observation_space = observation_space(env)
        self.action_space = spaces.Discrete(env.num_actions)
        super().__init__()

    def get_default_params(self, **kwargs) -> EnvParams:
        return self.params

    # Equal environments compare equal, so jitted code keyed on a FuncEnv is shared between instances.
    def __eq__(self, other):
        return isinstance(other, MaxAtarFuncEnv) and self.env == other.env

    def __hash__(self):
        return hash((MaxAtarFuncEnv, self.env))

    def initial(self, rng, params=None) -> StepState:
        _, state = self.env.reset(rng, self.params if params is None else params)
        return StepState(state, jnp.float32(0.0), jnp.bool_(False))

    def transition(self, state: StepState, action, rng, params=None) -> StepState:
        _, env_state, reward, _, truncated, _ = self.env.step(
            rng, state.env, action, self.params if params is None else params
        )
        return StepState(env_state, reward, truncated)

    def observation(self, state: StepState, rng=None, params=None):
        return self.env.observation(state.env)

    def reward(self, state, action, next_state: StepState, rng=None, params=None):
        return next_state.reward

    def terminal(self, state: StepState, rng=None, params=None):
        return state.env.terminated

    def truncated(self, state: StepState, rng=None, params=None):
        return state.truncated


def _check_output(output: str) -> str:
    if output not in OUTPUTS:
        raise ValueError(f"output must be one of {OUTPUTS}, got {output!r}")
    return output


def _check_render_mode(render_mode, metadata) -> None:
    if render_mode is not None and render_mode not in metadata["render_modes"]:
        raise ValueError(f"render_mode must be None or one of {metadata['render_modes']}, got {render_mode!r}")


def _seed_key(seed, np_random: np.random.Generator) -> jax.Array:
    if seed is not None and (not isinstance(seed, (int, np.integer)) or seed < 0):
        raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
    return jax.random.key(int(seed) if seed is not None else int(np_random.integers(2**63)))


class MaxAtarEnv(gymnasium.Env):
    """One environment. Each `step` is one jitted call; observations are numpy (or JAX with output="jax").

    Keyword arguments are those of `maxatar.make` (`sticky_action_prob`, `difficulty_ramping`, `max_steps`,
    constructor options such as Doors' `size`).
    """

    metadata = {"render_modes": RENDER_MODES, "render_fps": 15}

    def __init__(self, env_id: str, render_mode: str | None = None, output: str = "numpy", **kwargs):
        _check_render_mode(render_mode, self.metadata)
        self.env_id = env_id
        self.render_mode = render_mode
        self.output = _check_output(output)
        env, params = make(env_id, **kwargs)
        self.func_env = MaxAtarFuncEnv(env, params)
        self.observation_space = self.func_env.observation_space
        self.action_space = self.func_env.action_space
        self._key: jax.Array | None = None
        self._state: StepState | None = None
        self._frame_fn = None
        self._window = None

    @property
    def params(self) -> EnvParams:
        return self.func_env.params

    def _out(self, x):
        return np.array(x) if self.output == "numpy" else x  # a writable copy, never a view of the device buffer

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None or self._key is None:
            self._key = _seed_key(seed, self.np_random)
        self._key, self._state, obs = _single_reset(self.func_env, self._key, self.params)
        if self.render_mode == "human":
            self.render()
        return self._out(obs), {}

    def step(self, action):
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        action = _check_action(action, self.action_space.n)
        self._key, self._state, (obs, reward, terminated, truncated) = _single_step(
            self.func_env, self._key, self._state, action, self.params
        )
        if self.render_mode == "human":
            self.render()
        if self.output == "jax":
            return obs, reward, terminated, truncated, {}
        return np.array(obs), float(reward), bool(terminated), bool(truncated), {}

    def render(self):
        """rgb_array: the current frame as uint8 (H, W, 3); human: show it in a pygame window."""
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode; pass render_mode= to gymnasium.make")
            return None
        if self._state is None:
            raise RuntimeError("call reset() before render()")
        if self._frame_fn is None:
            frame = render_plugin("frame")
            self._frame_fn = jax.jit(lambda state: frame(self.func_env.env, state))
        image = np.array(self._frame_fn(self._state.env))  # writable copy
        if self.render_mode == "rgb_array":
            return image
        if self._window is None:
            self._window = render_plugin("window")(title=self.env_id, fps=self.metadata["render_fps"])
        self._window.show(image)
        return None

    def close(self):
        if self._window is not None:
            self._window.close()
            self._window = None
        super().close()

    @property
    def state(self) -> EnvState | None:
        """The current pure state (for inspection and rendering)."""
        return None if self._state is None else self._state.env


@partial(jax.jit, static_argnums=0)
def _single_reset(f: MaxAtarFuncEnv, key, params):
    key, sub = jax.random.split(key)
    state = f.initial(sub, params)
    return key, state, f.observation(state)


@partial(jax.jit, static_argnums=0)
def _single_step(f: MaxAtarFuncEnv, key, state, action, params):
    """Gymnasium's step as one call: transition, then the observation, reward and flags it implies."""
    key, sub = jax.random.split(key)
    next_state = f.transition(state, action, sub, params)
    return (
        key,
        next_state,
        (
            f.observation(next_state),
            f.reward(state, action, next_state),
            f.terminal(next_state),
            f.truncated(next_state),
        ),
    )


def _check_action(action, n: int) -> np.int32:
    array = np.asarray(action)
    if array.shape != () or not (np.issubdtype(array.dtype, np.integer)):
        raise TypeError(f"action must be an integer scalar in [0, {n}), got {action!r}")
    if not 0 <= int(array) < n:
        raise ValueError(f"action {int(array)} is outside the action space Discrete({n})")
    return np.int32(array)


def _check_actions(actions, num_envs: int, n: int):
    """Validate a batch of actions. JAX arrays are checked for shape and dtype without a device sync;
    out-of-range values in them are clipped inside the step (see `Environment.transition`)."""
    if isinstance(actions, jax.Array):
        if actions.shape != (num_envs,) or not jnp.issubdtype(actions.dtype, jnp.integer):
            raise TypeError(f"actions must be integers of shape ({num_envs},), got {actions.dtype}{actions.shape}")
        return actions
    array = np.asarray(actions)
    if array.shape != (num_envs,) or not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"actions must be integers of shape ({num_envs},), got {array.dtype}{array.shape}")
    if array.size and (array.min() < 0 or array.max() >= n):
        bad = array[(array < 0) | (array >= n)]
        raise ValueError(f"actions {bad.tolist()} are outside the action space Discrete({n})")
    return array.astype(np.int32)


class MaxAtarVectorEnv(VectorEnv):
    """`num_envs` environments stepped together; the whole step, auto-reset included, is one jitted call.

    autoreset_mode: Gymnasium's `AutoresetMode` (or its string value).
      NEXT_STEP (default): the step after an episode ends resets that sub-environment (action ignored,
        reward 0, flags False), as Gymnasium's own vector environments do.
      SAME_STEP: the finished sub-environment resets within the step; `info["final_obs"]` holds its last
        observation and `info["_final_obs"]` marks which entries are meaningful.
      DISABLED: no auto-reset; reset chosen sub-environments with `reset(options={"reset_mask": mask})`.
    output: "numpy" (default; fresh writable arrays, gathered from the devices once per step) or "jax" to
      keep the results on the device(s), sharded as the state is.
    devices: None (default: one device), "all" (every local device), an int N (the first N local devices)
      or a list of devices. The sub-environments are split evenly over a 1-D mesh of those devices
      (`maxatar.sharding`); `num_envs` must be a multiple of the device count (else `ValueError`). Params
      and the step's key are replicated. Results equal the single-device ones bit for bit.
    Sub-environment i is independent of the others; `reset(seed=s)` makes the whole batch reproducible.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 15, "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        env_id: str,
        num_envs: int,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        output: str = "numpy",
        render_mode: str | None = None,
        devices=None,
        **kwargs,
    ):
        if not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        self.mesh = None if devices is None else make_mesh(devices)
        if self.mesh is not None:
            check_divisible(int(num_envs), self.mesh, "num_envs")
        autoreset_mode = _parse_autoreset_mode(autoreset_mode)
        _check_render_mode(render_mode, self.metadata)
        self.env_id = env_id
        self.num_envs = int(num_envs)
        self.autoreset_mode = autoreset_mode
        self.output = _check_output(output)
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "autoreset_mode": autoreset_mode}
        self.env, self.params = make(env_id, **kwargs)
        self.single_observation_space = observation_space(self.env)
        self.single_action_space = spaces.Discrete(self.env.num_actions)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._key: jax.Array | None = None
        self._state: EnvState | None = None
        self._pending = None  # next-step mode: sub-environments whose episode ended on the last step
        self._spec = _VectorSpec(self.env, self.num_envs, self.autoreset_mode, self.mesh)
        self._placed_params: tuple[EnvParams, EnvParams] | None = None  # (params, their replicated copy)

    @property
    def devices(self) -> list:
        """The devices the sub-environments are split over."""
        return [jax.local_devices()[0]] if self.mesh is None else list(self.mesh.devices.flat)

    def _params(self) -> EnvParams:
        """The params as the jitted step takes them: replicated over the mesh when there is one."""
        if self.mesh is None:
            return self.params
        if self._placed_params is None or self._placed_params[0] is not self.params:
            self._placed_params = (self.params, jax.device_put(self.params, replicated(self.mesh)))
        return self._placed_params[1]

    def _batch(self, x):
        """Put a per-sub-environment input on the mesh (a no-op without one)."""
        return x if self.mesh is None else jax.device_put(x, batch_sharding(self.mesh))

    # --- Gymnasium API ---

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None or self._key is None:
            self._key = _seed_key(seed, self.np_random)
            if self.mesh is not None:
                self._key = jax.device_put(self._key, replicated(self.mesh))
        mask = (options or {}).get("reset_mask")
        if mask is not None:
            mask = np.asarray(mask)
            if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
                raise ValueError(f"reset_mask must be a bool array of shape ({self.num_envs},), got {mask!r}")
            if self._state is None:
                raise RuntimeError("reset() once without reset_mask before resetting selected sub-environments")
            mask = self._batch(mask)
        state, pending = (self._state, self._pending) if mask is not None else (None, None)
        self._key, self._state, self._pending, obs = _vector_reset(
            self._spec, self._key, state, pending, mask, self._params()
        )
        return self._out(obs), {}

    def step(self, actions):
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        if self.autoreset_mode == AutoresetMode.DISABLED and bool(jnp.any(self._pending)):
            raise RuntimeError(
                "autoreset is disabled and some sub-environments have finished: "
                "reset them with reset(options={'reset_mask': mask}) first"
            )
        actions = self._batch(_check_actions(actions, self.num_envs, self.single_action_space.n))
        self._key, self._state, self._pending, results, info = _vector_step(
            self._spec, self._key, self._state, self._pending, actions, self._params()
        )
        (obs, reward, terminated, truncated), info = self._out((results, info))  # one gather for everything
        return obs, reward, terminated, truncated, info

    def _out(self, tree):
        return to_numpy(tree) if self.output == "numpy" else tree

    def render(self):
        """rgb_array: a tuple with one uint8 (H, W, 3) frame per sub-environment, as Gymnasium's vector envs."""
        if self.render_mode is None or self._state is None:
            return None
        if not hasattr(self, "_frames_fn"):
            frame = render_plugin("frame")
            self._frames_fn = jax.jit(jax.vmap(lambda state: frame(self.env, state)))
        return tuple(np.array(self._frames_fn(self._state)))

    @property
    def state(self) -> EnvState | None:
        """The current batched pure state."""
        return self._state


@dataclasses.dataclass(frozen=True)
class _VectorSpec:
    """The static part of a vector environment: jitted code is compiled once per spec."""

    env: Environment
    num_envs: int
    autoreset_mode: AutoresetMode
    mesh: Mesh | None = None  # split the sub-environments over this mesh's devices


def _split(spec: _VectorSpec, tree):
    """Inside the jitted step: keep per-sub-environment arrays split over the mesh (no-op without one)."""
    return tree if spec.mesh is None else jax.lax.with_sharding_constraint(tree, batch_sharding(spec.mesh))


def _whole(spec: _VectorSpec, tree):
    """Inside the jitted step: keep shared values (the key) replicated over the mesh (no-op without one)."""
    return tree if spec.mesh is None else jax.lax.with_sharding_constraint(tree, replicated(spec.mesh))


@partial(jax.jit, static_argnums=0)
def _vector_reset(spec: _VectorSpec, key, state, pending, mask, params):
    """Reset every sub-environment, or (given a state and a mask) only the masked ones."""
    key, sub = jax.random.split(key)
    keys = _split(spec, jax.random.split(sub, spec.num_envs))
    obs, fresh = jax.vmap(spec.env.reset, in_axes=(0, None))(keys, params)
    if state is None:
        pending = jnp.zeros(spec.num_envs, bool)
    else:  # partial reset: keep the others, and MinAtar's sticky action everywhere
        fresh = dataclasses.replace(fresh, last_action=state.last_action)
        obs = jnp.where(_expand(mask, obs), obs, jax.vmap(spec.env.observation)(state))
        fresh = _select(mask, fresh, state)
        pending = pending & ~mask
    return _whole(spec, key), *_split(spec, (fresh, pending, obs))


@partial(jax.jit, static_argnums=0)
def _vector_step(spec: _VectorSpec, key, state, pending, actions, params):
    """The whole vector step, auto-reset included, as one call. All variates come from one uniform draw."""
    env, num_draws = spec.env, spec.env.num_draws
    key, sub = jax.random.split(key)
    key = _whole(spec, key)
    # `uniform` gives jax.random.uniform's bits (partitionable threefry: the same values however the rows are
    # split over devices), written out so that XLA fuses the hash on CPU.
    uniforms = _split(spec, uniform(sub, (spec.num_envs, num_draws + env.num_reset_uniforms)))
    draws = jax.vmap(env.draws_from_uniforms, in_axes=(0, 0, None))(uniforms[:, :num_draws], state, params)
    # NEXT_STEP replaces a finished state (it is pending) before using it, so it skips the freeze's select (as
    # AutoReset does); the other modes hand the stepped state or its observation to the user.
    advance = jax.vmap(partial(env._advance, freeze=spec.autoreset_mode != AutoresetMode.NEXT_STEP), (0, 0, 0, None))
    stepped, reward, terminated, truncated, _ = advance(state, actions, draws, params)
    obs = jax.vmap(env.observation)(stepped)  # compiled away where unused (NEXT_STEP)
    if spec.autoreset_mode == AutoresetMode.DISABLED:
        return key, *_split(spec, (stepped, terminated | truncated, (obs, reward, terminated, truncated), {}))

    fresh = jax.vmap(env.reset_from_uniforms, in_axes=(0, None))(uniforms[:, num_draws:], params)[1]
    observe = jax.vmap(env.observation)  # once, on the selected state; unused observations compile away
    if spec.autoreset_mode == AutoresetMode.SAME_STEP:
        done = terminated | truncated
        fresh = dataclasses.replace(fresh, last_action=stepped.last_action)  # MinAtar keeps it across resets
        next_state = _select(done, fresh, stepped)
        info = {"final_obs": obs, "_final_obs": done, "final_info": {}, "_final_info": done}
        results = (observe(next_state), reward, terminated, truncated)
        return key, *_split(spec, (next_state, pending, results, info))

    # NEXT_STEP: a sub-environment whose episode ended on the previous step resets now, ignoring its action.
    fresh = dataclasses.replace(fresh, last_action=state.last_action)
    next_state = _select(pending, fresh, stepped)
    reward = jnp.where(pending, 0.0, reward)
    terminated, truncated = terminated & ~pending, truncated & ~pending
    results = (observe(next_state), reward, terminated, truncated)
    return key, *_split(spec, (next_state, terminated | truncated, results, {}))


def _parse_autoreset_mode(mode) -> AutoresetMode:
    """An `AutoresetMode`, its value ("NextStep") or snake case ("next_step")."""
    if isinstance(mode, AutoresetMode):
        return mode
    by_name = {m.value.lower(): m for m in AutoresetMode}
    key = str(mode).replace("_", "").lower()
    if key not in by_name:
        raise ValueError(f"autoreset_mode must be one of {[m.value for m in AutoresetMode]}, got {mode!r}")
    return by_name[key]


def _expand(mask, like):
    """Reshape a per-environment mask to broadcast against a batched array."""
    return mask.reshape(mask.shape + (1,) * (like.ndim - 1))


def _select(mask, on_true, on_false):
    """Per-environment select between two batched pytrees."""
    return jax.tree.map(lambda a, b: jnp.where(_expand(mask, a), a, b), on_true, on_false)


def register_envs() -> None:
    """Register every MaxAtar id with Gymnasium (idempotent). Importing `maxatar` calls this."""
    for env_id in registered_ids():
        if env_id in gymnasium.registry:
            continue
        gymnasium.register(
            id=env_id,
            entry_point="maxatar.gym_api:MaxAtarEnv",
            vector_entry_point="maxatar.gym_api:MaxAtarVectorEnv",
            kwargs={"env_id": env_id},
        )


__all__ = ["MaxAtarEnv", "MaxAtarFuncEnv", "MaxAtarVectorEnv", "StepState", "observation_space", "register_envs"]
