"""Renderers: frames in JAX, palettes, Gymnasium render modes, the GIF and play CLIs (headless, see conftest).

Compiles are the cost here, so rollouts share one length and policy objects (equal static arguments hit
`render_rollout`'s jit cache) and crafted frames are computed eagerly.
"""

import dataclasses
import os
import sys
import types
from pathlib import Path

import gymnasium
import imageio.v3 as iio
import jax
import jax.numpy as jnp
import numpy as np
import pygame
import pytest

import maxatar
from maxatar.core import Environment, EnvState
from maxatar.games.asterix.rules import Asterix
from maxatar.games.breakout.rules import Breakout
from maxatar.games.cartpole.picture import CARTPOLE_COLOURS, CARTPOLE_HALF_WIDTH
from maxatar.games.cartpole.rules import CartPoleState
from maxatar.games.doors.rules import Doors, DoorsState
from maxatar.games.freeway.rules import Freeway
from maxatar.games.seaquest.rules import Seaquest
from maxatar.games.space_invaders.rules import SpaceInvaders
from renderers import frames as fr
from renderers.cli import main
from renderers.font import CHARS, number_codes
from renderers.gif import write_gif
from renderers.play import choose_action, play
from renderers.rollout import random_policy, render_rollout
from renderers.window import Window

FRAMES = 12  # every rollout and GIF here has this many frames
SCALE = 8


def constructible_ids() -> list[str]:
    """Registered ids whose environment module exists (the MinAtar games land while this suite grows)."""
    ids = []
    for env_id in maxatar.registered_ids():
        try:
            maxatar.make(env_id)
        except ModuleNotFoundError as error:
            assert error.name.startswith("maxatar.games."), error  # only a missing game module is tolerated
            continue
        ids.append(env_id)
    return ids


IDS = constructible_ids()


def test_constructible_ids_include_cartpole_and_doors():
    assert {"maxatar/CartPole-v1", "maxatar/Doors-v0"} <= set(IDS)


# --- crafted observations and states: each object has its colour where it is ---


@dataclasses.dataclass(frozen=True)
class ObservationIsState:
    """A stand-in for `env` whose state is its observation, to send crafted observations through `frame`."""

    env: Environment

    def __getattr__(self, name):
        return getattr(self.env, name)

    def observation(self, state):
        return state


draw = jax.jit(fr.frame, static_argnums=0, static_argnames="scale")  # one compile per environment and shape


def pixels_of(image: np.ndarray, colour) -> np.ndarray:
    return np.all(image == np.asarray(colour, np.uint8), axis=-1)


def cell_mask(row: int, col: int, shape, scale: int = SCALE) -> np.ndarray:
    mask = np.zeros(shape[:2], bool)
    mask[row * scale : (row + 1) * scale, col * scale : (col + 1) * scale] = True
    return mask


@pytest.mark.parametrize("env_class", [Breakout, Asterix, Freeway, Seaquest, SpaceInvaders])
def test_each_channel_is_drawn_in_its_own_colour_where_it_is_set(env_class):
    colours = [channel.colour for channel in env_class.looks.channels]
    assert len(set(colours)) == len(colours)
    assert not {fr.BACKGROUND, fr.GRID_LINE} & set(colours)
    obs = np.zeros((10, 10, len(colours)), bool)
    cells = [(c, 9 - c) for c in range(len(colours))]
    for c, (row, col) in enumerate(cells):
        obs[row, col, c] = True
    image = np.asarray(draw(ObservationIsState(env_class()), obs, scale=SCALE))
    assert image.shape == (10 * SCALE, 10 * SCALE, 3) and image.dtype == np.uint8
    for colour, (row, col) in zip(colours, cells, strict=True):
        drawn = pixels_of(image, colour)
        assert drawn.any() and not (drawn & ~cell_mask(row, col, image.shape)).any()


def test_an_environment_without_a_palette_gets_distinct_hues():
    obs = np.zeros((10, 10, 3), bool)
    for c in range(3):
        obs[:, c, c] = True  # channel c on column c of every row
    image = np.asarray(draw(ObservationIsState(Environment()), obs, scale=SCALE))
    colours = [tuple(image[SCALE // 2, c * SCALE + SCALE // 2]) for c in range(3)]
    assert len(set(colours)) == 3 and fr.BACKGROUND not in colours
    assert image.shape == (10 * SCALE, 10 * SCALE, 3)


def test_drawing_order_keeps_overlapping_objects_visible():
    obs = np.zeros((10, 10, 4), bool)
    obs[3, 0, [1, 3]] = True  # Breakout: the ball inside a brick
    image = np.asarray(draw(ObservationIsState(Breakout()), obs, scale=SCALE))
    assert pixels_of(image, Breakout.looks.channels[1].colour)[3 * SCALE + SCALE // 2, SCALE // 2]
    obs = np.zeros((10, 10, 6), bool)
    obs[0, 2, [1, 2]] = True  # Space Invaders: an alien moving left shows both the alien and its direction
    obs[0, 3, [1, 3]] = True
    image = np.asarray(draw(ObservationIsState(SpaceInvaders()), obs, scale=SCALE))
    for col, channel in ((2, 2), (3, 3)):
        inside = cell_mask(0, col, image.shape)
        for c in (1, channel):
            assert (pixels_of(image, SpaceInvaders.looks.channels[c].colour) & inside).any()


def test_doors_frame_shows_agent_goal_walls_and_doors():
    env, _ = maxatar.make("maxatar/Doors-v0")
    game = DoorsState(agent=jnp.array([14, 3]), goal=jnp.array([0, 9]), doors=env.default_doors())
    state = EnvState(game, jnp.int32(0), jnp.int32(0), jnp.bool_(False))
    image = np.asarray(draw(env, state, scale=SCALE))
    assert image.shape == (15 * SCALE, 15 * SCALE, 3)
    agent, wall, goal = (channel.colour for channel in Doors.looks.channels)
    for colour, (row, col) in ((agent, (14, 3)), (goal, (0, 9))):
        drawn = pixels_of(image, colour)
        assert drawn.any() and not (drawn & ~cell_mask(row, col, image.shape)).any()
    for col in range(15):  # the wall row: wall colour except at the doors 0, 5, 10
        assert pixels_of(image, wall)[cell_mask(7, col, image.shape)].any() == (col not in (0, 5, 10))


def test_cartpole_frame_follows_cart_position_and_pole_angle():
    def cartpole(x, theta):
        game = CartPoleState(jnp.float32(x), jnp.float32(0), jnp.float32(theta), jnp.float32(0))
        env, _ = maxatar.make("maxatar/CartPole-v1")
        return np.asarray(draw(env, EnvState(game, jnp.int32(0), jnp.int32(0), jnp.bool_(False))))

    def mean_x(image, part):
        return np.nonzero(pixels_of(image, CARTPOLE_COLOURS[part]))[1].mean()

    upright, moved, leaning = cartpole(0.0, 0.0), cartpole(1.0, 0.0), cartpole(0.0, 0.2)
    assert upright.shape == (160, 320, 3) and upright.dtype == np.uint8
    for part in ("track", "limit", "cart", "pole", "axle"):
        assert pixels_of(upright, CARTPOLE_COLOURS[part]).any(), part
    assert abs(mean_x(upright, "cart") - 160) < 1
    assert mean_x(moved, "cart") - mean_x(upright, "cart") == pytest.approx(320 / (2 * CARTPOLE_HALF_WIDTH), abs=1)
    assert mean_x(leaning, "pole") > mean_x(upright, "pole") + 5


def test_overlay_strip_shows_score_and_step():
    obs = np.zeros((10, 10, 4), bool)
    env = ObservationIsState(Breakout())
    plain = np.asarray(draw(env, obs))
    strip = [np.asarray(draw(env, obs, jnp.float32(s), jnp.int32(t)))[160:] for s, t in ((3, 7), (3, 8), (4, 7))]
    assert plain.shape == (160, 160, 3)
    assert strip[0].shape[0] > 0 and strip[0].shape[1] == 160
    assert pixels_of(strip[0], fr.TEXT).any()
    # SCORE on the left half, STEP on the right: each number changes only its own half.
    assert np.array_equal(strip[0][:, :80], strip[1][:, :80]) and not np.array_equal(strip[0], strip[1])
    assert np.array_equal(strip[0][:, 80:], strip[2][:, 80:]) and not np.array_equal(strip[0], strip[2])


def test_number_codes_are_right_aligned_with_sign_and_clipped():
    codes = jax.jit(number_codes, static_argnums=1)

    def text(value, width):
        return "".join(CHARS[i] for i in np.asarray(codes(jnp.int32(value), width)))

    assert text(42, 5) == "   42"
    assert text(-42, 5) == "  -42"
    assert text(0, 3) == "  0"
    assert text(123456, 5) == "99999"
    assert text(-123456, 5) == "-9999"


# --- rollouts in one jitted scan ---


def preferred_action(preferences, key, obs):
    """A stand-in for a trained policy: the action with the highest preference, whatever it sees."""
    return jnp.argmax(preferences)


# The form recommended to `maxatar_agents`: weights as a pytree, not constants baked into the compiled rollout.
ALWAYS_UP = jax.tree_util.Partial(preferred_action, jnp.array([0.0, 0.0, 0.0, 0.0, 1.0]))  # Doors' "up"


@pytest.mark.parametrize("env_id", ["maxatar/CartPole-v1", "maxatar/Doors-v0", "maxatar/Breakout-v0"])
def test_rollout_frames_change_as_the_game_changes(env_id):
    env, params = maxatar.make(env_id)
    policy = ALWAYS_UP if env_id == "maxatar/Doors-v0" else random_policy(env)
    frames, returns = render_rollout(env, params, policy, jax.random.key(0), FRAMES)
    frames = np.asarray(frames)
    _, state = env.reset(jax.random.key(0), params)
    picture = jax.eval_shape(lambda s: fr.frame(env, s), state).shape  # the frame without the overlay strip
    assert frames.dtype == np.uint8 and frames.shape[0] == FRAMES and frames.shape[2:] == picture[1:]
    assert min(picture[:2]) >= fr.MIN_SIDE
    pictures = {frames[t, : picture[0]].tobytes() for t in range(FRAMES)}
    assert len(pictures) > 1
    assert returns.shape == (FRAMES,) and float(returns[0]) == 0.0


# --- Gymnasium render modes, headless ---


@pytest.mark.parametrize("env_id", IDS)
def test_gymnasium_render_modes(env_id):
    env = gymnasium.make(env_id, render_mode="rgb_array")
    env.reset(seed=0)
    image = env.render()
    env.close()
    assert isinstance(image, np.ndarray) and image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    assert min(image.shape[:2]) >= fr.MIN_SIDE
    assert len(np.unique(image.reshape(-1, 3), axis=0)) >= 3  # background, grid or track, and objects

    human = gymnasium.make(env_id, render_mode="human")
    human.reset(seed=0)  # shows the first frame in the (dummy) pygame window
    assert human.render() is None
    width, height = pygame.display.get_surface().get_size()
    zoom = width // image.shape[1]  # the window enlarges frames by an integer factor
    assert zoom >= 1 and (width, height) == (image.shape[1] * zoom, image.shape[0] * zoom)
    human.close()
    assert not pygame.display.get_init()


def test_vector_env_renders_one_frame_per_sub_environment():
    envs = gymnasium.make_vec("maxatar/Doors-v0", num_envs=2, render_mode="rgb_array")
    envs.reset(seed=0)
    frames = envs.render()
    envs.close()
    assert len(frames) == 2 and all(f.dtype == np.uint8 and f.shape == (165, 165, 3) for f in frames)
    assert not np.array_equal(frames[0], frames[1])


# --- GIF CLI ---


def test_cli_writes_a_gif_with_the_requested_frames(tmp_path, capsys):
    out = tmp_path / "cartpole.gif"
    args = ["gif", "--env", "maxatar/CartPole-v1", "--policy", "random", "--steps", str(FRAMES), "--out", str(out)]
    assert main([*args, "--seed", "0"]) == 0
    assert str(out) in capsys.readouterr().out
    written = iio.imread(out)
    env, params = maxatar.make("maxatar/CartPole-v1")
    expected, _ = render_rollout(env, params, random_policy(env), jax.random.key(0), FRAMES)
    assert written.shape == expected.shape
    np.testing.assert_array_equal(written, np.asarray(expected))  # few colours: the GIF is lossless


@pytest.fixture
def checkpoints(monkeypatch):
    """A stand-in for `maxatar_agents.run.policies`: checkpoints named after the env id they were trained on."""
    module = types.ModuleType("maxatar_agents.run.policies")
    module.load_policy = lambda path: ("maxatar/" + Path(path).name, ALWAYS_UP)
    monkeypatch.setitem(sys.modules, "maxatar_agents.run.policies", module)
    return module


def test_cli_renders_a_checkpoint_policy(tmp_path, checkpoints):
    checkpoint = tmp_path / "Doors-v0"
    checkpoint.write_text("{}")
    out = tmp_path / "agent.gif"
    args = ["gif", "--env", "maxatar/Doors-v0", "--policy", str(checkpoint), "--steps", str(FRAMES)]
    assert main([*args, "--out", str(out)]) == 0
    env, params = maxatar.make("maxatar/Doors-v0")
    expected, _ = render_rollout(env, params, ALWAYS_UP, jax.random.key(0), FRAMES)
    np.testing.assert_array_equal(iio.imread(out), np.asarray(expected))


# Always the third action: "right" in Breakout's minimal action set (pgx's setting), "up" (no move) in the full.
THIRD_ACTION = jax.tree_util.Partial(preferred_action, jnp.array([0.0, 0.0, 1.0]))


@pytest.fixture
def pgx_checkpoint(tmp_path, checkpoints):
    """A Breakout checkpoint trained in pgx's setting (minimal action set), as the stand-in loader sees it."""
    checkpoints.load_policy = lambda path: ("maxatar/Breakout-v0", THIRD_ACTION)
    checkpoints.policy_env_kwargs = lambda path: {"setting": "pgx", "sticky_action_prob": 0.0}
    path = tmp_path / "breakout-pgx"
    path.write_text("{}")
    return path


def test_cli_plays_a_checkpoint_in_the_environment_it_was_trained_in(tmp_path, pgx_checkpoint):
    out = tmp_path / "agent.gif"
    args = ["gif", "--env", "maxatar/Breakout-v0", "--policy", str(pgx_checkpoint), "--steps", str(FRAMES)]
    assert main([*args, "--out", str(out)]) == 0
    rollouts = {}
    for setting in ("pgx", "minatar"):
        env, params = maxatar.make("maxatar/Breakout-v0", setting=setting, sticky_action_prob=0.0)
        rollouts[setting] = np.asarray(render_rollout(env, params, THIRD_ACTION, jax.random.key(0), FRAMES)[0])
    written = iio.imread(out)
    np.testing.assert_array_equal(written, rollouts["pgx"])  # the paddle moves right
    assert not np.array_equal(written, rollouts["minatar"])  # what the full action set would have shown


def test_cli_refuses_a_setting_other_than_the_policys(tmp_path, capsys, pgx_checkpoint):
    args = ["gif", "--env", "maxatar/Breakout-v0", "--policy", str(pgx_checkpoint), "--setting", "minatar"]
    err = gif_error([*args, "--out", str(tmp_path / "x.gif")], capsys)
    assert "was trained in the 'pgx' setting, not 'minatar'" in err
    args = ["play", "--env", "maxatar/Breakout-v0", "--policy", str(pgx_checkpoint), "--setting", "gymnax"]
    assert "was trained in the 'pgx' setting, not 'gymnax'" in gif_error(args, capsys)
    assert not list(tmp_path.glob("*.gif"))


def test_cli_plays_random_and_human_games_in_the_chosen_setting(tmp_path):
    out = tmp_path / "random.gif"
    args = ["gif", "--env", "maxatar/Breakout-v0", "--setting", "gymnax", "--steps", str(FRAMES), "--out", str(out)]
    assert main(args) == 0
    env, params = maxatar.make("maxatar/Breakout-v0", setting="gymnax")
    expected, _ = render_rollout(env, params, random_policy(env), jax.random.key(0), FRAMES)
    np.testing.assert_array_equal(iio.imread(out), np.asarray(expected))
    assert main(["play", "--env", "maxatar/Breakout-v0", "--setting", "pgx", "--fps", "60", "--steps", "2"]) == 0


def gif_error(args: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize(
    "change, message",
    [
        ({"--env": "maxatar/Pong-v0"}, "unknown environment id 'maxatar/Pong-v0'"),
        ({"--out": "{tmp}/missing/x.gif"}, "does not exist"),
        ({"--out": "{tmp}"}, "must end in .gif"),
        ({"--out": "{tmp}/x.png"}, "must end in .gif"),
        ({"--steps": "0"}, "--steps: must be between 1 and 10000, got 0"),
        ({"--steps": "many"}, "--steps: expected int, got 'many'"),
        ({"--seed": "-1"}, "--seed: the seed must be an integer in 0 .. 2**32 - 1"),
        ({"--seed": str(2**64)}, f"as a seed keeps 32 bits; got {2**64}"),
        ({"--fps": "nan"}, "--fps: must be between 0.1 and 100.0, got nan"),
        ({"--out": "/proc/x.gif"}, "--out: cannot write '/proc/x.gif'"),
        ({"--policy": "{tmp}/no_such_checkpoint"}, "does not exist"),
        ({"--out": str(Path(fr.__file__).parent / "x.gif")}, "is inside the installed package"),
        ({"--out": "{tmp}/fifo.gif"}, "--out: output file '{tmp}/fifo.gif' is not a regular file"),
        ({"--setting": "ale"}, "--setting: invalid choice: 'ale'"),
        ({"--scale": "1"}, "--scale: at scale 1 the frames are 15 pixels wide, too narrow for the score/step overlay"),
        ({"--scale": "5"}, "the smallest scale with it is 6, or pass --no-overlay"),
    ],
)
def test_cli_rejects_bad_arguments(tmp_path, capsys, change, message):
    options = {"--env": "maxatar/Doors-v0", "--steps": "5", "--out": "{tmp}/x.gif", **change}
    if "fifo" in options["--out"]:
        os.mkfifo(tmp_path / "fifo.gif")  # opening it to write would wait for a reader
    args = ["gif"] + [item.format(tmp=tmp_path) for pair in options.items() for item in pair]
    err = gif_error(args, capsys)
    assert message.format(tmp=tmp_path) in err and err.startswith("python -m renderers gif: error:"), err
    assert "(see python -m renderers gif --help)" in err and err.count("\n") == 1
    assert not [path for path in tmp_path.glob("*.gif") if path.is_file()]


def test_a_full_disk_is_one_error_line_and_leaves_the_previous_gif(tmp_path, capsys, full_disk):
    out = tmp_path / "x.gif"
    out.write_text("GIF89a before")  # Path.write_bytes is the full disk's
    err = gif_error(["gif", "--env", "maxatar/Doors-v0", "--steps", "2", "--out", str(out)], capsys)
    assert f"--out: cannot write '{out}': No space left on device" in err and err.count("\n") == 1, err
    assert out.read_text() == "GIF89a before" and [p.name for p in tmp_path.iterdir()] == ["x.gif"]


def test_cli_renders_the_smallest_scale_without_the_overlay(tmp_path, capsys):
    out = tmp_path / "doors.gif"
    args = ["gif", "--env", "maxatar/Doors-v0", "--steps", "2", "--scale", "1", "--no-overlay", "--out", str(out)]
    assert main(args) == 0 and iio.imread(out).shape[1:] == (15, 15, 3)


def test_cli_rejects_a_checkpoint_for_another_environment(tmp_path, capsys, checkpoints):
    checkpoint = tmp_path / "Breakout-v0"
    checkpoint.write_text("{}")
    args = ["gif", "--env", "maxatar/Doors-v0", "--policy", str(checkpoint), "--out", str(tmp_path / "x.gif")]
    assert "was trained on maxatar/Breakout-v0, not maxatar/Doors-v0" in gif_error(args, capsys)


def test_cli_explains_a_missing_checkpoint_loader(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "maxatar_agents.run.policies", None)  # makes the import fail
    checkpoint = tmp_path / "Doors-v0"
    checkpoint.write_text("{}")
    args = ["gif", "--env", "maxatar/Doors-v0", "--policy", str(checkpoint), "--out", str(tmp_path / "x.gif")]
    assert "needs `maxatar_agents.run.policies.load_policy`" in gif_error(args, capsys)


def test_write_gif_rejects_bad_frames(tmp_path):
    with pytest.raises(ValueError, match="uint8 of shape"):
        write_gif(tmp_path / "x.gif", np.zeros((2, 4, 4), np.uint8))
    with pytest.raises(ValueError, match="fps must be positive"):
        write_gif(tmp_path / "x.gif", np.zeros((2, 4, 4, 3), np.uint8), fps=0)


# --- window and play ---


def test_window_shows_frames_and_closes():
    window = Window("test", fps=1000, zoom=2)
    window.show(np.zeros((20, 30, 3), np.uint8))
    assert pygame.display.get_surface().get_size() == (60, 40) and not window.closed
    with pytest.raises(ValueError, match="uint8 of shape"):
        window.show(np.zeros((20, 30), np.uint8))
    window.close()
    assert window.closed and not pygame.display.get_init()


def test_keys_map_to_each_action_set():
    breakout_full, _ = maxatar.make("maxatar/Breakout-v0")
    # The minimal set's game actions are (0, 1, 3): no-op, left, right.
    breakout_minimal, _ = maxatar.make("maxatar/Breakout-v0", full_action_space=False)
    cartpole, _ = maxatar.make("maxatar/CartPole-v1")
    doors, _ = maxatar.make("maxatar/Doors-v0")
    controls = [None, "left", "right", "up", "down", "space"]
    assert [choose_action(breakout_full, c, 0) for c in controls] == [0, 1, 3, 2, 4, 5]
    assert [choose_action(breakout_minimal, c, 0) for c in controls] == [0, 1, 2, 0, 0, 0]
    assert [choose_action(doors, c, 0) for c in controls] == [0, 3, 1, 4, 2, 0]
    assert [choose_action(cartpole, c, 1) for c in controls] == [1, 0, 1, 1, 1, 1]  # no key: keep pushing


def test_play_runs_headless_and_quits_on_escape(monkeypatch):
    shown, show = [], Window.show
    monkeypatch.setattr(Window, "show", lambda self, image: (shown.append(np.asarray(image).shape), show(self, image)))
    calls = iter([[pygame.event.Event(pygame.KEYDOWN, key=pygame.K_UP)]] * 3)
    escape = [pygame.event.Event(pygame.KEYDOWN, key=pygame.K_ESCAPE)]
    monkeypatch.setattr(Window, "events", lambda self: next(calls, escape))
    assert play("maxatar/Doors-v0", fps=1000, max_steps=50) == []
    assert len(shown) == 4 and shown[0][:2] != (165, 165)  # three steps, then Escape; frames carry the overlay


def test_play_cli_stops_after_the_requested_steps(capsys):
    assert main(["play", "--env", "maxatar/Doors-v0", "--fps", "60", "--steps", "2"]) == 0
    assert not pygame.display.get_init()


def test_play_without_a_display_stops_with_an_error(monkeypatch, capsys):
    """Where SDL falls back to a video driver that shows nothing (no DISPLAY), `play` refuses instead of
    playing episodes nobody sees; SDL_VIDEODRIVER=dummy, asked for (as here), still plays headless."""
    monkeypatch.setattr(pygame.display, "get_driver", lambda: "offscreen")
    with pytest.raises(SystemExit) as stop:
        main(["play", "--env", "maxatar/Doors-v0", "--fps", "60", "--steps", "2"])
    assert stop.value.code == 2
    assert "no display to open the game's window on" in capsys.readouterr().err
    assert not pygame.display.get_init()


def test_play_with_a_video_driver_that_cannot_start_stops_with_an_error(monkeypatch, capsys):
    """SDL_VIDEODRIVER naming a driver that cannot start (x11 without an X server; here one SDL does not have)
    is one error line naming the variable, not pygame's traceback."""
    monkeypatch.setenv("SDL_VIDEODRIVER", "no-such-driver")
    with pytest.raises(SystemExit) as stop:
        main(["play", "--env", "maxatar/Doors-v0", "--steps", "1"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1, err
    assert "no display to open a window on (no-such-driver not available; SDL_VIDEODRIVER='no-such-driver')" in err


def test_without_a_display_a_window_opens_quietly_and_play_refuses(monkeypatch, capfd):
    """No DISPLAY, WAYLAND_DISPLAY or SDL_VIDEODRIVER (a headless machine; `check_env` opens a render_mode="human"
    window): SDL's Wayland probe would print `error: XDG_RUNTIME_DIR is invalid`; the window opens on SDL's
    offscreen driver without a word, and `play` still refuses to play where nobody sees."""
    for name in ("SDL_VIDEODRIVER", "DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    window = Window(fps=1000)
    window.show(np.zeros((4, 4, 3), np.uint8))
    window.close()
    with pytest.raises(SystemExit) as stop:
        main(["play", "--env", "maxatar/Doors-v0", "--steps", "1"])
    err = capfd.readouterr().err
    assert stop.value.code == 2 and "no display to open the game's window on" in err
    assert "XDG_RUNTIME_DIR" not in err and "SDL_VIDEODRIVER" not in os.environ
