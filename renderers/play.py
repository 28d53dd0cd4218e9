"""Play an environment yourself in a pygame window: arrow keys move, space fires, R restarts, Esc quits. Or
watch a policy (a trained agent) play it: R restarts, Esc quits.

The game runs in real time at `fps` steps per second. Each step takes the key pressed since the previous
step if there was one (so a quick tap is not lost), otherwise the key held down, otherwise no key. Each game
names its keys (`Environment.looks.keymap`, pygame's key names) and its no-key action (`looks.idle_action`); they map to
game actions, so the full and minimal (`full_action_space=False`) action sets both work, and a key whose
action is not in the set does nothing.
"""

from __future__ import annotations

import os
from functools import partial

import jax
import jax.numpy as jnp

import maxatar
from maxatar.core import Environment, EnvParams, EnvState
from maxatar.extras import require
from renderers.frames import frame
from renderers.rollout import Policy
from renderers.window import NoDisplayError, Window, display_variables, init_display

# SDL's video drivers that show nothing: SDL falls back to one where there is no display (no DISPLAY or
# WAYLAND_DISPLAY), and `play` would then run episodes nobody sees, with no key ever pressed.
HEADLESS_DRIVERS = ("offscreen", "dummy")
ELSEWHERE = (
    "run it on a desktop, or record a GIF instead (python -m renderers gif --env ID [--policy ...] --out "
    "play.gif); SDL_VIDEODRIVER=dummy plays without a window anyway"
)


def check_display(pygame) -> None:
    """Refuse to play without a display, unless SDL's headless driver was asked for (`SDL_VIDEODRIVER=dummy`,
    as the tests do); the display is shut again first."""
    driver = pygame.display.get_driver()
    if driver in HEADLESS_DRIVERS and os.environ.get("SDL_VIDEODRIVER") != driver:
        pygame.display.quit()
        raise NoDisplayError(
            f"no display to open the game's window on (SDL fell back to its {driver!r} video driver; "
            f"{display_variables()}): {ELSEWHERE}"
        )


def choose_action(env: Environment, key: str | None, previous: int) -> int:
    """The index (into `env`'s action set) that the key named `key` ("left", ..., "space", or None for no
    key) means: its game action, else the idle action, else (no idle action, or not in the set) `previous`."""
    game_action = env.looks.keymap.get(key) if key else None
    if game_action is None or game_action not in env.action_set:
        game_action = env.looks.idle_action
    if game_action is None or game_action not in env.action_set:
        return previous
    return env.action_set.index(game_action)


@partial(jax.jit, static_argnums=0)
def _reset(env: Environment, key: jax.Array, params: EnvParams) -> EnvState:
    return env.reset(key, params)[1]


@partial(jax.jit, static_argnums=0)
def _step(env: Environment, key: jax.Array, state: EnvState, action: jax.Array, params: EnvParams):
    obs, state, reward, terminated, truncated, _ = env.step(key, state, action, params)
    return state, obs, reward, terminated, truncated


@partial(jax.jit, static_argnums=0)
def _observe(env: Environment, state: EnvState) -> jax.Array:
    return env.observation(state)


@partial(jax.jit, static_argnums=0)
def _draw(env: Environment, state: EnvState, score: jax.Array) -> jax.Array:
    return frame(env, state, score, state.time)


@partial(jax.jit, static_argnums=0)
def _act(env: Environment, policy: Policy, key: jax.Array, state: EnvState) -> jax.Array:
    return jnp.asarray(policy(key, env.observation(state))).astype(jnp.int32).reshape(())


def play(
    env_id: str,
    fps: float = 10.0,
    zoom: int = 3,
    seed: int = 0,
    max_steps: int | None = None,
    policy: Policy | None = None,
    recorder=None,
    env_kwargs: dict | None = None,
    **make_kwargs,
) -> list[float]:
    """Run the game until the window closes (or `max_steps` steps); returns the finished episodes' returns.
    With `policy` (`act(key, obs) -> action`, e.g. a trained agent's) it chooses the actions, not the keys.
    With `recorder` (`renderers.record.Recorder`) every episode is recorded as it is played.
    `make_kwargs` go to `maxatar.make` (a setting, or the environment a policy was trained in), and so does
    `env_kwargs`, a dict of them, which may name `max_steps` (the environment's time limit, not `play`'s)."""
    require("render", "pygame")
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
    import pygame

    env, params = maxatar.make(env_id, **make_kwargs, **(env_kwargs or {}))
    try:
        init_display(pygame)  # pygame translates key names to codes once its display is up
    except NoDisplayError as error:
        raise NoDisplayError(f"{error}: {ELSEWHERE}") from None
    check_display(pygame)
    keys = {pygame.key.key_code(name): name for name in env.looks.keymap}
    controls = "arrows move, space fires, R restarts, Esc quits" if policy is None else "R restarts, Esc quits"
    watched = "" if policy is None else "agent playing: "
    window = Window(title=f"{env_id} ({watched}{controls})", fps=fps, zoom=zoom)
    if policy is not None and not isinstance(policy, jax.tree_util.Partial):
        policy = jax.tree_util.Partial(policy)  # the weights stay arguments of the compiled step
    key = jax.random.key(seed)
    key, sub = jax.random.split(key)
    state, score, action, pause, steps = _reset(env, sub, params), 0.0, 0, 0, 0
    if recorder is not None:
        recorder.start(_observe(env, state))
    returns: list[float] = []
    try:
        while not window.closed and (max_steps is None or steps < max_steps):
            window.show(_draw(env, state, jnp.float32(score)))
            tapped, restart = None, False
            for event in window.events():
                if event.type == pygame.KEYDOWN and event.key == pygame.K_ESCAPE:
                    window.close()
                elif event.type == pygame.KEYDOWN and event.key == pygame.K_r:
                    restart = True
                elif event.type == pygame.KEYDOWN and event.key in keys:
                    tapped = keys[event.key]
            if window.closed:
                break
            held = pygame.key.get_pressed()
            pressed = tapped or next((name for code, name in keys.items() if held[code]), None)
            if pause > 0:  # an episode just ended: hold its last frame for a moment, then start another
                pause -= 1
                if pause > 0 and not restart:
                    continue
                restart = True
            if restart:
                key, sub = jax.random.split(key)
                state, score, pause = _reset(env, sub, params), 0.0, 0
                if recorder is not None:
                    recorder.start(_observe(env, state))
                continue
            if policy is None:
                action = choose_action(env, pressed, action)
            else:
                key, act_key = jax.random.split(key)
                action = int(_act(env, policy, act_key, state))
            key, sub = jax.random.split(key)
            state, obs, reward, terminated, truncated = _step(env, sub, state, jnp.int32(action), params)
            done = bool(terminated | truncated)
            if recorder is not None:
                recorder.step(action, obs, float(reward), bool(terminated), bool(truncated))
            score += float(reward)
            steps += 1
            if done:
                returns.append(score)
                print(f"episode over: return {score:g} in {int(state.time)} steps")
                pause = max(1, round(fps))
    finally:
        window.close()
    return returns
