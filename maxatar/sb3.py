"""Stable-Baselines3 `VecEnv` over MaxAtar's jitted vector environment.

SB3 does not accept Gymnasium vector environments; this adapter gives it what it expects: same-step
resets, `infos[i]["terminal_observation"]` for finished episodes, `"TimeLimit.truncated"` for
truncations and, as SB3's `Monitor`/`VecMonitor` do, `infos[i]["episode"]` (return "r", length "l",
seconds since the start "t") so that `ep_rew_mean` and `ep_len_mean` are logged without a wrapper.
The sub-environments step through `MaxAtarVectorEnv` (its Python twins for a few environments, one
jitted call for many). SB3's `set_options` takes MaxAtar's reset options (`maxatar.reset_options`: `state`,
`difficulty`) for the next `reset()`, per sub-environment. Stable-Baselines3 is imported lazily.

    from stable_baselines3 import PPO
    from maxatar.sb3 import make_sb3_vec_env
    model = PPO("MlpPolicy", make_sb3_vec_env("maxatar/Breakout-v0", num_envs=16, full_action_space=False), n_steps=128)
"""

from __future__ import annotations

import time
from typing import Any

import jax
import numpy as np
from gymnasium.vector import AutoresetMode

from maxatar.checks import InputError, check_actions, check_num_envs, check_seed
from maxatar.extras import require
from maxatar.gym import MaxAtarVectorEnv
from maxatar.reset_options import DIFFICULTY, STATE, parse


def batch_options(options: list[dict], default_level) -> dict:
    """SB3's per-sub-environment reset options as one vector reset's: levels side by side (the params' level
    where one is not given), states stacked (given for every sub-environment or for none)."""
    options = [parse(o, (STATE, DIFFICULTY)) for o in options]
    batched = {}
    if any(o.get(DIFFICULTY) is not None for o in options):
        batched[DIFFICULTY] = [default_level if o.get(DIFFICULTY) is None else o[DIFFICULTY] for o in options]
    states = [o.get(STATE) for o in options]
    if any(s is not None for s in states):
        if any(s is None for s in states):
            raise InputError("set_options: give reset option 'state' to every sub-environment or to none")
        batched[STATE] = jax.tree.map(lambda *leaves: np.stack(leaves), *states)
    return batched


def make_sb3_vec_env(env_id: str, num_envs: int = 8, seed: int | None = None, **kwargs):
    """An SB3 `VecEnv` of `num_envs` copies of `env_id`; kwargs go to `maxatar.make` (one set of params: batched
    ones are refused, as by `gymnasium.make_vec`)."""
    require("sb3", "stable_baselines3")
    from stable_baselines3.common.vec_env.base_vec_env import VecEnv

    seed = check_seed(seed)  # before anything is built (maxatar.checks)
    num_envs = check_num_envs(num_envs)

    class MaxAtarSB3VecEnv(VecEnv):
        """SB3's `VecEnv` interface over one same-step `MaxAtarVectorEnv` (defined here so that SB3 is only
        imported when asked for)."""

        def __init__(self):
            self.venv = MaxAtarVectorEnv(env_id, num_envs, autoreset_mode=AutoresetMode.SAME_STEP, **kwargs)
            super().__init__(num_envs, self.venv.single_observation_space, self.venv.single_action_space)
            self._next_seed = seed
            self._actions = None
            self._start = time.time()
            self._returns = np.zeros(num_envs, np.float64)
            self._lengths = np.zeros(num_envs, np.int64)

        def reset(self):
            """Reset every sub-environment; SB3's `seed()` (or `make_sb3_vec_env`'s seed) seeds the batch once,
            and `set_options` gives the reset options of each sub-environment."""
            options = batch_options(self._options, self.venv.params.difficulty)
            seeds = [s for s in self._seeds if s is not None]
            reset_seed = seeds[0] if seeds else self._next_seed
            obs, _ = self.venv.reset(seed=reset_seed, options=options)
            self._next_seed = None
            self._returns[:] = 0
            self._lengths[:] = 0
            self._reset_seeds()
            self._reset_options()
            return obs

        def step_async(self, actions: np.ndarray) -> None:
            """Keep the actions for `step_wait` (the vector step is one synchronous call, which checks them)."""
            if np.shape(actions) == (self.num_envs, 1):  # SB3's column of discrete actions (its buffers' layout)
                actions = np.reshape(actions, self.num_envs)
            self._actions = check_actions(actions, self.num_envs, self.venv.single_action_space.n)

        def seed(self, seed: int | None = None):
            """SB3's seeding, with the seed checked as every front end checks it (`maxatar.checks.check_seed`)."""
            return super().seed(check_seed(seed))

        def step_wait(self):
            """Step every sub-environment: `(obs, rewards, dones, infos)` with SB3's terminal observation,
            truncation flag and episode statistics in `infos`."""
            obs, reward, terminated, truncated, info = self.venv.step(self._actions)
            dones = terminated | truncated
            self._returns += reward
            self._lengths += 1
            infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
            for i in np.flatnonzero(dones):
                infos[i]["terminal_observation"] = info["final_obs"][i]
                infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
                infos[i]["episode"] = {
                    "r": round(float(self._returns[i]), 6),
                    "l": int(self._lengths[i]),
                    "t": round(time.time() - self._start, 6),
                }
            self._returns[dones] = 0
            self._lengths[dones] = 0
            return obs, reward.astype(np.float32), dones, infos

        def close(self) -> None:
            """Close the underlying vector environment."""
            self.venv.close()

        def get_attr(self, attr_name: str, indices=None) -> list[Any]:
            """The vector environment's attribute, once per requested index (the sub-environments share it)."""
            return [getattr(self.venv, attr_name) for _ in self._get_indices(indices)]

        def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
            """Refused: one jitted step serves every sub-environment, so none can differ from the others."""
            raise AttributeError(f"sub-environments of a jitted vector env share {attr_name!r}; it cannot be set")

        def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
            """Call the vector environment's method, once per requested index (SB3 expects a list)."""
            method = getattr(self.venv, method_name)
            return [method(*method_args, **method_kwargs) for _ in self._get_indices(indices)]

        def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
            """Never: the sub-environments are not Gymnasium environments that a wrapper could wrap."""
            return [False for _ in self._get_indices(indices)]

        def _get_indices(self, indices):
            if indices is None:
                return range(self.num_envs)
            return [indices] if isinstance(indices, int) else indices

    return MaxAtarSB3VecEnv()
