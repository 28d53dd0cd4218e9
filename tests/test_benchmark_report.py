"""The README's short speed table is what `benchmarks.run --front-door README.md` writes from the committed
throughput results, so its numbers cannot drift from the measurements."""

from pathlib import Path

from benchmarks import report, run
from benchmarks.pages import replace_section

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_speed_table_is_what_the_report_builds_from_the_committed_results(tmp_path):
    rows, *_ = run.load_results(ROOT / "benchmarks/results")
    readme = tmp_path / "README.md"
    readme.write_text((ROOT / "README.md").read_text())
    replace_section(readme, report.front_door_table(rows), report.SPEED_START, report.SPEED_END)
    assert readme.read_text() == (ROOT / "README.md").read_text(), "README's speed table is stale: run benchmarks.run"
    assert "| Breakout-v0 |" in report.front_door_table(rows)


def test_skipped_implementations_and_the_ceilings_only_they_needed_are_not_measured():
    skip = ["maxatar[split]", "maxatar[step+reset]", "gymnax", "gymnasium[sync]", "gymnasium[vector]"]
    args = run.parse_args(["--envs", "CartPole-v1", "--sizes", "4", "--repeats", "1", "--steps", "4"])
    args.min_time, args.loop_max_n, args.skip = 0.001, 0, skip
    rows, _ = run.measure_env("maxatar/CartPole-v1", args)
    measured = {row["impl"] for row in rows}
    assert "maxatar[uniform]" in measured and not measured & set(skip)
    # maxatar[uniform] draws no keys per environment: the keyed ceiling went with the skipped keyed modes.
    assert {name for name in measured if name.startswith("ceiling")} == {"ceiling[nokeys,float324]"}


def test_env_ids_are_full_ids_however_they_were_given():
    assert run.parse_args(["--quick"]).envs == ["maxatar/CartPole-v1", "maxatar/Doors-v0", "maxatar/Breakout-v0"]
    given = run.parse_args(["--envs", "Breakout-v0", "maxatar/Doors-v0"]).envs
    assert given == ["maxatar/Breakout-v0", "maxatar/Doors-v0"]
    assert run.parse_args([]).envs[0] == "maxatar/CartPole-v1"


def test_the_composition_table_compares_own_time_with_the_best_jax_peer():
    def row(impl, own, env="maxatar/Freeway-v0", n=4096):
        return {"env": env, "n": n, "impl": impl, "own_ns_per_step": own}

    rows = [
        row("maxatar[step+reset]", 500.0),
        row("gymnax", 2000.0),
        row("pgx", 900.0),  # the best JAX peer: the ratio is 900 / 500
        row("minatar", 100.0),  # a numpy reference is not a JAX peer
        row("maxatar[step+reset]", 100.0, env="maxatar/Breakout-v0"),
        row("gymnax", 400.0, env="maxatar/Breakout-v0"),
        row("gymnax", 1.0, n=64),  # another N
    ]
    table = report.composition_table(rows, 4096)
    assert "| maxatar/Freeway-v0 | 500 | 900 (pgx) | 1.80x |" in table
    assert "| maxatar/Breakout-v0 | 100 | 400 (gymnax) | 4.00x |" in table
    assert report.composition_table([row("gymnax", 1.0)], 4096) == ""


def test_the_gymnax_guides_speed_table_is_what_the_committed_results_give(tmp_path, monkeypatch):
    from benchmarks import gymnax_facade

    monkeypatch.chdir(ROOT)  # the section names the results file as given, relative to the repository
    guide = ROOT / "docs/guides/gymnax.md"
    copy = tmp_path / "gymnax.md"
    copy.write_text(guide.read_text())
    section = gymnax_facade.guide_section(gymnax_facade.RESULTS.read_text())
    replace_section(copy, section, gymnax_facade.README_START, gymnax_facade.README_END)
    assert copy.read_text() == guide.read_text(), "stale: python -m benchmarks.gymnax_facade --from-results --readme"
    assert "| Seaquest-MinAtar | 1.878M | 1.751M | 13.7k | 137.27x / 127.94x | 7.32 / 6.08 / 6.18 |" in section
