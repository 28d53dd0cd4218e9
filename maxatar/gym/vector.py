"""`MaxAtarVectorEnv`: what `gymnasium.make_vec("maxatar/...", num_envs)` returns; every sub-environment, auto-reset
included (`maxatar.episode`), in one jitted call, or one twin after another for a few of them."""

from __future__ import annotations

import dataclasses
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from jax.sharding import Mesh

from maxatar.checks import (
    InputError,
    actions_outside,
    check_actions,
    check_num_envs,
    check_scalar_params,
    check_seed,
)
from maxatar.core import (
    Environment,
    EnvParams,
    EnvState,
    tree_select,
)
from maxatar.episode import (
    TwinEnv,
    autoreset,
    ended_on_load,
    in_groups,
    reset_batch,
    reset_part,
    reset_twins,
    same_step_info,
)
from maxatar.gym.backend import (
    TaskClock,
    check_output,
    check_render_mode,
    pick_twin,
    render_plugin,
    tape_seed,
)
from maxatar.gym.functional import observation_space
from maxatar.memory import check_fits, nbytes
from maxatar.registry import make
from maxatar.reset_options import DIFFICULTY, RESET_MASK, STATE, check_level, check_state, parse, state_spec
from maxatar.sharding import batch_sharding, check_divisible, make_mesh, replicated, to_numpy
from maxatar.tape import Tape, seed_key, tape_row
from maxatar.twin import Twin, load_twin


class MaxAtarVectorEnv(VectorEnv):
    """`num_envs` environments stepped together.

    autoreset_mode: Gymnasium's `AutoresetMode` (or its string value).
      NEXT_STEP (default): the step after an episode ends resets that sub-environment (action ignored,
        reward 0, flags False), as Gymnasium's own vector environments do.
      SAME_STEP: the finished sub-environment resets within the step; `info["final_obs"]` holds its last
        observation and `info["_final_obs"]` marks which entries are meaningful.
      DISABLED: no auto-reset; reset chosen sub-environments with `reset(options={"reset_mask": mask})`.
    output: "numpy" (default; fresh writable arrays, gathered from the devices once per step) or "jax" to
      keep the results on the device(s), sharded as the state is.
    backend: "jax" steps every sub-environment, auto-reset included, in one jitted call; "python" steps
      them one by one with the games' plain-Python twins, which is faster when there are few of them
      (JAX's per-call dispatch dominates there); "auto" (default) takes "python" for numpy output, one
      device and at most `PYTHON_MAX_ENVS` sub-environments, "jax" otherwise. Both play the same episodes
      for a seed (see `MaxAtarEnv`).
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
        backend: str = "auto",
        **kwargs,
    ):
        num_envs = check_num_envs(num_envs)
        self.mesh = None if devices is None else make_mesh(devices)
        if self.mesh is not None:
            check_divisible(int(num_envs), self.mesh, "num_envs")
        autoreset_mode = _parse_autoreset_mode(autoreset_mode)
        check_render_mode(render_mode, self.metadata)
        self.env_id = env_id
        self.num_envs = int(num_envs)
        self.autoreset_mode = autoreset_mode
        self.output = check_output(output)
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "autoreset_mode": autoreset_mode}
        self.env, self.params = make(env_id, **kwargs)
        self.params = check_scalar_params(self.params, self.env)  # one set for all: batched params are refused
        self._clock = TaskClock.of(self.env, kwargs)  # a continual environment's schedule, unless task= fixes it
        if self._clock is not None:
            self.params = self._clock.params(self.params)
        self._multi_game = hasattr(self.env, "task_info")  # its steps report their task (`MultiGame.task_info`)
        self._boundary = True  # the next step is the task's first
        self._spec = _VectorSpec(self.env, self.num_envs, self.autoreset_mode, self.mesh)
        self.single_observation_space = observation_space(self.env)
        twin = pick_twin(backend, self.output, env_id, self.env, self.params, self.num_envs, self.mesh)
        check_fits(
            held_bytes(self._spec, self.params, self.single_observation_space, self.output, twin),
            f"num_envs={self.num_envs} of {env_id} (states, observations, spaces)",
            "use fewer sub-environments, or split them over several vector environments",
            None if twin is not None else self.devices,  # the twins live on the host
        )
        self.single_action_space = spaces.Discrete(self.env.num_actions)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.backend = "jax" if twin is None else "python"
        self._twins = None if twin is None else self._make_twins(twin)
        self._tape: Tape | None = None
        self._state: EnvState | None = None  # the JAX backend's batched state
        self._pending = None  # sub-environments whose episode ended on the last step (next-step and disabled modes)
        self._placed_params: tuple[EnvParams, EnvParams] | None = None  # (params, their replicated copy)
        self._previous = None  # the JAX backend's state before its last step with JAX actions (`_step_device`)

    def _make_twins(self, twin) -> list[TwinEnv]:
        """One twin per sub-environment, each with its group's params in a batch spread over tasks."""
        groups = self.env.mixed_groups(self.num_envs, self.params)
        if groups is None:
            return [TwinEnv(self.env, self.params, twin) for _ in range(self.num_envs)]
        return [TwinEnv(self.env, p, load_twin(self.env, p)) for p, a, b in groups for _ in range(a, b)]

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
        """Gymnasium's reset: `(obs, {})`. Without `reset_mask` every sub-environment starts afresh (a seed, or
        the first reset, also starts a new tape); `options={"reset_mask": mask}` resets only the masked ones,
        which keep their sticky action as in MinAtar. `state` (one `EnvState` for all, or a batch with one per
        sub-environment) and `difficulty` (one level, or one per sub-environment) apply to the sub-environments
        being reset, for this reset only (`maxatar.make(..., difficulty=k)` sets the level of every episode)."""
        seed = check_seed(seed)
        options = parse(options, (RESET_MASK, STATE, DIFFICULTY))
        mask = options.get(RESET_MASK)
        start = None if options.get(STATE) is None else check_state(self.env, options[STATE], self.num_envs)
        levels = None if options.get(DIFFICULTY) is None else check_level(self.env, options[DIFFICULTY], self.num_envs)
        if mask is not None:
            mask = np.asarray(mask)
            if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
                raise InputError(f"reset_mask must be a bool array of shape ({self.num_envs},), got {mask!r}")
            if self._tape is None:
                raise RuntimeError("reset() once without reset_mask before resetting selected sub-environments")
        super().reset(seed=seed)
        if seed is not None or self._tape is None:
            key = tape_seed(seed, self.np_random)
            if self.mesh is not None:
                key = jax.device_put(seed_key(key), replicated(self.mesh))
            self._tape = Tape(key, self._spec.row_shape)
        if self._twins is not None:
            return self._reset_python(mask, levels, start), {}
        state, pending = (self._state, self._pending) if mask is not None else (None, None)
        self._state, self._pending, obs = _vector_reset(
            self._spec,
            self._tape.key,
            self._tape.next_call(),
            state,
            pending,
            None if mask is None else self._batch(mask),
            self._params(),
            None if levels is None else self._batch(levels),
        )
        if start is not None:
            chosen = np.ones(self.num_envs, bool) if mask is None else mask
            self._state, obs = _vector_load(self._spec, self._state, self._batch(start), self._batch(chosen))
            self._pending = self._pending | self._batch(ended_on_load(self.autoreset_mode, start, mask))
        return self._out(obs), {}

    def step(self, actions):
        """Gymnasium's vector step, auto-reset as `autoreset_mode` says: `(obs, reward, terminated, truncated,
        info)`, one entry per sub-environment."""
        if self._tape is None:
            raise RuntimeError("call reset() before step()")
        if self.autoreset_mode == AutoresetMode.DISABLED and bool(np.any(self._pending)):
            raise RuntimeError(
                "autoreset is disabled and some sub-environments have finished: "
                "reset them with reset(options={'reset_mask': mask}) first"
            )
        if self._twins is not None:  # the twins index the action set: validate every value on the host
            actions = check_actions(np.asarray(actions), self.num_envs, self.single_action_space.n)
            return self._tasks(*self._step_python(actions.tolist()))
        actions = check_actions(actions, self.num_envs, self.single_action_space.n, read_device=False)
        if isinstance(actions, jax.Array):  # its values are checked inside the step
            return self._tasks(*self._step_device(actions))
        self._state, self._pending, results, info = _vector_step(*self._step_inputs(actions))
        (obs, reward, terminated, truncated), info = self._out((results, info))  # one gather for everything
        return self._tasks(obs, reward, terminated, truncated, info)

    def _tasks(self, obs, reward, terminated, truncated, info):
        """A step's results with a multi-game environment's task info (`task_info`); where its frames end a stage
        of the schedule (`TaskClock`), every sub-environment's episode is cut (truncated) and the next task is
        played from the next reset: the next step in NEXT_STEP mode, this one in SAME_STEP mode (the cut
        observations go to `info["final_obs"]`), the caller's in DISABLED mode."""
        if not self._multi_game:
            return obs, reward, terminated, truncated, info
        info = {**info, **self.env.task_info(self.env.env_tasks(self.num_envs, self.params), self._boundary)}
        self._boundary = False
        if self._clock is None or not self._clock.tick(self.num_envs):
            return obs, reward, terminated, truncated, info
        truncated = truncated | True
        self.params = self._clock.params(self.params)
        self._boundary = True
        if self._twins is not None:  # new twins: a new task starts afresh, from action 0
            self._twins = self._make_twins(load_twin(self.env, self.params))
        else:
            self._state = dataclasses.replace(self._state, last_action=jnp.zeros_like(self._state.last_action))
        if self.autoreset_mode != AutoresetMode.SAME_STEP:
            self._pending = (
                np.ones(self.num_envs, bool) if self._twins is not None else self._batch(np.ones(self.num_envs, bool))
            )
            return obs, reward, terminated, truncated, info
        final = info["final_obs"] if "final_obs" in info else obs
        ended = info["_final_obs"] if "_final_obs" in info else np.zeros(self.num_envs, bool)
        xp = jnp if isinstance(obs, jax.Array) else np
        final = xp.where(xp.reshape(ended, (-1,) + (1,) * (obs.ndim - 1)), final, obs)
        obs, _ = self.reset()
        return obs, reward, terminated, truncated, {**info, **same_step_info(final, np.ones(self.num_envs, bool))}

    def _step_inputs(self, actions) -> tuple:
        """The jitted step's arguments, taking the next tape call."""
        call = self._tape.next_call()
        return self._spec, self._tape.key, call, self._state, self._pending, self._batch(actions), self._params()

    def _step_device(self, actions: jax.Array):
        """The JAX backend's step with a JAX array of actions, whose values the jitted step checks (reading them on
        the host first would wait for the device on every step, for actions a policy computes there): with numpy
        output the flags come back in the one gather of the results, and an out-of-range action raises before
        the step is committed (state and tape as they were), as on the Python backend; with JAX output nothing
        waits for the device, so such an action is clipped and flagged in `info["invalid_action"]`, as under
        `jit` (`Environment.transition`). The state is replaced at once and the previous one kept until the next
        step, to restore on a refusal: dropping it only after the gather, or selecting it inside the call,
        measured 25 to 50 us per step slower on CPU."""
        previous = self._state, self._pending, self._tape.position
        self._state, self._pending, results, info, invalid = _vector_step_flagged(*self._step_inputs(actions))
        if self.output == "jax":
            return *results, {**info, "invalid_action": invalid}
        self._previous = previous  # the one before is dropped here, while the device computes
        (obs, reward, terminated, truncated), info, invalid = self._out((results, info, invalid))
        if invalid.any():
            self._state, self._pending, self._tape.position = previous
            raise actions_outside(np.asarray(actions), self.single_action_space.n)
        return obs, reward, terminated, truncated, info

    # --- the Python backend: the same protocol (`maxatar.episode`) as `_vector_reset` and `_vector_step`, one twin
    # at a time

    def _reset_python(self, mask, levels, start) -> np.ndarray:
        self._pending = reset_twins(self._twins, self._tape.next_row(), self._pending, levels, mask)
        if start is not None:
            start = jax.device_get(start)  # numpy leaves, in one transfer
            for i in range(self.num_envs) if mask is None else np.flatnonzero(mask).tolist():
                self._twins[i].load(jax.tree.map(lambda leaf, i=i: leaf[i], start))
            self._pending = self._pending | ended_on_load(self.autoreset_mode, start, mask)
        return np.stack([twin.obs for twin in self._twins])

    def _step_python(self, actions: list):
        rows = self._tape.next_row()
        n = self.num_envs
        reward, terminated, truncated = np.zeros(n, np.float32), np.zeros(n, bool), np.zeros(n, bool)
        pending, obs, final_obs = np.zeros(n, bool), [None] * n, [None] * n
        for i, (twin, row, action) in enumerate(zip(self._twins, rows, actions, strict=True)):
            pending[i], obs[i], reward[i], terminated[i], truncated[i], final_obs[i] = twin.autoreset_step(
                self.autoreset_mode, self._pending[i], action, row
            )
        self._pending = pending
        info = {}
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            info = same_step_info(np.stack(final_obs), terminated | truncated)
        return np.stack(obs), reward, terminated, truncated, info

    def _out(self, tree):
        return to_numpy(tree) if self.output == "numpy" else tree

    def render(self):
        """rgb_array: a tuple with one uint8 (H, W, 3) frame per sub-environment, as Gymnasium's vector envs."""
        if self.render_mode is None or self._tape is None:
            return None
        if not hasattr(self, "_frames_fn"):
            frame = render_plugin("frame")
            self._frames_fn = jax.jit(jax.vmap(lambda state: frame(self.env, state)))
        return tuple(np.array(self._frames_fn(self.state)))

    @property
    def state(self) -> EnvState | None:
        """The current batched pure state, whichever backend steps."""
        if self._twins is None or self._tape is None:
            return self._state
        return jax.tree.map(lambda *leaves: jnp.stack(leaves), *[twin.pure_state() for twin in self._twins])


@dataclasses.dataclass(frozen=True)
class _VectorSpec:
    """The static part of a vector environment: jitted code is compiled once per spec."""

    env: Environment
    num_envs: int
    autoreset_mode: AutoresetMode
    mesh: Mesh | None = None  # split the sub-environments over this mesh's devices

    @property
    def row_shape(self) -> tuple[int, int]:
        """A tape row: each sub-environment's step draws, then its reset draws."""
        return (self.num_envs, self.env.num_auto_reset_uniforms)


def _split(spec: _VectorSpec, tree):
    """Inside the jitted step: keep per-sub-environment arrays split over the mesh (no-op without one)."""
    return tree if spec.mesh is None else jax.lax.with_sharding_constraint(tree, batch_sharding(spec.mesh))


@partial(jax.jit, static_argnums=0)
def _vector_reset(spec: _VectorSpec, key, call, state, pending, mask, params, levels=None):
    """Reset every sub-environment, or (given a state and a mask) only the masked ones, from tape row `call`;
    at the params' difficulty, or at `levels` (one per sub-environment) where given."""
    # `tape_row` hashes each uniform from its own counter (the same values however the rows are split over
    # devices), written out so that XLA fuses the hash on CPU.
    rows = _split(spec, tape_row(key, call, spec.row_shape))

    def reset_rows(params, rows, levels, state, pending, mask):
        return reset_batch(spec.env, reset_part(spec.env, rows, params), params, levels, state, pending, mask)

    groups = spec.env.mixed_groups(spec.num_envs, params)  # a batch spread over tasks: each group with its own
    return _split(spec, in_groups(groups, reset_rows, params, rows, levels, state, pending, mask))


@partial(jax.jit, static_argnums=0)
def _vector_load(spec: _VectorSpec, state, start, chosen):
    """The chosen sub-environments continue from the given start states: (state, observation)."""
    state = _select(chosen, start, state)
    return _split(spec, (state, jax.vmap(spec.env.observation)(state)))


def _step_all(spec: _VectorSpec, key, call, state, pending, actions, params):
    """The whole vector step, auto-reset included (`maxatar.episode.autoreset`), from tape row `call`: (state,
    pending, results, info, each sub-environment's invalid-action flag)."""
    uniforms = _split(spec, tape_row(key, call, spec.row_shape))
    same_step = spec.autoreset_mode == AutoresetMode.SAME_STEP
    step = partial(autoreset, spec.env, spec.autoreset_mode, final_obs=same_step)
    batched = jax.vmap(step, (0, 0, 0, 0, None))
    state, pending, obs, reward, terminated, truncated, step_info = in_groups(
        spec.env.mixed_groups(spec.num_envs, params),
        lambda p, s, pe, a, u: batched(s, pe, a, u, p),
        params,
        state,
        pending,
        actions,
        uniforms,
    )
    info = same_step_info(step_info["final_obs"], terminated | truncated) if same_step else {}
    return _split(spec, (state, pending, (obs, reward, terminated, truncated), info, step_info["invalid_action"]))


# One call per step: without the flags for actions checked on the host, with them for a JAX array's
# (`MaxAtarVectorEnv._step_device`); an unused output is compiled away.
_vector_step = partial(jax.jit, static_argnums=0)(lambda *args: _step_all(*args)[:4])
_vector_step_flagged = partial(jax.jit, static_argnums=0)(_step_all)


def _parse_autoreset_mode(mode) -> AutoresetMode:
    """An `AutoresetMode`, its value ("NextStep") or snake case ("next_step")."""
    if isinstance(mode, AutoresetMode):
        return mode
    by_name = {m.value.lower(): m for m in AutoresetMode}
    key = str(mode).replace("_", "").lower()
    if key not in by_name:
        raise InputError(f"autoreset_mode must be one of {[m.value for m in AutoresetMode]}, got {mode!r}")
    return by_name[key]


# The Python backend holds each game as Python objects: at most this many times its pure state's bytes over the
# games with a twin (`tests/test_memory.py` measures it).
PYTHON_STATE_FACTOR = 64


def held_bytes(spec: _VectorSpec, params: EnvParams, space: spaces.Space, output: str, twin: Twin | None) -> int:
    """What a vector environment will hold while it steps, from shapes, before anything is allocated: the
    batched observation space's bounds, and on the JAX backend (`jax.eval_shape` of its step, whose trace the
    first step reuses) the batched state before and after a step (the previous one is kept), the step's outputs
    and tape row, and their two copies on the host (the transfer and its writable copy) for numpy output; on the
    Python backend, what one twin holds (`PYTHON_STATE_FACTOR`) and four observations per sub-environment (the
    twin's, the stacked output, a final one and its stack)."""
    n = spec.num_envs
    bounds = n * sum(v.nbytes for v in vars(space).values() if isinstance(v, np.ndarray))
    if twin is not None:
        one = TwinEnv(spec.env, params, twin)
        one.reset([0.5] * spec.env.num_auto_reset_uniforms)
        return n * (PYTHON_STATE_FACTOR * nbytes(one.numpy_state()) + 4 * one.obs.nbytes) + bounds
    batched = lambda s: jax.ShapeDtypeStruct((n, *s.shape), s.dtype)  # noqa: E731
    state = jax.tree.map(batched, state_spec(spec.env))
    pending, actions = jax.ShapeDtypeStruct((n,), bool), jax.ShapeDtypeStruct((n,), jnp.int32)
    outputs = _vector_step.eval_shape(spec, seed_key(0), np.uint32(0), state, pending, actions, params)
    row = jax.ShapeDtypeStruct(spec.row_shape, jnp.float32)
    host = 2 * nbytes(outputs[2:4]) if output == "numpy" else 0
    return nbytes(state, pending, actions, outputs, row) + host + bounds


# Per-sub-environment select between two batched pytrees: `mask[i]` picks sub-environment i's leaves.
_select = jax.vmap(tree_select)
