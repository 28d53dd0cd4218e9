"""The agents' command line as generated from the config dataclasses. Nothing here compiles or trains: the
options are parsed into configs and compared."""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import types
from pathlib import Path

import pytest

from maxatar_agents.algorithms import dqn, ppo
from maxatar_agents.algorithms.fields import field_help, field_types
from maxatar_agents.algorithms.registry import AGENT_MODULES, agent_module
from maxatar_agents.run import cli
from maxatar_agents.run.configs import env_presets, make_config
from tests import agent_lists

MODULES = agent_lists.cartpole_modules()


def config_and_preset(algorithm: str, *argv: str):
    module = agent_module(algorithm)
    args = cli.build_parser(algorithm, module).parse_args([*argv, "--out", "unused"])
    return cli.config_from_args(args, module)


def config_from(algorithm: str, *argv: str):
    return config_and_preset(algorithm, *argv)[0]


def test_every_agent_module_names_itself_as_registered():
    assert all(agent_module(name).ALGORITHM == name for name in AGENT_MODULES)


@pytest.mark.parametrize("algorithm", agent_lists.agents())
def test_every_agent_declares_its_presets_and_search_space(algorithm):
    from maxatar_agents.experiments import sweep

    module = agent_module(algorithm)
    assert module.PRESETS and module.DEFAULT_PRESET in module.PRESETS
    for values in module.PRESETS.values():
        module.Config(**values)  # every preset is a valid config
    assert (
        sweep.load_space(algorithm, None, module.Config(**module.PRESETS[module.DEFAULT_PRESET])) is module.SEARCH_SPACE
    )


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.ALGORITHM)
def test_every_config_field_is_an_option_with_its_documentation_as_help(module):
    algorithm = module.ALGORITHM
    parser = cli.build_parser(algorithm, module)
    options = {option: action for action in parser._actions for option in action.option_strings}
    helps = field_help(module.Config)
    for field in dataclasses.fields(module.Config):
        action = options[f"--{field.name.replace('_', '-')}"]
        assert helps[field.name], f"{field.name} has no documentation to show as help"
        assert action.help == helps[field.name].replace("%", "%%")
    assert options["--env"] is options["--env-id"]


def test_field_options_parse_to_the_field_types():
    config = config_from(
        "dqn",
        *("--env", "CartPole-v1", "--preset", "cartpole", "--lr", "0.01", "--hidden", "32,16", "--double-q"),
        *("--total-steps", "2e4", "--sticky-action-prob", "none", "--keep-best", "false"),
    )
    expected = dqn.Config(**dqn.PRESETS["cartpole"])
    expected = dataclasses.replace(expected, lr=0.01, hidden=(32, 16), double_q=True, total_steps=20_000)
    assert config == dataclasses.replace(expected, sticky_action_prob=None, keep_best=False)
    assert field_types(dqn.Config)["hidden"] == tuple[int, ...]


def test_set_applies_after_the_field_options():
    config = config_from("sac", "--batch-size", "32", "--set", "batch_size=16", "--initial-alpha", "0.5")
    assert (config.batch_size, config.initial_alpha, config.env_id) == (16, 0.5, "maxatar/Breakout-v0")


def test_a_mistyped_option_is_one_error_line(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main("dqn", ["--lrr", "0.1", "--out", "unused"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "python -m maxatar_agents.dqn: error: unrecognized arguments: --lrr 0.1; did you mean --lr? "
        "(see python -m maxatar_agents.dqn --help)"
    ]


MISTYPED = [  # what was typed, the suggestion
    (["--learning-rate", "0.1"], "unrecognized arguments: --learning-rate 0.1; did you mean --lr?"),
    (["--frams=1000"], "unrecognized arguments: --frams=1000; did you mean --frames?"),
    (["--set", "learning_rate=0.1"], "got 'learning_rate=0.1'; did you mean lr?"),
    (["--set", "gama=0.9"], "got 'gama=0.9'; did you mean gamma?"),
    (["--preset", "minatr"], "unknown preset 'minatr'; did you mean minatar?"),
    (["--verbose"], "unrecognized arguments: --verbose (see"),  # nothing close: no suggestion
]


@pytest.mark.parametrize("argv, said", MISTYPED, ids=lambda c: c[0] if isinstance(c, list) else None)
def test_a_mistyped_option_field_or_preset_names_the_closest_known_one(capsys, argv, said):
    with pytest.raises(SystemExit) as stop:
        cli.main("pqn", [*argv, "--out", "unused"])
    assert stop.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("python -m maxatar_agents.pqn: error: ") and said in line


def test_a_mistyped_agent_or_tool_names_the_closest_one(capsys):
    from maxatar_agents import commands

    with pytest.raises(SystemExit) as stop:
        commands.main(["pqm", "--out", "unused"])
    assert stop.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.endswith("...: got 'pqm'; did you mean pqn?")


@pytest.mark.parametrize("algorithm", ["pqn", "q_learning"])
def test_help_leads_with_the_options_a_first_run_needs(algorithm):
    from maxatar_agents.experiments import tracking

    parser = cli.build_parser(algorithm, agent_module(algorithm), tracking.COMMAND_LINE)
    text = parser.format_help()
    listed = re.findall(r"^  (-[-\w]+)", text, re.MULTILINE)  # each option's first spelling, in the order shown
    first = ["-h", "--env", "--frames", "--seeds", "--out", "--preset", "--resume"]
    assert listed[: len(first)] == first
    assert set(listed[len(first) :]) >= {"--seed", "--set", "--track", "--devices", "--lr", "--num-envs"}
    assert text.index("--resume") < text.index("more run options:") < text.index("config fields")
    assert text.splitlines()[0].startswith(f"usage: python -m maxatar_agents.{algorithm} --out DIR [--env ID]")


def test_a_bad_field_value_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stop:
        config_from("dqn", "--batch-size", "abc")
    assert stop.value.code == 2
    assert "argument --batch-size" in capsys.readouterr().err


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.ALGORITHM)
def test_the_preset_is_chosen_from_the_environment(module):
    algorithm = module.ALGORITHM
    for env_id, preset in [*env_presets(module).items(), ("maxatar/Seaquest-v0", module.DEFAULT_PRESET)]:
        short = env_id.split("/")[-1]
        config, chosen = config_and_preset(algorithm, "--env", short)
        assert chosen == preset and config.env_id == env_id
        assert config == module.Config(**{**module.PRESETS[preset], "env_id": env_id})
        assert make_config(module, short) == config  # the same choice from Python
    # No --env: the Config's environment and its preset; --preset overrides the choice, --env the preset's.
    config, chosen = config_and_preset(algorithm)
    assert (config.env_id, chosen) == (module.Config.env_id, module.DEFAULT_PRESET)
    config, chosen = config_and_preset(algorithm, "--env", "Breakout-v0", "--preset", "cartpole")
    assert (config.env_id, chosen) == ("maxatar/Breakout-v0", "cartpole")
    assert config.total_steps == module.PRESETS["cartpole"]["total_steps"]
    config, chosen = config_and_preset(algorithm, "--set", "env_id=CartPole-v1")
    assert (config.env_id, chosen) == ("maxatar/CartPole-v1", "cartpole")


def test_an_unknown_preset_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main("ppo", ["--preset", "atari", "--out", "unused"])
    assert stop.value.code == 2
    assert "unknown preset 'atari'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown preset"):
        make_config(ppo, "CartPole-v1", preset="atari")


def test_a_preset_file_or_out_the_command_cannot_use_is_one_error_line_before_anything_is_written(tmp_path, capsys):
    fifo, zero = tmp_path / "fifo.json", tmp_path / "zero.json"
    os.mkfifo(fifo)  # would block a plain read
    zero.symlink_to("/dev/zero")  # would be read until memory runs out
    package = Path(dqn.__file__).parents[1]  # maxatar_agents/
    out = tmp_path / "out"
    for argv, message in [
        (["--preset", str(fifo), "--out", str(out)], f"preset file '{fifo}': cannot read it as JSON: [Errno 22] not a"),
        (["--preset", str(zero), "--out", str(out)], f"preset file '{zero}': cannot read it as JSON: [Errno 22] not a"),
        (["--out", ""], "--out must name a directory, got ''"),
        (["--out", str(package / "my-run")], f"--out '{package / 'my-run'}' is inside the installed package {package}"),
        (["--out", str(package.parent / "maxatar")], "is inside the installed package"),
    ]:
        with pytest.raises(SystemExit) as stop:
            cli.main("dqn", ["--env", "CartPole-v1", *argv])
        err = capsys.readouterr().err
        assert stop.value.code == 2 and err.count("\n") == 1 and message in err, err
    assert not out.exists() and not (package / "my-run").exists()


@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_the_command_line_stops_on_sigterm_as_on_ctrl_c(sent, stray_sigterm_fails):
    # A run started in the background inherits SIGINT ignored, and a scheduler stops it with SIGTERM: inside
    # `stops_like_ctrl_c` (what `main` runs in) both raise KeyboardInterrupt, which saves the checkpoint
    # (test_agents.py: test_resume_after_ctrl_c_equals_uninterrupted_run); outside, the old handlers are back.
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with pytest.raises(KeyboardInterrupt), cli.stops_like_ctrl_c():
            signal.raise_signal(sent)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is stray_sigterm_fails
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_ctrl_c_while_compiling_stops_with_one_line_and_leaves_no_half_made_run(tmp_path, monkeypatch, capsys):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "compile_plan", interrupted)
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as stop:
        cli.main("dqn", ["--env", "CartPole-v1", "--total-steps", "4096", "--out", str(out), "--no-progress"])
    assert stop.value.code == cli.EXIT_INTERRUPTED
    err = capsys.readouterr().err.strip()
    assert err == "interrupted while compiling, before any training" and not out.exists()


def test_a_ctrl_c_inside_the_first_interval_promises_no_checkpoint(tmp_path, monkeypatch, capsys):
    """The commonest Ctrl-C (the first interval of a MinAtar run on a CPU lasts minutes): nothing was trained or
    saved, so the run says so, leaves no --out and offers no --resume that would fail."""
    from maxatar_agents.run import runner

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    schedule = types.SimpleNamespace(num_intervals=10, frames_per_interval=4096, total_frames=40960)
    parts = {"program": types.SimpleNamespace(schedule=schedule)}
    monkeypatch.setattr(cli, "compile_plan", lambda *args: parts)
    monkeypatch.setattr(cli, "check_run_memory", lambda *args: None)
    monkeypatch.setattr(cli, "initial_progress", lambda *args: runner.Progress(None, 0, [], 0.0))
    monkeypatch.setattr(runner, "run_intervals", interrupted)
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as stop:
        cli.main("dqn", ["--env", "CartPole-v1", "--out", str(out), "--no-progress"])
    assert stop.value.code == cli.EXIT_INTERRUPTED
    err = capsys.readouterr().err.strip()
    assert err == "interrupted before the first interval ended" and not out.exists()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the lost raise, on purpose
def test_a_ctrl_c_whose_raise_was_swallowed_stops_at_the_next_safe_point(stray_sigterm_fails):
    # The signal arrives while the garbage collector runs a callback, which only prints exceptions: the
    # KeyboardInterrupt is lost there, but `interrupts.check` (before each interval, between sweep trials)
    # raises it again; a stop asked for in an earlier `stops_like_ctrl_c` does not leak into the next.
    from maxatar_agents.run import interrupts

    class Finalized:
        def __del__(self):
            signal.raise_signal(signal.SIGTERM)

    with pytest.raises(KeyboardInterrupt), interrupts.stops_like_ctrl_c():
        Finalized()  # "Exception ignored in ... __del__": the program goes on
        interrupts.check()
    with interrupts.stops_like_ctrl_c():
        interrupts.check()


def test_a_ctrl_c_while_compiling_or_saving_is_raised_once_that_work_is_done(stray_sigterm_fails):
    # XLA's callbacks into Python must not raise (a run interrupted while compiling could crash), and a save
    # ends with a whole checkpoint: inside `deferred` the signal is recorded, then raised on the way out, once.
    from maxatar_agents.run import interrupts

    done = []
    with pytest.raises(KeyboardInterrupt), interrupts.stops_like_ctrl_c():
        with interrupts.deferred():
            with interrupts.deferred():
                signal.raise_signal(signal.SIGINT)
                done.append("inner")
            done.append("outer")
        done.append("after")
    assert done == ["inner", "outer"]
    with interrupts.stops_like_ctrl_c():  # a stop being handled: the save on the way out is not cut again
        try:
            signal.raise_signal(signal.SIGTERM)
        except KeyboardInterrupt:
            with interrupts.deferred():
                done.append("saved")
    assert done[-1] == "saved"


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.ALGORITHM)
def test_frames_is_an_alias_of_total_steps_as_in_the_sweep(module):
    """One name for one thing: the agents take `--total-steps` and its alias `--frames`, as the sweep does."""
    algorithm = module.ALGORITHM
    assert config_from(algorithm, "--frames", "4096").total_steps == 4096
    assert config_from(algorithm, "--total-steps", "4096").total_steps == 4096
    options = {o: a for a in cli.build_parser(algorithm, module)._actions for o in a.option_strings}
    assert options["--frames"] is options["--total-steps"]
