"""Command line: `python -m renderers gif ...` writes a GIF of a rollout, `python -m renderers play ...` lets a
person play in a pygame window. Bad arguments exit with one error line before any work is done."""

from __future__ import annotations

import argparse
import sys
import typing
from collections.abc import Callable, Sequence

from maxatar.checks import InputError, check_key_seeds
from maxatar.extras import MissingExtra, require
from maxatar.settings import SETTINGS

MAX_FRAMES = 10_000  # a rollout's frames are held in memory before the GIF is written
POLICY_HELP = (
    "'random' (default), 'pretrained' (the trained policy maxatar_agents ships for --env) or a path to a "
    "maxatar_agents checkpoint"
)
SETTING_HELP = (
    "a paper's MinAtar setting (sticky actions, action set, time limit; see maxatar.settings); default: the "
    "environment's own for random or human play, the one a --policy was trained in"
)


def key_seed(text: str) -> int:
    """`--seed`: jax.random.key keeps 32 bits of a seed (`maxatar.checks.check_key_seeds`)."""
    try:
        seed = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected int, got {text!r}") from None
    try:
        return check_key_seeds("the seed", seed)  # argparse names the option
    except InputError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def bounded(kind: Callable, low, high=None) -> Callable[[str], object]:
    """An argparse type: `kind(text)` within [low, high]."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {kind.__name__}, got {text!r}") from None
        if not value >= low or (high is not None and not value <= high):  # NaN is neither
            limits = f">= {low}" if high is None else f"between {low} and {high}"
            raise argparse.ArgumentTypeError(f"must be {limits}, got {text}")
        return value

    return parse


class Parser(argparse.ArgumentParser):
    """argparse, with a mistake reported as one `error:` line and where to look, not the whole usage first."""

    def error(self, message: str) -> typing.NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The `gif` and `play` subcommands, each checking its arguments up front so a bad one fails before any
    compile."""
    parser = Parser(prog="python -m renderers", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    gif = commands.add_parser("gif", help="render a rollout (one jitted scan) and write it as a GIF")
    gif.add_argument("--env", required=True, help="environment id, e.g. maxatar/Breakout-v0")
    gif.add_argument("--policy", default="random", help=POLICY_HELP)
    gif.add_argument("--setting", choices=SETTINGS, help=SETTING_HELP)
    gif.add_argument("--steps", type=bounded(int, 1, MAX_FRAMES), default=300, help="number of frames (one per action)")
    gif.add_argument("--seed", type=key_seed, default=0)
    gif.add_argument("--out", required=True, help="output .gif file")
    gif.add_argument("--fps", type=bounded(float, 0.1, 100.0), default=15.0, help="playback speed")
    gif.add_argument("--scale", type=bounded(int, 1, 64), default=None, help="pixels per grid cell")
    gif.add_argument("--no-overlay", action="store_true", help="leave out the score and step strip")
    gif.set_defaults(run=run_gif, subparser=gif)

    play = commands.add_parser(
        "play", help="play with the keyboard (arrows move, space fires, R restarts), or watch a --policy play"
    )
    play.add_argument("--env", required=True, help="environment id, e.g. maxatar/Breakout-v0")
    play.add_argument("--policy", help="watch this policy play instead of playing yourself: " + POLICY_HELP)
    play.add_argument("--setting", choices=SETTINGS, help=SETTING_HELP)
    play.add_argument("--fps", type=bounded(float, 0.5, 60.0), default=10.0, help="steps per second")
    play.add_argument("--zoom", type=bounded(int, 1, 16), default=3, help="window enlargement")
    play.add_argument("--seed", type=key_seed, default=0)
    play.add_argument("--steps", type=bounded(int, 1), default=None, help="stop after this many steps")
    play.add_argument(
        "--record",
        action="store_true",
        help="save the episodes you finish as the Minari dataset maxatar/<Game>/human-v0 (a MinAtar game; "
        "needs the offline extra)",
    )
    play.add_argument("--force", action="store_true", help="with --record: replace an earlier human-v0 dataset")
    play.set_defaults(run=run_play, subparser=play)
    return parser


def _env_and_policy(parser: argparse.ArgumentParser, args: argparse.Namespace, spec: str):
    """The environment to play in and the policy `spec` names (None for `play` without --policy: a person
    plays). A trained policy plays in the environment it was trained in (see `policies.resolve_policy`)."""
    import maxatar
    from renderers.policies import PolicyError, resolve_policy
    from renderers.rollout import random_policy

    try:
        policy, env_kwargs = resolve_policy(spec, args.env, args.setting)
    except PolicyError as error:
        parser.error(str(error))
    try:
        env, params = maxatar.make(args.env, **env_kwargs)
    except ValueError as error:
        parser.error(str(error))
    except ImportError as error:
        parser.error(f"{args.env} is registered but its environment module cannot be imported ({error})")
    if spec == "random":
        policy = random_policy(env)
    return env, params, env_kwargs, policy


def run_gif(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """Render a rollout of the chosen policy in one jitted scan and write it as a GIF."""
    import jax

    from renderers.frames import check_overlay_fits
    from renderers.gif import check_output_path, write_gif
    from renderers.rollout import render_rollout

    try:
        out = check_output_path(args.out)
    except ValueError as error:
        parser.error(f"--out: {error}")
    env, params, _, policy = _env_and_policy(parser, args, args.policy)
    if not args.no_overlay:
        try:
            check_overlay_fits(env, params, args.scale)
        except ValueError as error:
            parser.error(f"--scale: {error}")
    frames, _ = render_rollout(
        env, params, policy, jax.random.key(args.seed), args.steps, overlay=not args.no_overlay, scale=args.scale
    )
    try:
        write_gif(out, jax.device_get(frames), fps=args.fps)
    except OSError as error:
        parser.error(f"--out: cannot write {str(out)!r}: {error.strerror or error}")
    height, width = frames.shape[1:3]
    print(f"wrote {out} ({args.steps} frames of {width}x{height}, {out.stat().st_size / 1024:.0f} KiB)")
    return 0


def run_play(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """Open a window and let a person play, or watch a policy play (the id and the policy are checked first,
    so a typo fails before pygame starts)."""
    from renderers.play import NoDisplayError, play

    _, _, env_kwargs, policy = _env_and_policy(parser, args, args.policy)
    recorder = None
    if args.record:
        from renderers import record

        if args.policy is not None:
            parser.error("--record records a person's play: leave out --policy")
        try:
            env_kwargs = record.env_kwargs(args.env, args.setting)
            record.datasets().check_free(record.datasets().DatasetId(record.game_of(args.env), "human"), args.force)
        except ValueError as error:
            parser.error(str(error))
        recorder = record.Recorder()
    try:
        returns = play(
            args.env,
            fps=args.fps,
            zoom=args.zoom,
            seed=args.seed,
            max_steps=args.steps,
            policy=policy,
            recorder=recorder,
            env_kwargs=env_kwargs,
        )
    except NoDisplayError as error:
        parser.error(str(error))
    if returns:
        print(f"{len(returns)} episode(s), mean return {sum(returns) / len(returns):g}")
    if recorder is not None:
        if not recorder.episodes:
            parser.error("--record: no episode was finished, so no dataset was written")
        try:
            dataset = record.save(args.env, args.setting, recorder, args.seed, args.force)
        except (ValueError, OSError) as error:
            parser.error(f"--record: {error}")
        print(f"wrote {dataset.spec.dataset_id}: {dataset.total_episodes} episode(s), {dataset.total_steps} steps")
    return 0


def require_extras(args: argparse.Namespace) -> None:
    """The extras the command needs, checked before any work: a GIF needs imageio, a window pygame, a trained
    policy the agents' modules (`maxatar.extras.require`)."""
    from renderers.policies import AGENT_MODULES

    require("render", "imageio" if args.command == "gif" else "pygame")
    if args.policy not in (None, "random"):
        require("agents", *AGENT_MODULES)
    if getattr(args, "record", False):
        require("offline", "minari", "h5py", *AGENT_MODULES)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line entry point (`python -m renderers`); `argv` lets tests call it in process."""
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        require_extras(args)
    except MissingExtra as error:
        parser.exit(2, f"{parser.prog} {args.command}: error: {error}\n")
    return args.run(args.subparser, args)  # errors name the subcommand
