"""`MaxAtarEnv`: one environment, what `gymnasium.make("maxatar/...")` returns (the Python twin or one jitted call
per step, numpy or JAX outputs)."""

from __future__ import annotations

from functools import partial

import gymnasium
import jax
import numpy as np

from maxatar.checks import (
    check_action,
    check_scalar_params,
    check_seed,
)
from maxatar.core import (
    Environment,
    EnvParams,
    EnvState,
)
from maxatar.episode import TwinEnv, reset_part, restart
from maxatar.gym.backend import (
    RENDER_MODES,
    TaskClock,
    check_output,
    check_render_mode,
    pick_twin,
    render_plugin,
    tape_seed,
)
from maxatar.gym.functional import MaxAtarFuncEnv
from maxatar.pixels import canvas, numpy_drawable, numpy_picture, unwrapped
from maxatar.registry import make
from maxatar.reset_options import DIFFICULTY, STATE, check_level, check_state, parse
from maxatar.tape import Tape, tape_row
from maxatar.twin import load_twin


class MaxAtarEnv(gymnasium.Env):
    """One environment; observations are numpy (or JAX with output="jax").

    backend: how a step is computed.
      "python": the game's plain-Python twin (`maxatar.twin`), with no JAX call at all: what SB3 and CleanRL
        loops, which step one environment per call, need, since JAX's per-call dispatch would dominate there.
      "jax": one jitted call per step; results stay on the device with output="jax".
      "auto" (default): "python" for numpy output, "jax" for JAX output.
    Both backends take every call's uniforms from the same tape (`maxatar.tape`), so a seed plays the same
    episode on either (bit for bit, except CartPole, whose twin is the reference's float64 arithmetic and
    agrees with the float32 JAX step to rounding). The last executed action (the sticky one) survives
    `reset()`, as in MinAtar, except a seeded reset, which starts afresh so that a seed replays exactly.
    Keyword arguments are those of `maxatar.make` (`setting="gymnax"`/`"pgx"`, `sticky_action_prob`,
    `difficulty_ramping`, `max_steps`, `difficulty`, `full_action_space`, `obs_type="rgb"`/`"grayscale"` and
    `obs_scale` for pixel observations, `obs_type="flat"` for a float32 vector, constructor options such as
    Doors' `size`).
    Reset options (`maxatar.reset_options`): `{"state": EnvState}` starts from that pure state (its sticky
    action, step counter and terminal flag included), `{"difficulty": k}` at level k of the game's ramp.
    """

    metadata = {"render_modes": RENDER_MODES, "render_fps": 15}

    def __init__(
        self, env_id: str, render_mode: str | None = None, output: str = "numpy", backend: str = "auto", **kwargs
    ):
        check_render_mode(render_mode, self.metadata)
        self.env_id = env_id
        self.render_mode = render_mode
        self.output = check_output(output)
        env, params = make(env_id, **kwargs)
        params = check_scalar_params(params, env)  # one environment: batched params are refused
        self._clock = TaskClock.of(env, kwargs)  # a continual environment's schedule, unless task= fixes the game
        if self._clock is not None:
            params = self._clock.params(params)
        self._multi_game = hasattr(env, "task_info")  # its steps report their task (`MultiGame.task_info`)
        self._boundary = True  # the next step is its task's first
        self.func_env = MaxAtarFuncEnv(env, params)
        self.observation_space = self.func_env.observation_space
        self.action_space = self.func_env.action_space
        twin = pick_twin(backend, self.output, env_id, env, params)
        self.backend = "jax" if twin is None else "python"
        self._twin = None if twin is None else TwinEnv(env, params, twin)
        self._num_actions = env.num_actions
        self._tape: Tape | None = None
        self._state: EnvState | None = None  # the JAX backend's state
        self._frame_fn = None
        self._window = None

    @property
    def params(self) -> EnvParams:
        """The runtime params this environment steps with (`maxatar.make`'s)."""
        return self.func_env.params

    def _out(self, x):
        return np.array(x) if self.output == "numpy" else x  # a writable copy, never a view of the device buffer

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Gymnasium's reset: `(obs, {})`. A seed (or the first reset) starts a new tape, so it replays exactly;
        otherwise the tape and the sticky action carry on, as in MinAtar. Options: `state` (a pure `EnvState`
        to start from) or `difficulty` (the ramp level to start at); either consumes the reset's tape row as a
        plain reset does, so the steps that follow draw the same variates."""
        env = self.func_env.env
        seed = check_seed(seed)
        options = parse(options, (STATE, DIFFICULTY))
        start = None if options.get(STATE) is None else check_state(env, options[STATE])
        level = None if options.get(DIFFICULTY) is None else check_level(env, options[DIFFICULTY])
        super().reset(seed=seed)
        fresh = seed is not None or self._tape is None
        if fresh:
            self._tape = Tape(tape_seed(seed, self.np_random), (env.num_auto_reset_uniforms,))
        if self._clock is not None and self._clock.task() != int(self.params.task):
            self._next_task(self._clock.params(self.params))
            fresh = True  # a new task starts afresh
        if self._twin is not None:
            row = self._tape.next_row()
            obs = self._twin.reset(row, fresh=fresh, difficulty=level) if start is None else self._twin.load(start)
        else:
            call = self._tape.next_call()
            if start is None:
                previous = None if fresh else self._state
                self._state, obs = _single_reset(env, self._tape.key, call, self.params, previous, level)
            else:
                self._state, obs = _single_start(env, start)
            obs = self._out(obs)
        if self.render_mode == "human":
            self.render()
        return obs, {}

    def step(self, action):
        """Gymnasium's step: `(obs, reward, terminated, truncated, {})`; a bad action raises before any work."""
        if self._tape is None:
            raise RuntimeError("call reset() before step()")
        action = check_action(action, self._num_actions)
        if self._twin is not None:
            obs, reward, terminated, truncated = self._twin.step(action, self._tape.next_row())
        else:
            self._state, (obs, reward, terminated, truncated) = _single_step(
                self.func_env.env, self._tape.key, self._tape.next_call(), self._state, np.int32(action), self.params
            )
            if self.output == "numpy":
                obs, reward, terminated, truncated = np.array(obs), float(reward), bool(terminated), bool(truncated)
        if self.render_mode == "human":
            self.render()
        info = {}
        if self._multi_game:
            info = self.func_env.env.task_info(int(self.params.task), self._boundary)
            self._boundary = False
        if self._clock is not None and self._clock.tick(1):
            truncated = truncated | True  # the stage ends here: the next reset plays the next task
        return obs, reward, terminated, truncated, info

    def _next_task(self, params: EnvParams) -> None:
        """Play `params`' task from the next reset on: its params (and its twin, on the Python backend)."""
        env = self.func_env.env
        self.func_env = MaxAtarFuncEnv(env, params)
        if self._twin is not None:
            self._twin = TwinEnv(env, params, load_twin(env, params))
        self._boundary = True

    def render(self):
        """rgb_array: the current frame as uint8 (H, W, 3); human: show it in a pygame window."""
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode; pass render_mode= to gymnasium.make")
            return None
        if self._tape is None:
            raise RuntimeError("call reset() before render()")
        image = self._frame()
        if self.render_mode == "rgb_array":
            return image
        if self._window is None:
            self._window = render_plugin("window")(title=self.env_id, fps=self.metadata["render_fps"])
        self._window.show(image)
        return None

    def _frame(self) -> np.ndarray:
        """The current frame, a fresh writable array. The Python backend draws a grid game in numpy from its twin's
        observation, the cell table and gather of `obs_type="rgb"` (the same pixels, no JAX call); otherwise
        the renderers' jitted frame draws the pure state."""
        env = self.func_env.env
        base = unwrapped(env)  # a flat observation is drawn as the game it wraps
        if self._twin is not None and not env.obs_pixels and numpy_drawable(base):
            twin = self._twin.twin
            obs = getattr(twin, "inner", twin).observation(self._twin.game)  # the game's own observation
            return numpy_picture(base, obs, "rgb", canvas(base).scale)
        if self._frame_fn is None:
            frame = render_plugin("frame")
            self._frame_fn = jax.jit(lambda state: frame(env, state))
        return np.array(self._frame_fn(self.state))

    def close(self):
        """Close the render window, if one was opened."""
        if self._window is not None:
            self._window.close()
            self._window = None
        super().close()

    @property
    def state(self) -> EnvState | None:
        """The current pure state (for inspection and rendering), whichever backend steps."""
        if self._tape is None:
            return None
        return self._twin.pure_state() if self._twin is not None else self._state


@partial(jax.jit, static_argnums=0)
def _single_reset(env: Environment, key, call, params, previous, level):
    """The JAX backend's reset (`maxatar.episode.restart`): the reset part of tape row `call`."""
    uniforms = tape_row(key, call, (env.num_auto_reset_uniforms,))
    obs, state = restart(env, reset_part(env, uniforms, params), params, previous, level)
    return state, obs


@partial(jax.jit, static_argnums=0)
def _single_start(env: Environment, state):
    """A chosen start state, on the device, and its observation."""
    return state, env.observation(state)


@partial(jax.jit, static_argnums=0)
def _single_step(env: Environment, key, call, state, action, params):
    """The JAX backend's step: the step part of tape row `call`."""
    uniforms = tape_row(key, call, (env.num_auto_reset_uniforms,))
    draws = env.draws_from_uniforms(uniforms[: env.num_draws], state, params)
    obs, state, reward, terminated, truncated, _ = env.transition(state, action, draws, params)
    return state, (obs, reward, terminated, truncated)
