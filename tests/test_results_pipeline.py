"""The results run's bookkeeping (lab/results.py): the agent command line of each run, the
refusal to mix a fresh run with earlier results, and the table and figures rebuilt from results files alone.
The training itself is the agents' command line, tested in test_agents.py."""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import pytest

from lab import results as mr
from maxatar_agents.run.configs import config_to_dict

pytestmark = pytest.mark.slow  # the suite's slow tier (docs/contributing.md)


def namespace(tmp_path, **extra) -> argparse.Namespace:
    paths = {name: tmp_path / name for name in ("results", "runs", "pretrained", "gifs", "figures")}
    return argparse.Namespace(**paths, **({"setting": "minatar"} | extra))


def write_run(results, entry: mr.Entry, game: str, finals: list[float], greedy: list[float]) -> None:
    """A finished run's two result files, as `keep_results` leaves them (in its first part's directory when the
    entry trains its seeds in parts)."""
    write_result_files(
        mr.result_dir(results, entry, game) / entry.part_name(0),
        finals,
        greedy,
        seeds=list(range(len(finals))),
        env_id=f"maxatar/{game}",
        algorithm=entry.algo,
        preset=entry.preset,
        config=trained_config(entry, game),
        machine_at_start="load 0.1",
        machine_at_end="load 0.2",
    )


def trained_config(entry: mr.Entry, game: str, **changed) -> dict:
    """The config a run of `entry` records in its summary.json: today's preset, with `changed` fields."""
    return config_to_dict(mr.protocol_config(entry, game)) | changed


def write_result_files(out, finals: list[float], greedy: list[float], seeds: list[int], **machine) -> None:
    out.mkdir(parents=True)
    with open(out / "metrics.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["seed", "frames", "episodes", "recent_return", "wall_time"])
        writer.writeheader()
        for seed, final in zip(seeds, finals, strict=True):
            for frames, fraction in ((1000, 0.5), (2000, 1.0)):
                writer.writerow(
                    {"seed": seed, "frames": frames, "episodes": 9, "recent_return": final * fraction, "wall_time": 1}
                )
    summary = {"frames_per_seed": 2000, "wall_time": 600.0, "seeds": seeds, **machine}
    summary |= {"final_eval_return_per_seed": greedy, "final_eval_return_mean": sum(greedy) / len(greedy)}
    summary["final_eval_episodes"] = 100
    (out / "summary.json").write_text(json.dumps(summary))


def test_every_run_is_the_agents_own_command_line_with_frequent_checkpoints(tmp_path):
    pqn = mr.PROTOCOL[0]
    argv = mr.agent_argv(pqn, "Breakout-v0", tmp_path / "x", resume=False)
    assert argv[:6] == ["--env", "maxatar/Breakout-v0", "--preset", "minatar", "--seeds", "3"]
    assert "--total-steps" in argv and argv[argv.index("--checkpoint-every") + 1] == "100000"
    assert mr.agent_argv(pqn, "Breakout-v0", tmp_path / "x", resume=True)[-1] == "--resume"
    # Every agent on every game, and DQN's paper protocol on Breakout and at least one more game.
    assert {e.algo for e in mr.PROTOCOL if set(e.games) == set(mr.GAMES)} == {"dqn", "sac", "ppo", "pqn"}
    paper = {game for e in mr.PROTOCOL if (e.algo, e.preset) == ("dqn", "minatar") for game in e.games}
    assert "Breakout-v0" in paper and len(paper) >= 2


def test_a_fresh_run_refuses_to_mix_with_earlier_results(tmp_path):
    write_run(tmp_path / "results", mr.PROTOCOL[0], "Breakout-v0", [1, 2, 3], [1, 2, 3])
    args = namespace(tmp_path, resume=False, algos=None, games=mr.GAMES, no_progress=True, no_export=True)
    with pytest.raises(SystemExit, match="pass --resume"):
        mr.run(args)


def test_report_rebuilds_the_table_and_curves_from_the_results_files(tmp_path, capsys):
    results = tmp_path / "results"
    write_run(results, mr.PROTOCOL[0], "Breakout-v0", [10, 12, 14], [11, 13, 15])
    write_run(results, mr.PROTOCOL[1], "Breakout-v0", [4, 4, 4], [5, 5, 5])
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{mr.README_START}\nold\n{mr.README_END}\noutro\n")
    mr.report(namespace(tmp_path, readme=readme))
    text = readme.read_text()
    assert text.startswith("intro\n") and text.endswith("\noutro\n") and "old" not in text
    rows = [line for line in text.splitlines() if line.startswith("| Breakout")]
    assert rows[1].startswith(
        "| Breakout | PQN (`minatar`) | 3 of 10 | 0.0M | 12.0 ± 1.6 | 13.0 ± 1.6 | 10 min |"
    )  # the seeds of its first part, of the protocol's 10
    assert rows[0] == "| Breakout | 12.0 | 4.0 | - | - | 10 |"  # the page's first table: the last-100 returns
    assert rows[2].startswith("| Breakout | PPO (`minatar`)") and "| Breakout | 10 | 17.5 | 50 | ~5 |" in rows
    assert "dqn-fast on Breakout-v0" in text and "pqn-minatar on Breakout-v0 (3 of 10 seeds done)" in text
    sac = next(e for e in mr.PROTOCOL if e.algo == "sac")
    write_run(results, sac, "Breakout-v0", [1, 1, 1], [2, 2, 2])
    summary = mr.result_dir(results, sac, "Breakout-v0") / sac.part_name(0) / "summary.json"
    summary.write_text(json.dumps(json.loads(summary.read_text()) | {"final_eval_sampled_return_per_seed": [3, 4, 5]}))
    mr.report(namespace(tmp_path, readme=None))
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| Breakout | SAC"))
    assert "| 2.0 ± 0.0; sampled 4.0 |" in row  # a stochastic policy's sampled play beside its greedy
    assert (tmp_path / "figures" / "breakout.png").stat().st_size > 10_000
    assert not (tmp_path / "figures" / "asterix.png").exists()


DQN_PAPER = next(e for e in mr.PROTOCOL if (e.algo, e.preset) == ("dqn", "minatar"))


def test_a_run_too_long_for_one_sitting_trains_its_seeds_one_process_each(tmp_path):
    assert DQN_PAPER.parts() == [(0, 1), (1, 1), (2, 1)] and mr.PROTOCOL[0].parts() == [(0, 3), (3, 7)]
    out = tmp_path / "runs" / "dqn-minatar" / "Breakout-v0" / DQN_PAPER.part_name(2)
    argv = mr.agent_argv(DQN_PAPER, "Breakout-v0", out, resume=False, first=2, count=1)
    assert argv[argv.index("--seeds") + 1] == "1" and argv[argv.index("--seed") + 1] == "2"
    assert argv[argv.index("--out") + 1].endswith("seeds-2") and "--total-steps" not in argv


def test_the_parts_of_a_run_merge_into_one_run_and_ship_the_best_seeds_part(tmp_path, capsys, monkeypatch):
    results = tmp_path / "results"
    run = mr.result_dir(results, DQN_PAPER, "Breakout-v0")
    for first, greedy in ((0, 20.0), (1, 35.0), (2, 25.0)):
        machine = {"machine_at_start": f"s{first}", "machine_at_end": "e"}
        run_of = {"env_id": "maxatar/Breakout-v0", "algorithm": "dqn", "preset": "minatar"}
        run_of["config"] = trained_config(DQN_PAPER, "Breakout-v0")
        write_result_files(run / DQN_PAPER.part_name(first), [10.0 + first], [greedy], [first], **machine, **run_of)
        if first == 0:  # the table says how far a run in parts has got, and shows the seeds finished so far
            mr.report(namespace(tmp_path, readme=None))
            out = capsys.readouterr().out
            assert "dqn-minatar on Breakout-v0 (1 of 3 seeds done)" in out
            row = next(line for line in out.splitlines() if "DQN (`minatar`)" in line)
            assert "| DQN (`minatar`) | 1 of 3 |" in row and "| 10.0 (1 seed) | 20.0 (1 seed) |" in row  # no spread
            assert "| 10 min |" in row and not (run / "summary.json").exists()
    assert not mr.finished(results, DQN_PAPER, "Breakout-v0")
    # All its parts kept but the run not merged (interrupted just after): `run --resume` merges it, training nothing.
    monkeypatch.setattr(mr, "PROTOCOL", (DQN_PAPER,))
    args = namespace(tmp_path, resume=True, algos=None, games=["Breakout-v0"], no_progress=True, no_export=True)
    mr.run(argparse.Namespace(**vars(args), jobs=1))
    assert mr.finished(results, DQN_PAPER, "Breakout-v0")
    merged = json.loads((run / "summary.json").read_text())
    assert merged["seeds"] == [0, 1, 2] and merged["final_eval_return_per_seed"] == [20.0, 35.0, 25.0]
    assert merged["wall_time"] == 1800.0 and merged["machine_at_start"] == "s0"
    assert [part["dir"] for part in merged["parts"]] == ["seeds-0", "seeds-1", "seeds-2"]
    frames, table = mr.curve_table(mr.read_metrics(run / "metrics.csv"))
    assert table[:, -1].tolist() == [10.0, 11.0, 12.0]
    # The strongest run on Breakout: its best seed (1) is exported from that seed's part.
    args = namespace(tmp_path, force=False)
    mr.export(args)
    assert f"{tmp_path / 'runs' / 'dqn-minatar' / 'Breakout-v0' / 'seeds-1'}" in capsys.readouterr().err


def test_a_run_trained_before_its_preset_changed_is_marked_and_never_merged_with_todays(tmp_path, capsys):
    results = tmp_path / "results"
    sac = next(e for e in mr.PROTOCOL if e.algo == "sac")
    write_run(results, sac, "Asterix-v0", [4, 5, 6], [5, 5, 5])
    assert mr.preset_changes(results, sac, "Asterix-v0") == {}
    summary = mr.result_dir(results, sac, "Asterix-v0") / sac.part_name(0) / "summary.json"
    recorded = json.loads(summary.read_text())
    today = sac_preset("critic_target")
    other = "mean" if today == "min" else "min"
    before = trained_config(sac, "Asterix-v0", critic_target=other, retired_field=1)
    del before["n_step"]  # a field added since: it trained with the default, which the preset has changed
    summary.write_text(json.dumps(recorded | {"config": before}))
    changes = mr.preset_changes(results, sac, "Asterix-v0")
    assert changes == {"n_step": (1, 3), "critic_target": (other, today), "retired_field": (1, "(no such field)")}
    mr.report(namespace(tmp_path, readme=None))
    out = capsys.readouterr().out
    assert "| Asterix | SAC (`fast`) \\* | 3 of 5 |" in out  # the row is kept, marked, and said why
    assert f"sac-fast on Asterix-v0 (n_step 1 -> 3, critic_target {other!r} -> {today!r}, retired_field 1 -> " in out
    # Its missing seeds would train today's preset: `run --resume` refuses rather than merge the two.
    args = namespace(tmp_path, resume=True, algos=["sac"], games=["Asterix-v0"], no_progress=True, no_export=True)
    with pytest.raises(SystemExit, match="sac-fast on Asterix-v0 has seeds trained with an earlier preset"):
        mr.run(argparse.Namespace(**vars(args), jobs=1))
    assert not (tmp_path / "runs").exists()  # nothing started


def sac_preset(field: str):
    from maxatar_agents.algorithms import sac

    return sac.PRESETS["fast"].get(field, getattr(sac.Config, field))


GYMNAX_PQN = mr.GYMNAX_PROTOCOL[0]


def test_the_like_for_like_runs_are_pqn_and_ppo_in_gymnax_setting_at_the_papers_budget(tmp_path):
    assert [(e.algo, e.setting) for e in mr.GYMNAX_PROTOCOL] == [("pqn", "gymnax"), ("ppo", "gymnax")]
    # Only the games some source publishes a gymnax-setting return for (none publishes Seaquest).
    assert "Seaquest-v0" not in GYMNAX_PQN.games and "Breakout-v0" in GYMNAX_PQN.games
    argv = mr.agent_argv(GYMNAX_PQN, "Breakout-v0", tmp_path / "x", resume=False)
    assert argv[argv.index("--env-setting") + 1] == "gymnax" and argv[argv.index("--total-steps") + 1] == "10000000"
    assert "--env-setting" not in mr.agent_argv(mr.PROTOCOL[0], "Breakout-v0", tmp_path / "x", resume=False)
    assert mr.planned_runs("gymnax") == [(e, g) for e in mr.GYMNAX_PROTOCOL for g in e.games]
    assert (
        mr.results_dir("gymnax") == Path("benchmarks/results/agents/gymnax") and mr.results_dir("minatar") == mr.RESULTS
    )
    assert mr.runs_dir("gymnax") == Path("runs/gymnax_results") and mr.runs_dir("minatar") == mr.RUNS


def test_the_gymnax_setting_table_sets_the_runs_beside_the_published_returns(tmp_path, capsys, monkeypatch):
    results = tmp_path / "results"
    write_run(results, GYMNAX_PQN, "Breakout-v0", [20.0, 30.0, 25.0], [21.0, 31.0, 26.0])
    page = tmp_path / "results.md"
    page.write_text(f"{mr.README_START}\nkept\n{mr.README_END}\n{mr.GYMNAX_START}\nold\n{mr.GYMNAX_END}\n")
    mr.report(namespace(tmp_path, readme=page, setting="gymnax"))
    text = page.read_text()
    assert "kept" in text and "old" not in text  # only its own section is rewritten
    rows = {line.split(" | ")[0]: line for line in text.splitlines() if line.startswith("| ")}
    # The last logged point of each seed (write_run's metrics end at 2000 frames), then each source's figure.
    assert rows["| Breakout"] == "| Breakout | 25.0 ± 4.1, greedy 26.0 (3 seeds, 0.002M frames) | - | 28 | 22.88 |"
    assert rows["| Asterix"] == "| Asterix | - | - | 15 | 14.95 |" and "| Seaquest" not in rows
    assert "pqn-minatar on Asterix-v0" in text and "pqn-minatar on Breakout-v0" not in text  # still to train
    # A run trained before its preset changed keeps its cell, marked and said why, as in MinAtar's table.
    summary = mr.result_dir(results, GYMNAX_PQN, "Breakout-v0") / "summary.json"
    recorded = json.loads(summary.read_text())
    summary.write_text(json.dumps(recorded | {"config": recorded["config"] | {"gamma": 0.9}}))
    mr.report(namespace(tmp_path, readme=page, setting="gymnax"))
    text = page.read_text()
    assert "| Breakout | 25.0 ± 4.1, greedy 26.0 (3 seeds, 0.002M frames) \\* | - |" in text
    assert "not what the preset trains today: pqn-minatar on Breakout-v0 (gamma 0.9 -> 0.99)" in text
    # A finished gymnax-setting run ships no policy: the shipped ones play MinAtar's setting.
    monkeypatch.setattr(mr, "export", lambda args: pytest.fail("exported a gymnax-setting run"))
    mr.finish_run(GYMNAX_PQN, "Breakout-v0", namespace(tmp_path, no_export=False, setting="gymnax"))


def test_the_wall_clock_of_a_run_trained_partly_on_a_gpu_sums_each_kind_of_machine_apart():
    cpu = {"wall_time": 1200.0, "machine_at_start": "AMD EPYC, AVX-512, 2 logical CPUs, cpu backend; load 1.0"}
    gpu = {"wall_time": 48.0, "machine_at_start": "Intel(R) Xeon(R) Processor, 16 logical CPUs, gpu backend"}
    assert mr.wall_clock({**cpu, "parts": [cpu, cpu]}) == "40 min"
    assert mr.wall_clock(cpu) == "20 min" and mr.wall_clock(gpu) == "0.8 min GPU"
    assert mr.wall_clock({"parts": [cpu, gpu, gpu]}) == "20 min CPU + 1.6 min GPU"
    assert mr.machine_kind({}) == "CPU"  # a run that recorded no machine line: this project's CPU protocol


def test_the_setting_picks_the_protocol_and_its_directories(monkeypatch, capsys):
    monkeypatch.setattr(mr, "run", lambda args: print(args.setting, args.results, args.runs))
    monkeypatch.setattr(sys, "argv", ["results", "run", "--setting", "gymnax"])
    mr.main()
    assert capsys.readouterr().out.split()[:3] == ["gymnax", "benchmarks/results/agents/gymnax", "runs/gymnax_results"]
    monkeypatch.setattr(sys, "argv", ["results", "run", "--setting", "pgx"])
    with pytest.raises(SystemExit):
        mr.main()
    assert "--setting: invalid choice: 'pgx'" in capsys.readouterr().err


def test_the_machine_note_names_the_widest_vector_extension_that_wall_clocks_depend_on():
    from maxatar.machine import cpu_description, cpu_flags, vector_isa

    cpuinfo = "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse2 avx fma avx2 avx512f avx512vl\n"
    assert vector_isa(cpu_flags(cpuinfo)) == "AVX-512"
    assert vector_isa(cpu_flags(cpuinfo.replace(" avx512f avx512vl", ""))) == "AVX2"
    assert vector_isa(cpu_flags("model name\t: Neoverse\nFeatures\t: fp asimd\n")) == ""
    assert cpu_description().endswith("logical CPUs") and mr.machine().startswith(cpu_description())


def test_the_results_page_is_what_report_builds_from_the_committed_results(tmp_path, monkeypatch):
    root = Path(__file__).resolve().parents[1]
    page = tmp_path / mr.PAGE
    page.parent.mkdir(parents=True)
    page.write_text((root / mr.PAGE).read_text())
    monkeypatch.chdir(tmp_path)  # the figures go to tmp_path/docs/results, linked from docs/results.md as results/
    front = tmp_path / mr.FRONT_DOOR
    front.write_text((root / mr.FRONT_DOOR).read_text())
    args = namespace(tmp_path, readme=page, front_door=front)
    args.results, args.figures = root / mr.RESULTS, mr.FIGURES
    mr.report(args)
    mr.report(argparse.Namespace(**(vars(args) | {"setting": "gymnax", "results": root / mr.results_dir("gymnax")})))
    assert page.read_text() == (root / mr.PAGE).read_text(), f"{mr.PAGE} is stale: run `report --readme {mr.PAGE}`"
    drawn = sorted(p.name for p in (tmp_path / mr.FIGURES).iterdir())
    assert drawn == sorted(p.name for p in (root / mr.FIGURES).glob("*.png")) and len(drawn) == len(mr.GAMES) + 1
    assert front.read_text() == (root / mr.FRONT_DOOR).read_text(), "README's short table is stale: run `report`"


# A stand-in for `python -m maxatar_agents.<algo>` (the real one is tested in test_agents_cli.py): it leaves the
# files a finished part leaves, and marks in the game's directory when each seed's process started and ended.
FAKE_AGENT = """
import json, sys, time
from pathlib import Path
argv = sys.argv[1:]
out, seed = Path(argv[argv.index("--out") + 1]), int(argv[argv.index("--seed") + 1])
marks = out.parent

def wait_for(*names):
    deadline = time.time() + 30
    while not all((marks / n).exists() for n in names):
        if time.time() > deadline:
            sys.exit(3)
        time.sleep(0.05)

try:
    (marks / f"started-{seed}").touch()
    if marks.joinpath("fail-1").exists():  # seed 1 fails once seed 0 runs; seed 0 runs until it is stopped
        wait_for("started-0")
        if seed == 1:
            sys.exit(1)
        wait_for("never")
    if not (marks / "side-by-side").exists():
        running = [s for s in range(3) if (marks / f"started-{s}").exists() and not (marks / f"ended-{s}").exists()]
        if running != [seed]:
            sys.exit(5)  # one at a time, a part starts only once the one before it has ended
    elif seed == 2 and not any((marks / f"ended-{s}").exists() for s in (0, 1)):
        sys.exit(4)  # three parts at once with --jobs 2
    elif seed < 2:
        wait_for("started-0", "started-1")  # only side by side do seeds 0 and 1 both start
except KeyboardInterrupt:
    (marks / f"interrupted-{seed}").touch()
    sys.exit(130)
out.mkdir(parents=True)
rows = "seed,frames,episodes,recent_return,wall_time\\n" + f"{seed},2000,9,{seed + 1.0},1\\n"
(out / "metrics.csv").write_text(rows)
summary = {"frames_per_seed": 2000, "wall_time": 60.0, "seeds": [seed], "final_eval_episodes": 100}
summary["config"] = json.loads((marks.parents[2] / "config.json").read_text())  # the fixture's: today's preset
summary |= {"env_id": argv[argv.index("--env") + 1], "algorithm": "dqn", "preset": argv[argv.index("--preset") + 1]}
summary["checkpoint"] = str(out.resolve() / "checkpoint.npz")
summary |= {"final_eval_return_per_seed": [10.0 * seed], "final_eval_return_mean": 10.0 * seed}
(out / "summary.json").write_text(json.dumps(summary))
meta = {"format": "maxatar_agents.checkpoint/1", "algorithm": "dqn", "final_eval": {"return_mean": 10.0 * seed}}
(out / "checkpoint.json").write_text(json.dumps(meta))
(marks / f"ended-{seed}").touch()
print(f"seed {seed} trained")
"""


@pytest.fixture
def fake_parts(tmp_path, monkeypatch):
    """`run --jobs 2` over DQN's paper protocol on Breakout alone, its parts trained by FAKE_AGENT."""
    script = tmp_path / "fake_agent.py"
    script.write_text(FAKE_AGENT)
    monkeypatch.setattr(mr, "PROTOCOL", (DQN_PAPER,))
    monkeypatch.setattr(mr, "agent_command", lambda algo: [sys.executable, str(script)])
    args = namespace(tmp_path, resume=False, algos=None, games=["Breakout-v0"], no_progress=True, no_export=True)
    args.jobs = 2
    marks = tmp_path / "runs" / DQN_PAPER.name / "Breakout-v0"
    marks.mkdir(parents=True)
    (tmp_path / "config.json").write_text(json.dumps(trained_config(DQN_PAPER, "Breakout-v0")))
    (marks / "side-by-side").touch()
    return args, marks


def test_jobs_train_the_parts_side_by_side_and_merge_the_run(fake_parts):
    args, marks = fake_parts
    mr.run(args)
    assert mr.finished(args.results, DQN_PAPER, "Breakout-v0")  # seeds 0 and 1 ran together, seed 2 after one
    merged = json.loads((mr.result_dir(args.results, DQN_PAPER, "Breakout-v0") / "summary.json").read_text())
    assert merged["seeds"] == [0, 1, 2] and merged["final_eval_return_per_seed"] == [0.0, 10.0, 20.0]
    assert all(part["machine_at_start"] for part in merged["parts"])  # the load at each part's start is kept
    # The committed files name each checkpoint where the default --runs keeps it, not this machine's path.
    assert merged["parts"][2]["checkpoint"] == "runs/minatar_results/dqn-minatar/Breakout-v0/seeds-2/checkpoint.npz"
    assert (marks / "seeds-2.log").is_file()


def test_one_job_trains_the_parts_in_turn_each_showing_its_output_here(fake_parts, capfd):
    args, marks = fake_parts
    args.jobs = 1
    (marks / "side-by-side").unlink()
    mr.run(args)
    assert mr.finished(args.results, DQN_PAPER, "Breakout-v0")
    out = capfd.readouterr().out
    assert out.count("$ python -m maxatar_agents.dqn") == 3 and all(f"seed {s} trained" in out for s in range(3))
    assert ">>" not in out and not list(marks.glob("*.log"))


def test_a_failed_part_stops_the_others_as_ctrl_c_does(fake_parts):
    args, marks = fake_parts
    (marks / "fail-1").touch()
    with pytest.raises(SystemExit, match=r"seeds-1 stopped with exit code 1; its output is in .*seeds-1\.log"):
        mr.run(args)
    assert (marks / "interrupted-0").exists() and not (marks / "started-2").exists()
    assert not mr.part_finished(args.results, DQN_PAPER, "Breakout-v0", 0)


def test_jobs_must_be_a_positive_whole_number(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["minatar_results", "run", "--jobs", "0"])
    with pytest.raises(SystemExit):
        mr.main()
    assert "--jobs: must be >= 1, got 0" in capsys.readouterr().err
    monkeypatch.setattr(mr, "run", lambda args: print(f"jobs={args.jobs}"))
    monkeypatch.setattr(sys, "argv", ["minatar_results", "run", "--jobs", "3"])
    mr.main()
    assert "jobs=3" in capsys.readouterr().out


def test_the_status_line_is_the_progress_bars_latest_redraw(tmp_path):
    log = tmp_path / "seeds-0.log"
    log.write_bytes(b"$ python -m maxatar_agents.dqn ...\n 10%|# | 0.5M/5M\r 20%|## | 1.0M/5M\r\n")
    assert mr.latest_line(log) == "20%|## | 1.0M/5M"
    assert mr.latest_line(tmp_path / "seeds-1.log") == "starting"
    assert mr.part_log(tmp_path / "dqn-minatar" / "Breakout-v0" / "seeds-2").name == "seeds-2.log"
