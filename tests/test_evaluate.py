"""The evaluation of finished runs (maxatar_agents/evaluate.py): rliable's statistics on hand-computed samples,
the stratified bootstrap's coverage on synthetic data, and the command line on the committed results."""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from maxatar_agents.experiments import statistics as ev

RESULTS = Path(__file__).resolve().parent.parent / "benchmarks/results/agents/minatar"


def test_iqm_of_known_samples():
    # 8 values: int(8 / 4) = 2 cut at each end, the mean of the middle four
    assert ev.iqm(np.arange(1.0, 9.0)) == pytest.approx(4.5)
    assert ev.iqm(np.array([0.0, 1, 2, 3, 100, 4, 5, 6])) == pytest.approx((2 + 3 + 4 + 5) / 4)  # outlier cut
    # 9 values: 2 cut at each end; 3 values: none cut (scipy's trim_mean(x, 0.25), as rliable)
    assert ev.iqm(np.array([9.0, 1, 8, 2, 7, 3, 6, 4, 5])) == pytest.approx(5.0)
    assert ev.iqm(np.array([1.0, 2, 10])) == pytest.approx(13 / 3)
    # along the last axis, one value per leading index (the bootstrap samples)
    np.testing.assert_allclose(ev.iqm(np.array([[1.0, 2, 3, 4], [0, 0, 4, 8]])), [2.5, 2.0])


def test_iqm_is_scipys_trimmed_mean():
    stats = pytest.importorskip("scipy.stats")
    x = np.random.default_rng(0).normal(size=(20, 15))
    np.testing.assert_allclose(ev.iqm(x), stats.trim_mean(x, 0.25, axis=-1))


def test_optimality_gap():
    assert ev.optimality_gap(np.array([0.5, 1.5, 0.8, 2.0])) == pytest.approx((0.5 + 0 + 0.2 + 0) / 4)
    assert ev.optimality_gap(np.array([1.0, 3.0])) == 0.0
    assert ev.optimality_gap(np.array([-1.0, 0.0])) == pytest.approx(1.5)  # below random counts in full
    assert ev.optimality_gap(np.array([1.0, 3.0]), gamma=2.0) == pytest.approx(0.5)


def test_normalisation_random_is_0_and_minatar_dqn_is_1():
    random = {"Breakout-v0": 0.5, "SpaceInvaders-v0": 3.0}
    assert ev.normalise(0.5, "Breakout-v0", random) == 0.0
    assert ev.normalise(10.0, "Breakout-v0", random) == 1.0  # MinAtar's DQN: 10
    np.testing.assert_allclose(ev.normalise([19.5, 0.0], "Breakout-v0", random), [2.0, -0.5 / 9.5])
    assert ev.normalise(43.0, "SpaceInvaders-v0", random) == 1.0
    with pytest.raises(ValueError, match="not above"):
        ev.normalise(1.0, "Breakout-v0", {"Breakout-v0": 10.0})


def test_aggregates_over_games_of_different_seed_counts():
    per_game = [np.array([1.0, 2.0, 3.0]), np.array([10.0]), np.array([0.0, 0.0])]
    got = ev.aggregate(per_game)
    assert got["mean"] == pytest.approx((2 + 10 + 0) / 3)  # mean over games of the game means
    assert got["median"] == pytest.approx(2.0)  # median over games of the game means
    assert got["iqm"] == pytest.approx(ev.iqm(np.array([1.0, 2, 3, 10, 0, 0])))  # all runs pooled
    assert got["optimality_gap"] == pytest.approx((0 + 0 + 0 + 0 + 1 + 1) / 6)
    assert ev.aggregate([np.array([1.0, 5.0, 6.0])])["median"] == 5.0  # one game: the median over its seeds


def test_probability_of_improvement_on_hand_made_samples():
    pi = ev.probability_of_improvement
    assert pi([np.array([5.0, 6, 7])], [np.array([1.0, 2, 3, 4])]) == 1.0
    assert pi([np.array([1.0, 2, 3])], [np.array([5.0, 6])]) == 0.0
    same = np.array([1.0, 4.0, 2.0])
    assert pi([same], [same]) == 0.5
    assert pi([np.array([1.0, 2, 3])], [np.array([2.0, 2, 2])]) == 0.5  # 0 + 1/2 (tie) + 1 over three pairs
    x, y = np.array([3.0, 4.0]), np.array([1.0, 2.0, 3.5])
    assert pi([x], [y]) == pytest.approx(5 / 6)
    assert pi([x, np.ones(2)], [y, np.zeros(3)]) == pytest.approx((5 / 6 + 1) / 2)  # averaged over games
    stats = pytest.importorskip("scipy.stats")
    u = stats.mannwhitneyu(x, y, alternative="greater").statistic
    assert pi([x], [y]) == pytest.approx(u / (x.size * y.size))


def test_performance_profile():
    taus = np.array([0.0, 1.0, 2.0, 3.0])
    np.testing.assert_allclose(ev.profile([np.array([0.5, 1.5, 2.5])], taus), [1, 2 / 3, 1 / 3, 0])
    # each game weighs the same, whatever its number of seeds
    got = ev.profile([np.array([0.5]), np.array([2.5, 2.5, 2.5])], taus)
    np.testing.assert_allclose(got, [1, 0.5, 0.5, 0])


def test_stratified_bootstrap_keeps_each_games_runs():
    per_game = [np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0])]
    drawn = ev.resample(per_game, 50, np.random.default_rng(0))
    assert [d.shape for d in drawn] == [(50, 3), (50, 2)]
    assert set(np.unique(drawn[0])) <= {1.0, 2.0, 3.0} and set(np.unique(drawn[1])) <= {10.0, 20.0}


def test_bootstrap_interval_covers_the_truth_at_about_its_rate():
    """200 synthetic experiments (5 games of different means and spreads, 10 seeds each): the 95% interval of
    the mean over games covers the true mean in about 95% of them."""
    rng = np.random.default_rng(0)
    means, spreads = np.array([0.2, 0.8, 1.0, 1.5, 3.0]), np.array([0.1, 0.3, 0.2, 0.5, 1.0])
    truth, covered = means.mean(), 0
    for _ in range(200):
        per_game = [rng.normal(m, s, 10) for m, s in zip(means, spreads, strict=True)]
        low, high = ev.interval(ev.aggregate(ev.resample(per_game, 1000, rng))["mean"])
        covered += low <= truth <= high
    assert 0.88 <= covered / 200 <= 0.99


def write_run(path: Path, algorithm: str, game: str, rows: list[tuple[int, int, float]], **summary) -> None:
    """A finished run's summary.json and metrics.csv with rows (seed, frames, recent_return)."""
    path.mkdir(parents=True)
    seeds = sorted({seed for seed, _, _ in rows})
    summary = {"algorithm": algorithm, "preset": "p", "env_id": f"maxatar/{game}", "seeds": seeds, **summary}
    (path / "summary.json").write_text(json.dumps(summary))
    with open(path / "metrics.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["seed", "frames", "recent_return"])
        writer.writerows(rows)


def test_reading_runs(tmp_path):
    # the last row of a seed is its most frames, wherever it stands in the file
    write_run(tmp_path / "a" / "Breakout-v0", "dqn", "Breakout-v0", [(0, 200, 7.0), (1, 200, 8.0), (0, 100, 1.0)])
    write_run(tmp_path / "a" / "Freeway-v0", "dqn", "Freeway-v0", [(0, 100, 20.0)], final_eval_return_per_seed=[9])
    (tmp_path / "a" / "Freeway-v0" / "seeds-0").mkdir()  # below a run: not looked into
    write_run(tmp_path / "a" / "Freeway-v0" / "seeds-0" / "x", "dqn", "Freeway-v0", [(0, 1, 1.0)])
    agents = ev.read_runs([str(tmp_path / "a")], "recent_return", None)
    assert list(agents) == ["dqn-p"] and list(agents["dqn-p"]) == ["Breakout-v0", "Freeway-v0"]
    assert agents["dqn-p"]["Breakout-v0"]["scores"] == [7.0, 8.0]
    assert agents["dqn-p"]["Freeway-v0"]["scores"] == [20.0]
    assert ev.read_runs([str(tmp_path / "a")], "recent_return", ["Freeway-v0"])["dqn-p"].keys() == {"Freeway-v0"}
    with pytest.raises(SystemExit, match="final_eval_return_per_seed"):
        ev.read_runs([str(tmp_path / "a")], "final_eval", None)
    write_run(tmp_path / "text" / "Freeway-v0", "dqn", "Freeway-v0", [(0, 1, 1.0)], final_eval_return_per_seed=["1"])
    with pytest.raises(SystemExit, match=r"final_eval_return_per_seed \['1'\] is not a list of numbers"):
        ev.read_runs([str(tmp_path / "text")], "final_eval", None)  # a score given as text is no score
    # labels; a second run of the same seeds under the same agent is refused, under another label it is not
    write_run(tmp_path / "b" / "Breakout-v0", "dqn", "Breakout-v0", [(0, 200, 3.0)])
    with pytest.raises(SystemExit, match="different labels"):
        ev.read_runs([str(tmp_path / "a"), str(tmp_path / "b")], "recent_return", None)
    agents = ev.read_runs([f"mine={tmp_path / 'b'}", str(tmp_path / "a")], "recent_return", None)
    assert agents["mine"]["Breakout-v0"]["scores"] == [3.0]


def test_without_out_the_evaluation_goes_under_the_runs_never_into_the_working_directory(tmp_path, monkeypatch):
    write_run(tmp_path / "runs" / "a", "dqn", "Breakout-v0", [(0, 100, 7.0), (1, 100, 8.0)])
    write_run(tmp_path / "runs" / "b", "dqn", "Breakout-v0", [(2, 100, 9.0)])
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    written = ["evaluation.json", "evaluation.md", "performance_profile.png"]
    ev.main([str(tmp_path / "runs" / "a"), "--bootstrap", "10"])  # one run: under it
    assert all((tmp_path / "runs" / "a" / "evaluation" / name).is_file() for name in written)
    ev.main(["first=../runs/a", "second=../runs/b", "--bootstrap", "10"])  # several: in the directory they share
    assert all((tmp_path / "runs" / "evaluation" / name).is_file() for name in written)
    ev.main(["../runs", "--bootstrap", "10", "--out", "mine"])  # --out: where it says
    assert all((work / "mine" / name).is_file() for name in written)
    assert [p.name for p in work.iterdir()] == ["mine"]
    assert ev.default_out([str(tmp_path / "runs" / "a")]) == tmp_path / "runs" / "a" / "evaluation"


def test_command_line_on_the_committed_results(tmp_path, capsys):
    dirs = sorted(str(p) for p in RESULTS.iterdir() if p.is_dir())
    ev.main([*dirs, "--out", str(tmp_path), "--bootstrap", "2000"])
    printed = capsys.readouterr().out
    assert "| pqn-minatar | 5 | 50 |" in printed  # 5 games x 10 seeds
    result = json.loads((tmp_path / "evaluation.json").read_text())
    assert (tmp_path / "evaluation.md").read_text() in printed
    assert (tmp_path / "performance_profile.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    def numbers(node):
        if isinstance(node, dict):
            return [x for v in node.values() for x in numbers(v)]
        if isinstance(node, list):
            return [x for v in node for x in numbers(v)]
        return [node] if isinstance(node, float) else []

    assert all(math.isfinite(x) for x in numbers(result))
    agents = result["agents"]
    assert agents["dqn-minatar"]["runs"] == 6  # 2 games x 3 seeds: the seeds-<n>/ parts not read again
    pqn = agents["pqn-minatar"]["aggregate"]
    assert pqn["iqm"]["estimate"] > 1 and pqn["iqm"]["ci"][0] > 1  # above MinAtar's published DQN
    for agent in agents.values():
        for m in ev.METRICS:
            low, high = agent["aggregate"][m]["ci"]
            assert low <= agent["aggregate"][m]["estimate"] <= high
    # the README's "final" column: PQN's Breakout seeds average 32.4 (10 seeds)
    assert np.mean(agents["pqn-minatar"]["per_game"]["Breakout-v0"]["scores"]) == pytest.approx(32.4, abs=0.05)
    pairs = {(p["x"], p["y"]): p["estimate"] for p in result["probability_of_improvement"]}
    assert pairs[("pqn-minatar", "dqn-fast")] == 1.0
    assert pairs[("pqn-minatar", "ppo-minatar")] + pairs[("ppo-minatar", "pqn-minatar")] == pytest.approx(1.0)
    # the same inputs and seed give the same intervals
    ev.main([*dirs, "--out", str(tmp_path / "again"), "--bootstrap", "2000"])
    again = json.loads((tmp_path / "again" / "evaluation.json").read_text())
    assert again["agents"] == result["agents"]


def test_random_policy_measurement_runs():
    """A few episodes of the measurement behind random_scores.json (the committed file: 1000 per game)."""
    returns, lengths = ev.random_returns("maxatar/Breakout-v0", episodes=8, max_steps=1000, seed=0)
    assert returns.shape == lengths.shape == (8,)
    assert np.all(returns >= 0) and np.all(lengths > 0) and np.all(lengths < 1000)
    recorded = json.loads(ev.RANDOM_SCORES.read_text())
    assert set(recorded["scores"]) == set(ev.GAMES) and "--measure-random" in recorded["command"]
    assert all(0 <= ev.read_random_scores()[g] < ev.MINATAR_DQN[g] for g in ev.GAMES)


def evaluate_error(capsys, *argv) -> str:
    """`python -m maxatar_agents.evaluate ARGV`'s one error line (exit status 2)."""
    with pytest.raises(SystemExit) as stop:
        ev.main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1 and ": error: " in err, err
    return err


def test_bad_runs_files_and_options_are_one_error_line(tmp_path, capsys):
    good = tmp_path / "good"
    write_run(good, "dqn", "Breakout-v0", [(0, 100, 1.0)])
    run = tmp_path / "run"
    broken = {
        "summary.json: cannot read it as JSON: Expecting": lambda: (run / "summary.json").write_text("{"),
        "summary.json: cannot read it as JSON: the key 'seeds' appears": lambda: (run / "summary.json").write_text(
            '{"algorithm": "dqn", "env_id": "maxatar/Breakout-v0", "seeds": [0], "seeds": [1]}'
        ),
        "seeds ['0'] are not whole numbers": lambda: (run / "summary.json").write_text(
            '{"algorithm": "dqn", "env_id": "maxatar/Breakout-v0", "seeds": ["0"]}'
        ),
        "holds a list, not a run's summary": lambda: (run / "summary.json").write_text("[]"),
        "it has no env_id": lambda: (run / "summary.json").write_text('{"algorithm": "dqn", "seeds": [0]}'),
        "metrics.csv: cannot read it": lambda: (run / "metrics.csv").unlink(),
        "metrics.csv: cannot read it: not a regular file": lambda: (
            (run / "metrics.csv").unlink(),
            os.mkfifo(run / "metrics.csv"),  # would block a plain open
        ),
        "metrics.csv: it has no 'recent_return' column": lambda: (run / "metrics.csv").write_text("seed,frames\n0,1\n"),
        "metrics.csv: a row is not numbers": lambda: (run / "metrics.csv").write_text(
            "seed,frames,recent_return\n0,many,1\n"
        ),
    }
    out = tmp_path / "out"
    for message, damage in broken.items():
        shutil.rmtree(run, ignore_errors=True)
        write_run(run, "dqn", "Breakout-v0", [(0, 100, 1.0)])
        damage()
        assert message in evaluate_error(capsys, run, "--out", out)
        assert not out.exists()  # every input is read before --out is made
    not_json, text_mean = tmp_path / "random.json", tmp_path / "text_mean.json"
    not_json.write_text("nope")
    text_mean.write_text(json.dumps({"scores": {"Breakout-v0": {"mean": "1"}}}))
    a_file = tmp_path / "file"
    a_file.write_text("x")
    fifo, zero = tmp_path / "fifo.json", tmp_path / "zero.json"
    os.mkfifo(fifo)
    zero.symlink_to("/dev/zero")
    package = Path(ev.__file__).parents[1]  # maxatar_agents/
    for argv, message in [
        (["--seeds", "x"], "unrecognized arguments: --seeds x"),
        (["--seed", "x"], "invalid int value: 'x'"),
        (["--random-scores", not_json], "not a --measure-random file"),
        (["--random-scores", text_mean], "not a --measure-random file (ValueError: a mean that is not a number"),
        (["--random-scores", fifo], f"--random-scores {fifo}: cannot read it: not a regular file"),
        (["--random-scores", zero], f"--random-scores {zero}: cannot read it: not a regular file"),
        (["--random-scores", tmp_path / "none.json"], "none.json is missing: python -m maxatar_agents.evaluate"),
        (["--out", ""], "--out must name a directory, got ''"),
        (["--out", package], f"--out '{package}' is inside the installed package {package}"),
        (["--out", package.parent / "renderers" / "x"], "is inside the installed package"),
        (["--out", a_file], "cannot create --out"),
        (["--out", a_file / "below"], "cannot create --out"),
        (["--bootstrap", "1000000000"], "--bootstrap must be in [1, 1,000,000], got 1,000,000,000 (about 2,980.2 GiB"),
        (["--bootstrap", "0"], "--bootstrap must be in [1, 1,000,000]"),
    ]:
        assert message in evaluate_error(capsys, good, "--out", out, *argv)
        assert not out.exists() and not (package / "evaluation.json").exists()
    # --measure-random writes only where it is told, and never less than one episode.
    before = ev.RANDOM_SCORES.read_bytes()
    assert "name the file" in evaluate_error(capsys, "--measure-random")
    for episodes in ("0", "1"):  # one episode has no standard error
        assert "--episodes must be in [2, 65,536]" in evaluate_error(
            capsys, "--measure-random", "--random-scores", tmp_path / "r.json", "--episodes", episodes
        )
    for target in (a_file / "r.json", fifo, zero, tmp_path):  # a FIFO would block the write, /dev/zero take it
        assert "cannot write --random-scores" in evaluate_error(capsys, "--measure-random", "--random-scores", target)
    assert ev.RANDOM_SCORES.read_bytes() == before and not (tmp_path / "r.json").exists()


def test_a_full_disk_is_one_error_line_and_leaves_no_part_of_a_file(tmp_path, capsys, full_disk):
    good, out = tmp_path / "good", tmp_path / "out"
    write_run(good, "dqn", "Breakout-v0", [(0, 100, 1.0)])
    err = evaluate_error(capsys, good, "--out", out, "--bootstrap", "10")
    assert f"error: cannot write to --out '{out}': No space left on device" in err and err.count("\n") == 1, err
    assert list(out.iterdir()) == []


def test_an_out_that_holds_a_run_is_written_only_while_no_run_trains_there(tmp_path, capsys):
    import fcntl

    from maxatar_agents.run import checkpoint

    good, out = tmp_path / "good", tmp_path / "training"
    write_run(good, "dqn", "Breakout-v0", [(0, 100, 1.0)])
    out.mkdir()
    (out / checkpoint.META_FILE).write_text("{}")  # a run's directory
    with open(out / checkpoint.LOCK_FILE, "w") as held:  # its run still trains
        fcntl.flock(held, fcntl.LOCK_EX)
        err = evaluate_error(capsys, good, "--out", out, "--bootstrap", "10")
        assert f"error: --out: {out} is in use by another run" in err, err
    assert not (out / "evaluation.json").exists()
    ev.main([str(good), "--out", str(out), "--bootstrap", "10"])
    assert (out / "evaluation.json").exists() and not (out / checkpoint.LOCK_FILE).exists()
