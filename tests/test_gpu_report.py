"""The GPU sections of docs/performance.md and README.md are what `lab.gpu report` builds from the
committed GPU results, so no figure can drift from its measurement; and the report marks a cut run and a figure
read from a stopped process's log as such, and states what the profile, continual, datasets and digests stages
left."""

import json
import re
import subprocess
from pathlib import Path

from benchmarks.pages import replace_section
from lab import gpu

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path("benchmarks/results/gpu_h200")


def rebuilt(path: Path, section: str, tmp_path: Path) -> str:
    copy = tmp_path / path.name
    copy.write_text((ROOT / path).read_text())
    replace_section(copy, section, gpu.GPU_START, gpu.GPU_END)
    return copy.read_text()


def test_the_docs_and_readme_gpu_sections_are_what_the_report_builds(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the section names the results folder as given, relative to the repository
    page = rebuilt(Path("docs/performance.md"), gpu.gpu_section(RESULTS), tmp_path)
    assert page == (ROOT / "docs/performance.md").read_text(), "stale: run python -m lab.gpu report"
    readme = rebuilt(Path("README.md"), gpu.front_door(RESULTS), tmp_path)
    assert readme == (ROOT / "README.md").read_text(), "stale: run python -m lab.gpu report"
    assert "| Breakout |" in gpu.front_door(RESULTS) and "NVIDIA" in gpu.gpu_section(RESULTS)


def run_row(**changes) -> dict:
    row = {
        "algo": "pqn",
        "preset": "minatar",
        "game": "Breakout-v0",
        "seeds": 10,
        "target": 10,
        "compile_s": 9.0,
        "to_target_s": 75.0,
        "to_target_frames": 2_000_000,
        "wall_s": 80.0,
        "finished": False,
        "full_run_s": 200.0,
        "fps_all_seeds": 1_000_000,
        "last_mean_return": 12.0,
        "seeds_at_target": 7,
    }
    return {**row, **changes}


def test_a_cut_run_is_marked_extrapolated():
    cut, never = gpu.train_table([run_row(), run_row(to_target_s=None, last_mean_return=None)])[2:]
    assert "| 75 s at 2.00M frames |" in cut and "(extrapolated)" in cut and "(7/10 >= 10)" in cut
    assert "not reached" in never


def test_a_stopped_process_log_fills_only_the_sizes_no_table_has(tmp_path):
    (tmp_path / "log_throughput_Freeway-v0_stopped.txt").write_text(
        "maxatar/Freeway-v0:\n"
        "  Freeway-v0 N=1024: maxatar[uniform] 5e+07, gymnax 2e+07, ceiling[nokeys,bool10x10x7] 1e+08\n"
        "  Freeway-v0 N=16384: maxatar[uniform] 9e+07, gymnax 1e+08, ceiling[nokeys,bool10x10x7] 2e+08\n"
    )
    rows = gpu.logged_rows(tmp_path, {("Freeway-v0", 16384)})
    assert {(r["n"], r["impl"]) for r in rows} == {
        ("1024", "maxatar[uniform]"),
        ("1024", "gymnax"),
        ("1024", "ceiling[nokeys,bool10x10x7]"),
    }
    table = gpu.throughput_table(rows)
    assert "50.0M (log only)" in table[2] and "| 2.5x | 50% |" in table[2]


def test_the_dqn_table_states_each_programs_seeds_and_time():
    ours = {"impl": "ours", "game": "Breakout-v0", "seeds": 10, "s_per_frame": 2e-4, "est_5m_s": 1000.0}
    reference = {**ours, "impl": "MinAtar", "seeds": 1, "est_5m_s": 15000.0}
    lines = gpu.dqn_table([ours, reference])
    assert lines[2] == "| ours | Breakout | 10 | 200 us | 16.7 min |"
    assert lines[3].startswith("| MinAtar | Breakout | 1 |")


def test_the_gymnax_setting_runs_stand_beside_the_published_returns(tmp_path):
    run = tmp_path / "agents_gymnax" / "pqn-minatar" / "Breakout-v0"
    run.mkdir(parents=True)
    summary = {"frames_per_seed": 10000000, "machine_at_start": "Intel(R) Xeon(R), 16 logical CPUs, gpu backend"}
    (run / "summary.json").write_text(json.dumps(summary))
    rows = ["seed,frames,recent_return"] + [f"{s},5000000,1.0" for s in range(2)] + ["0,10000000,20", "1,10000000,30"]
    (run / "metrics.csv").write_text("\n".join(rows) + "\n")
    head, _, breakout, asterix, *_ = gpu.like_for_like_table(tmp_path)
    assert head.startswith("| game | PQN (`minatar`) | gymnax README PPO |")
    assert breakout == "| Breakout | 25.0 ± 5.0 (2 seeds, 10M frames) | 28 | 22.88 |"  # the last logged point
    assert asterix == "| Asterix | - | 15 | 14.95 |"
    assert gpu.like_for_like_table(tmp_path / "nothing") == []


def continual_record(**changes) -> dict:
    config = {"total_steps": 100_000_000, "protocol": "nap"}
    record = {"algorithm": "pqn", "preset": "c-chain", "config": config, "seeds": [0, 1, 2], "wall_time": 150.0}
    return {**record, **changes}


def test_the_continual_run_is_read_finished_or_extrapolated_when_cut(tmp_path):
    run = tmp_path / "continual_nap"
    run.mkdir()
    (run / "checkpoint.json").write_text(json.dumps(continual_record(frames_done=25_000_000)))
    (cut,) = gpu.continual_lines(tmp_path)[1:]
    assert "3 seeds in one program, 25,000,000 frames each of 100,000,000" in cut and "0.50M frames/s" in cut
    assert "(compilation included) the whole protocol takes 10.0 min" in cut
    finished = continual_record(frames_per_seed=100_000_000, compile_time_last_session=20.0)
    (run / "summary.json").write_text(json.dumps({**finished, "final_eval_return_mean": 12.5}))
    (done,) = gpu.continual_lines(tmp_path)[1:]
    assert "2.00M frames/s" in done and "compile 20 s" in done and "return 12.50." in done
    assert gpu.continual_lines(tmp_path / "nothing") == []


def test_the_sections_of_profile_datasets_and_digests_come_from_their_files(tmp_path):
    (tmp_path / "profile_CartPole-v1.md").write_text("Run: `profile`\n\n## CartPole-v1 at N=8\n\n| phase |\n")
    (tmp_path / "datasets.md").write_text("# Offline datasets\n\nRun: `datasets`\n\n| case | s |\n")
    (tmp_path / "log_digests.txt").write_text("backend: gpu [CudaDevice(id=0)]\n....\n8 passed in 31.20s\n")
    section = gpu.gpu_section(tmp_path)
    assert "### Where the step time goes" in section and "#### CartPole-v1 at N=8" in section
    assert "### Offline datasets: collection and writing" in section and "| case | s |" in section
    assert "# Offline datasets\n" not in section  # the file's title: the section's heading stands for it
    assert "on gpu [CudaDevice(id=0)]: 8 passed in 31.20s." in section
    (tmp_path / "log_digests.txt").write_text("backend: gpu []\n1 failed, 7 passed in 3.00s\n")
    assert ": 1 failed, 7 passed in 3.00s." in gpu.gpu_section(tmp_path)


def test_the_suite_parses_and_has_a_case_for_every_stage_its_header_names():
    scripts = [ROOT / "lab/gpu_suite.sh", ROOT / "lab/gpu_wheels.sh"]
    subprocess.run(["bash", "-n", *map(str, scripts)], check=True)
    text = scripts[0].read_text()
    listed = re.search(r"^# Stages: (.*?) \(see run_stage", text, re.M | re.S).group(1)
    named = {re.sub(r"\s*\(.*\)", "", name).strip().lstrip("#").strip() for name in listed.split(",")}
    cases = {name.strip() for case in re.findall(r"^    ([a-z0-9_ |]+)\)", text, re.M) for name in case.split("|")}
    assert named and named <= cases, named - cases
