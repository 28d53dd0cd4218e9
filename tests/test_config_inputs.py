"""Config values as text: `--set FIELD=VALUE` read by one function (`configs.parse_assignments`) for the agents'
command line and the sweep, and preset files whose content is wrong reported as one `error:` line that names
the file (and the field), exit status 2, before `--out` exists, from both command lines. Nothing compiles."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from maxatar_agents.algorithms import dqn, pqn
from maxatar_agents.algorithms.fields import ConfigError, ConfigTypeError
from maxatar_agents.experiments import sweep
from maxatar_agents.run import cli
from maxatar_agents.run.configs import AssignmentError, make_config, parse_assignments

pytestmark = pytest.mark.slow  # the suite's slow tier (docs/contributing.md)

ROOT = Path(__file__).resolve().parents[1]

# (file content, what the error line says besides the file's name)
BAD_PRESET_FILES = [
    (b"{not json", "cannot read it as JSON"),
    (b"\xff\xfe{}", "cannot read it as JSON"),  # not UTF-8 text
    (b"[64, 64]", "must hold a JSON object of config fields, got list"),
    (b'{"hidden": "abc"}', "hidden must be a tuple of integers such as (64, 64), got 'abc'"),
    (b'{"lr": "0.1"}', "lr must be a number, got '0.1'"),
    (b'{"gamma": 7}', "gamma must be in [0, 1], got 7"),
    (b'{"env_id": 5}', "env_id must be a string"),
    (b'{"hiddn": [64]}', "unknown config field(s) ['hiddn']"),
]


def test_set_items_are_parsed_into_the_fields_types():
    items = ["lr=3e-4", "hidden=64,64", "double-q=yes", "obs_type=none", "total_steps=1_000"]
    assert parse_assignments(items, dqn.Config) == {
        "lr": 3e-4,
        "hidden": (64, 64),
        "double_q": True,
        "obs_type": None,
        "total_steps": 1000,
    }
    assert parse_assignments(["lr=1", "lr=2"], dqn.Config) == {"lr": 2.0}  # the last one wins
    for item, message in [
        ("learning_rate=1", "--set expects FIELD=VALUE with FIELD one of: env_id, "),
        ("lr", "got 'lr'"),
        ("batch_size=abc", "--set batch_size=abc: could not convert"),
        ("total_steps=2.5", "--set total_steps=2.5: expected an integer, got '2.5'"),
        ("double_q=maybe", "--set double_q=maybe: expected a boolean, got 'maybe'"),
    ]:
        with pytest.raises(AssignmentError) as error:
            parse_assignments([item], dqn.Config)
        assert message in str(error.value) and error.value.item == item


@pytest.mark.parametrize("item", ["learning_rate=1", "batch_size=abc"])
def test_both_command_lines_say_the_same_of_a_bad_set_item(capsys, tmp_path, item):
    with pytest.raises(AssignmentError) as expected:
        parse_assignments([item], pqn.Config)
    argvs = {
        "python -m maxatar_agents.pqn": lambda: cli.main("pqn", ["--set", item, "--out", str(tmp_path / "run")]),
        "python -m maxatar_agents.sweep": lambda: sweep.main(
            ["--algo", "pqn", "--trials", "1", "--set", item, "--out", str(tmp_path / "run")]
        ),
    }
    for prog, main in argvs.items():
        with pytest.raises(SystemExit) as stop:
            main()
        assert stop.value.code == 2
        assert capsys.readouterr().err == f"{prog}: error: {expected.value}\n"
    assert not (tmp_path / "run").exists()


def test_the_agents_set_still_reads_a_comma_list_as_a_grid_sweep():
    args = cli.build_parser("pqn", pqn).parse_args(["--set", "lr=1e-4,3e-4", "--out", "unused"])
    assert cli.make_sweep(args, pqn) == {"lr": (1e-4, 3e-4)}
    with pytest.raises(sweep.SweepError, match="--set lr=1e-4,3e-4: could not convert"):
        sweep.parse_set(["lr=1e-4,3e-4"], "pqn")  # a search space is --space's


@pytest.mark.parametrize("content, message", BAD_PRESET_FILES, ids=lambda c: str(c)[:20])
def test_a_bad_preset_file_is_one_line_naming_it_before_out_exists(capsys, tmp_path, content, message):
    preset, out = tmp_path / "bad.json", tmp_path / "run"
    preset.write_bytes(content)
    commands = {
        "python -m maxatar_agents.dqn": lambda: cli.main("dqn", ["--preset", str(preset), "--out", str(out)]),
        "python -m maxatar_agents.sweep": lambda: sweep.main(
            ["--algo", "dqn", "--trials", "1", "--preset", str(preset), "--out", str(out)]
        ),
    }
    for prog, main in commands.items():
        with pytest.raises(SystemExit) as stop:
            main()
        err = capsys.readouterr().err
        assert stop.value.code == 2 and err.count("\n") == 1, err
        assert err.startswith(f"{prog}: error: ") and f"preset file {str(preset)!r}" in err and message in err, err
        assert not out.exists()


def test_a_field_error_names_the_preset_file_only_for_the_files_values(tmp_path):
    preset = tmp_path / "best.json"
    preset.write_text(json.dumps({"hidden": "abc", "gamma": 0.9}))
    with pytest.raises(ConfigTypeError) as error:
        make_config(dqn, "maxatar/CartPole-v1", str(preset))
    assert error.value.field == "hidden"
    assert (
        str(error.value)
        == f"preset file {str(preset)!r}: hidden must be a tuple of integers such as (64, 64), got 'abc'"
    )
    assert make_config(dqn, "maxatar/CartPole-v1", str(preset), hidden=(8,)).hidden == (8,)  # replaced on top
    with pytest.raises(ConfigError) as error:  # a value given on top is not the file's
        make_config(dqn, "maxatar/CartPole-v1", str(preset), hidden=(8,), gamma=2.0)
    assert str(error.value) == "gamma must be in [0, 1], got 2.0"


def test_the_real_entry_point_exits_2_with_one_line(tmp_path):
    preset, out = tmp_path / "bad.json", tmp_path / "run"
    preset.write_text(json.dumps({"hidden": "abc"}))
    done = subprocess.run(
        [sys.executable, "-m", "maxatar_agents.dqn", "--preset", str(preset), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"error: preset file {str(preset)!r}: hidden must be a tuple" in done.stderr
    assert not out.exists()
