"""Checkpoints that survive crashes, full disks, a second process and damaged files (`maxatar_agents.run.checkpoint`).

On real files and processes: one tiny DQN run on CartPole (one seed, four intervals, interrupted after the
second) is trained once per module; each test works on a copy of its directory. Faults are injected by
damaging files, by a process that dies (`os._exit`) in the middle of a save, by a file size limit
(`RLIMIT_FSIZE`) that makes writes fail as a full disk does, and by an `os.replace` that raises.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import io
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import tracemalloc
import zipfile
from pathlib import Path

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maxatar_agents.run import checkpoint, cli, policies, runner, saved
from tests.tiers import examples

pytestmark = pytest.mark.slow  # the suite's slow tier (docs/contributing.md)

ARGS = [
    "--env",
    "CartPole-v1",
    "--preset",
    "cartpole",
    "--seeds",
    "1",
    "--total-steps",
    "2000",
    "--set=learning_starts=200",
    "--set=log_points=4",
    "--set=buffer_size=500",
    "--set=eval_episodes=2",
    "--set=epsilon_frames=500",
    "--no-progress",
]
META, STATE = checkpoint.META_FILE, checkpoint.STATE_FILE
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """A run interrupted after 2 of its 4 intervals, saved after each: its directory (do not modify)."""
    out = tmp_path_factory.mktemp("run") / "run"

    def ctrl_c_after_two(done: int):
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(SystemExit):
        cli.run("dqn", [*ARGS, "--out", str(out), "--checkpoint-every", "1"], on_interval=ctrl_c_after_two)
    assert checkpoint.read_meta(out)["intervals_done"] == 2
    return out


@pytest.fixture
def run(base, tmp_path) -> Path:
    """A copy of the interrupted run to damage."""
    return Path(shutil.copytree(base, tmp_path / "run"))


def template(directory: Path):
    """The state's shapes, from the cached compiled pieces of the run's config."""
    return runner.compiled("dqn", saved.config_for(checkpoint.read_meta(directory)), 1)["template"]


def load(directory: Path):
    return checkpoint.load_state(
        directory,
        template(directory),
        meta := checkpoint.read_meta(directory),
        saved.schema(saved.program_for(meta)[1]),
    )


def assert_trees_equal(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def raw_meta(directory: Path) -> dict:
    return json.loads((directory / META).read_text())


def write_meta(directory: Path, meta: dict) -> None:
    (directory / META).write_text(json.dumps(meta, indent=1))


def state_path(directory: Path) -> Path:
    return directory / raw_meta(directory).get("state_file", STATE)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def replace_file(path: Path, data: bytes) -> None:
    """New content under the same name (a new file: never through a hard link into another name)."""
    path.unlink()
    path.write_bytes(data)


def reseal(directory: Path) -> None:
    """Record the array file's sha256 in the JSON again: a file damaged consistently (or written by hand)."""
    meta = raw_meta(directory)
    if "state_sha256" in meta:
        meta["state_sha256"] = sha256(state_path(directory))
        write_meta(directory, meta)


def to_old_format(directory: Path) -> None:
    """The layout of earlier versions: checkpoint.npz, with the learner's leaves at the top level of the state
    (`.params...`, not `.learner.params...`), and a JSON that names no array file."""
    rewrite_arrays(directory, lambda arrays: {k.replace(checkpoint.LEARNER, "", 1): v for k, v in arrays.items()})
    meta = raw_meta(directory)
    named = directory / meta.pop("state_file")
    del meta["state_sha256"]
    replace_file(directory / STATE, named.read_bytes())
    named.unlink()
    write_meta(directory, meta)


def rewrite_arrays(directory: Path, change) -> None:
    """The array file with `change(arrays)` applied, saved as numpy saves it, the JSON's sha256 updated."""
    path = state_path(directory)
    with np.load(path, allow_pickle=False) as saved:
        arrays = change({k: saved[k] for k in saved.files})
    path.unlink()
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    reseal(directory)


def rewrite_member(directory: Path, name: str, write) -> None:
    """The array file with member `name` (an array's key) written by `write(file)`, the sha256 updated."""
    path = state_path(directory)
    original = io.BytesIO(path.read_bytes())
    path.unlink()
    with zipfile.ZipFile(original) as old, zipfile.ZipFile(path, "w") as new:
        for info in old.infolist():
            if info.filename == name + ".npy":
                with new.open(info.filename, "w", force_zip64=True) as member:
                    write(member)
            else:
                new.writestr(info, old.read(info))
    reseal(directory)


def policy_leaf(directory: Path) -> str:
    """The name of a policy weight matrix in the array file."""
    field = saved.program_for(checkpoint.read_meta(directory))[1].policy_field
    prefixes = (f".{field}", f".{field}".replace(checkpoint.LEARNER, "", 1))  # the current layout's, the old one's
    with np.load(state_path(directory)) as arrays:
        return next(k for k in arrays.files if k.startswith(prefixes) and arrays[k].ndim == 3)


def npy_header(descr: str, shape: tuple) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": False, "shape": shape})
    return buffer.getvalue()


def files(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


def python(script: str, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args], capture_output=True, text=True, cwd=ROOT, **kwargs
    )


# --- the layout of a save ---


def test_a_save_is_one_json_naming_one_array_file(run):
    meta = raw_meta(run)
    named = run / meta["state_file"]
    assert files(run) == sorted([META, STATE, "metrics.csv", named.name])  # the previous array file is gone
    assert named.name.startswith("checkpoint-") and meta["state_sha256"] == sha256(named)
    assert meta["state_file"] == f"checkpoint-{meta['state_sha256'][:16]}.npz"
    assert (run / STATE).read_bytes() == named.read_bytes()  # the fixed name readers use


def test_checkpoint_npz_is_a_hard_link_and_the_lock_goes_with_the_run(base):
    named = base / raw_meta(base)["state_file"]
    assert os.path.samestat(os.stat(named), os.stat(base / STATE))
    assert not (base / checkpoint.LOCK_FILE).exists()


def test_save_interrupted_between_the_array_file_and_the_json_resumes_from_the_previous_pair(base, run, tmp_path):
    # A process dies (os._exit) at the rename that would put the new JSON in place, after the new array file
    # and the JSON's temporary file are written.
    crash = """
        import os, sys
        import jax, jax.numpy as jnp, numpy as np
        from maxatar_agents.run import checkpoint, saved
        from maxatar_agents.algorithms.registry import agent_module

        directory = sys.argv[1]
        meta = checkpoint.read_meta(directory)
        program = agent_module("dqn").make_program(saved.config_for(meta))
        template = jax.eval_shape(jax.vmap(program.init), jax.ShapeDtypeStruct((1, 2), jnp.uint32))
        state = checkpoint.load_state(directory, template, meta, saved.schema(program))
        state = jax.tree.map(lambda x: x + 1 if jnp.issubdtype(x.dtype, jnp.floating) else x, state)
        replace = os.replace

        def die_at_the_json(src, dst, *args, **kwargs):
            if os.path.basename(dst) == checkpoint.META_FILE:
                os._exit(9)
            return replace(src, dst, *args, **kwargs)

        os.replace = die_at_the_json
        checkpoint.save(directory, state, {**meta, "intervals_done": 3})
    """
    before = files(run)
    assert python(crash, str(run)).returncode == 9
    left = sorted(set(files(run)) - set(before))
    assert len(left) == 2 and any(n.startswith("checkpoint-") for n in left) and any(n.endswith(".tmp") for n in left)
    # The previous pair is whole: it loads, and the run resumes from it exactly as from an untouched copy.
    assert_trees_equal(load(run), load(base))
    pristine = Path(shutil.copytree(base, tmp_path / "pristine"))
    resumed = cli.run("dqn", ["--out", str(run), "--resume", "--no-progress"])
    expected = cli.run("dqn", ["--out", str(pristine), "--resume", "--no-progress"])
    assert resumed["final_eval_return_per_seed"] == expected["final_eval_return_per_seed"]
    assert_trees_equal(load(run), load(pristine))
    # The resumed run's lock removed what the dead save left; each directory holds one array file.
    assert not set(left) & set(files(run))
    assert len([n for n in files(run) if n.startswith("checkpoint-")]) == 1
    assert raw_meta(run)["intervals_done"] == 4


@pytest.mark.parametrize("errno_", [errno.ENOSPC, errno.EROFS], ids=["ENOSPC", "EROFS"])
def test_a_failed_rename_of_the_json_leaves_nothing_and_names_the_last_good_checkpoint(run, monkeypatch, errno_):
    state, meta, before = load(run), checkpoint.read_meta(run), files(run)
    replace = os.replace

    def fail_at_the_json(src, dst, *args, **kwargs):
        if os.path.basename(dst) == META:
            raise OSError(errno_, os.strerror(errno_))
        return replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", fail_at_the_json)
    with pytest.raises(checkpoint.CheckpointError) as error:
        checkpoint.save(run, jax.tree.map(lambda x: x * 0, state), {**meta, "intervals_done": 3})
    monkeypatch.undo()
    message = str(error.value)
    assert os.strerror(errno_) in message and f"last good checkpoint is still {run / META}" in message
    assert "(1000 frames per seed, interval 2 of 4)" in message
    assert files(run) == before  # no temporary file, no new array file
    assert_trees_equal(load(run), state)


def test_a_full_disk_during_a_save_leaves_nothing_and_names_the_last_good_checkpoint(run):
    # RLIMIT_FSIZE makes a write past 200 kB fail (EFBIG) as a full disk does (ENOSPC); SIGXFSZ ignored, so
    # the write fails instead of the process being killed.
    full_disk = """
        import json, resource, signal, sys
        import numpy as np
        from maxatar_agents.run import checkpoint, saved

        directory = sys.argv[1]
        meta = checkpoint.read_meta(directory)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
        try:
            checkpoint.save(directory, {"weights": np.ones(1_000_000, np.float32)}, {**meta, "intervals_done": 3})
        except checkpoint.CheckpointError as error:
            print(error)
            sys.exit(3)
    """
    before, state = files(run), load(run)
    result = python(full_disk, str(run))
    assert result.returncode == 3, result.stderr
    assert "File too large" in result.stdout and f"last good checkpoint is still {run / META}" in result.stdout
    assert files(run) == before
    assert_trees_equal(load(run), state)


def test_resume_refuses_to_start_when_the_next_checkpoint_would_not_fit(run):
    # A file size limit below the checkpoint's size stands for a disk that has filled since (SIGXFSZ ignored, so
    # the allocation fails with EFBIG instead of killing the process): the resume stops at once, before training.
    size = (run / META).stat().st_size + state_path(run).stat().st_size
    full_disk = f"""
        import resource, signal, sys
        from maxatar_agents.run import cli

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, ({size // 2}, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
        cli.main("dqn", ["--out", sys.argv[1], "--resume", "--no-progress"])
    """
    before, state = files(run), load(run)
    result = python(full_disk, str(run))
    assert result.returncode == 2, result.stderr
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1, message
    assert f"cannot resume in {run}: its next checkpoint ({size} bytes) would not fit (File too large)" in message
    assert f"the last good checkpoint is still {run / META}" in message
    assert files(run) == before
    assert_trees_equal(load(run), state)


# --- one run per directory ---


def test_a_second_process_on_the_same_directory_is_refused(run, capsys):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from maxatar_agents import checkpoint\n"
         "checkpoint.lock_run(sys.argv[1]); print('locked', flush=True); sys.stdin.read()", str(run)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    try:
        assert holder.stdout.readline() == "locked\n"
        with pytest.raises(
            checkpoint.CheckpointError, match=re.escape(f"{run} is in use by another run (pid {holder.pid} ")
        ):
            checkpoint.lock_run(run)
        # The command line: one error line, before anything is compiled or written.
        before = {n: (run / n).stat().st_mtime_ns for n in files(run)}
        with pytest.raises(SystemExit) as stop:
            cli.main("dqn", ["--out", str(run), "--resume", "--no-progress"])
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"error: {run} is in use by another run (pid {holder.pid} on " in err
        assert {n: (run / n).stat().st_mtime_ns for n in files(run)} == before
    finally:
        holder.kill()  # SIGKILL: the kernel releases the lock; its file stays, naming a dead pid
        holder.wait()
    assert (run / checkpoint.LOCK_FILE).read_text().split()[0] == str(holder.pid)
    path = checkpoint.lock_run(run)
    assert path.read_text().split()[0] == str(os.getpid())
    checkpoint.unlock_run(run)
    assert not path.exists()


# --- damaged files ---


def truncate(directory: Path) -> None:
    path = state_path(directory)
    replace_file(path, path.read_bytes()[: path.stat().st_size // 2])


def random_bytes(directory: Path) -> None:
    path = state_path(directory)
    replace_file(path, np.random.default_rng(0).bytes(path.stat().st_size))


def flip_a_byte(directory: Path) -> None:
    path = state_path(directory)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    replace_file(path, bytes(data))


def wrong_shape(directory: Path) -> None:
    name = policy_leaf(directory)
    rewrite_arrays(directory, lambda a: {**a, name: np.concatenate([a[name], a[name]], axis=-1)})


def wrong_dtype(directory: Path) -> None:
    name = policy_leaf(directory)
    rewrite_arrays(directory, lambda a: {**a, name: a[name].astype(np.float64)})


def nan_in_the_policy(directory: Path) -> None:
    name = policy_leaf(directory)

    def change(arrays):
        arrays[name] = arrays[name].copy()
        arrays[name][0, 0, 0] = np.nan
        return arrays

    rewrite_arrays(directory, change)


def bad_npy_header(directory: Path) -> None:
    rewrite_member(directory, policy_leaf(directory), lambda f: f.write(b"\x93NUMPY\x01\x00{'descr': <f4, 'sha"))


def object_array(directory: Path) -> None:
    name = policy_leaf(directory)
    rewrite_member(directory, name, lambda f: f.write(npy_header("|O", (1, 4)) + b"\x80\x04N." * 8))


def progress_of_another_save(directory: Path) -> None:
    rewrite_arrays(directory, lambda a: {**a, checkpoint.PROGRESS_KEY: np.asarray(1, np.int64)})


def edit_meta(**fields):
    def edit(directory: Path) -> None:
        meta = raw_meta(directory)
        for name, value in fields.items():
            if value is DELETE:
                del meta[name]
            else:
                meta[name] = value
        write_meta(directory, meta)

    return edit


DELETE = object()
ARRAYS, JSON = "arrays", "json"  # which file the error names
DAMAGE = {
    "truncated": (truncate, ARRAYS, "is damaged"),
    "random bytes": (random_bytes, ARRAYS, "is damaged"),
    "a flipped byte": (flip_a_byte, ARRAYS, "is damaged"),
    "wrong shape": (wrong_shape, ARRAYS, "(the file is damaged or from another configuration)"),
    "wrong dtype": (wrong_dtype, ARRAYS, "does not match this configuration"),
    "NaN policy weights": (nan_in_the_policy, ARRAYS, "is damaged or its run diverged"),
    "bad .npy header": (bad_npy_header, ARRAYS, "is damaged"),
    "object array": (object_array, ARRAYS, "holds Python objects"),
    "progress of another save": (progress_of_another_save, ARRAYS, "are from different saves"),
    "intervals_done 999": (edit_meta(intervals_done=999), JSON, "intervals_done is 999, outside 0..4"),
    "intervals_done -5": (edit_meta(intervals_done=-5), JSON, "intervals_done is -5, not a whole number >= 0"),
    "intervals_done true": (edit_meta(intervals_done=True), JSON, "intervals_done is True"),
    "999 of 999 intervals": (edit_meta(intervals_done=999, num_intervals=999), JSON, "its config's run has 4"),
    "intervals_done 1": (edit_meta(intervals_done=1, frames_done=500), JSON, "2 metrics rows for 1 intervals"),
    "no rows": (edit_meta(rows=DELETE), JSON, "is damaged: it has no rows"),
    "no seeds": (edit_meta(seeds=DELETE), JSON, "is damaged: it has no seeds"),
    "no config": (edit_meta(config=DELETE), JSON, "is damaged: it has no config"),
    "no wall_time": (edit_meta(wall_time=DELETE), JSON, "is damaged: it has no wall_time"),
    "rows not a list": (edit_meta(rows={"a": 1}), JSON, "rows is {'a': 1}, not a list"),
    "NaN wall_time": (edit_meta(wall_time=float("nan")), JSON, "wall_time is nan"),
    "empty seeds": (edit_meta(seeds=[]), JSON, "seeds is [], not a list of whole numbers"),
    "a path as state_file": (edit_meta(state_file="../../etc/passwd"), JSON, "state_file is '../../etc/passwd'"),
    "bad sha256": (edit_meta(state_sha256="00"), JSON, "state_sha256 is '00', not a sha256"),
    "binary JSON": (lambda d: replace_file(d / META, b"\xff\xfe\x00garbage"), JSON, "as JSON: it is not UTF-8"),
    "deep nesting": (lambda d: replace_file(d / META, b"[" * 100_000), JSON, "as JSON: its arrays or objects"),
    "5,000 digits": (lambda d: replace_file(d / META, b"9" * 5000), JSON, "an integer of 5,000 digits"),
    "a key twice": (lambda d: replace_file(d / META, b'{"a": 1, "a": 2}'), JSON, "the key 'a' appears twice"),
}


NEW_LAYOUT_ONLY = ("a path as state_file", "bad sha256")  # the old layout has no state_file or sha256
LAYOUT_CASES = [(case, "current") for case in sorted(DAMAGE)] + [
    (case, "old") for case in sorted(DAMAGE) if case not in NEW_LAYOUT_ONLY
]


@pytest.mark.parametrize(("case", "layout"), LAYOUT_CASES)
def test_a_damaged_checkpoint_is_one_error_naming_the_file(run, case, layout):
    damage, which, message = DAMAGE[case]
    if layout == "old":
        to_old_format(run)
    damage(run)
    named = str(run / META) if which == JSON else str(state_path(run)) if layout == "current" else str(run / STATE)
    with pytest.raises(checkpoint.CheckpointError) as error:
        load(run)
    text = str(error.value)
    assert named in text and message in text, text
    assert "allow_pickle" not in text and "\n" not in text
    if case in ("NaN policy weights", "truncated", "random bytes", "wrong shape", "bad .npy header"):
        with pytest.raises(checkpoint.CheckpointError, match="damaged"):  # the policy alone is refused too
            policies.load_policy(run)


def test_a_damaged_checkpoint_is_one_error_line_on_resume(run, capsys):
    truncate(run)
    with pytest.raises(SystemExit) as stop:
        cli.main("dqn", ["--out", str(run), "--resume", "--no-progress"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"error: {state_path(run)} is damaged: its sha256 is not the one {META} records" in err
    assert not checkpoint._locks and not (run / checkpoint.LOCK_FILE).exists()  # the lock went with the run


def test_a_deflated_huge_array_is_refused_from_its_header_without_reading_it(run):
    # A member that inflates to 256 MiB (its compressed size about 256 kB) where a (1, 4, 64) weight belongs.
    name, shape = policy_leaf(run), (1, 8192, 8192)
    with np.load(state_path(run)) as arrays:
        expected = f"float32{list(arrays[name].shape)}"

    def deflated_zeros(member):
        member.write(npy_header("<f4", shape))
        zeros = bytes(1 << 20)
        for _ in range(math.prod(shape) * 4 >> 20):
            member.write(zeros)

    path = state_path(run)
    meta = raw_meta(run)
    with zipfile.ZipFile(path) as z:
        others = {i.filename: z.read(i) for i in z.infolist()}
    path.unlink()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for filename, data in others.items():
            if filename == name + ".npy":
                with z.open(filename, "w", force_zip64=True) as member:
                    deflated_zeros(member)
            else:
                z.writestr(filename, data)
    meta["state_sha256"] = sha256(path)
    write_meta(run, meta)
    assert path.stat().st_size < 2 << 20
    tmpl = template(run)
    tracemalloc.start()
    try:
        with pytest.raises(checkpoint.CheckpointError) as error:
            checkpoint.load_state(
                run, tmpl, meta := checkpoint.read_meta(run), saved.schema(saved.program_for(meta)[1])
            )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert f"{path} does not match this configuration: {name} is float32[1, 8192, 8192], expected {expected}" in str(
        error.value
    )
    assert peak < 32 << 20, peak  # nowhere near the 256 MiB the member holds


# --- earlier versions' checkpoints ---


def test_a_shipped_policy_of_the_old_layout_loads():
    directory = checkpoint.pretrained_path("maxatar/Breakout-v0")
    assert "state_file" not in raw_meta(directory)  # written before this layout: loaded as it is
    env_id, act = policies.load_policy("pretrained:maxatar/Breakout-v0")
    assert env_id == "maxatar/Breakout-v0"
    action = act(None, np.zeros((10, 10, 4), bool))
    assert action.shape == () and 0 <= int(action) < 6


def test_a_run_of_the_old_layout_loads_and_resumes_into_the_new_one(base, run):
    to_old_format(run)
    assert files(run) == sorted([META, STATE, "metrics.csv"])
    with np.load(run / STATE) as saved:
        assert ".params['params']['Dense_0']['kernel']" in saved.files  # the learner's leaves at the top level
    assert_trees_equal(load(run), load(base))
    policies.load_policy(run / STATE)
    cli.run("dqn", ["--out", str(run), "--resume", "--no-progress"])
    meta = raw_meta(run)
    assert meta["intervals_done"] == 4 and meta["state_sha256"] == sha256(run / meta["state_file"])
    assert os.path.samestat(os.stat(run / meta["state_file"]), os.stat(run / STATE))


def test_a_copy_of_the_pair_under_the_fixed_names_loads(base, tmp_path):
    # Copying checkpoint.npz and checkpoint.json elsewhere (what the README lists) keeps a loadable checkpoint:
    # the JSON's array file is missing there, and checkpoint.npz has its sha256.
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in (META, STATE):
        shutil.copy(base / name, copy / name)
    assert_trees_equal(load(copy), load(base))
    data = bytearray((copy / STATE).read_bytes())
    data[len(data) // 2] ^= 0xFF
    replace_file(copy / STATE, bytes(data))
    with pytest.raises(checkpoint.CheckpointError, match=re.escape(f"{copy / STATE} is damaged: its sha256")):
        load(copy)


def test_saving_twice_in_a_row_keeps_one_array_file(run):
    state, meta = load(run), checkpoint.read_meta(run)
    named = raw_meta(run)["state_file"]
    for _ in range(2):  # the same state: the same file name, which must survive its second save
        checkpoint.save(run, state, dict(meta))
    assert [n for n in files(run) if n.startswith("checkpoint-")] == [named]
    assert_trees_equal(load(run), state)


# --- exports never replace a run ---


def finished(directory: Path) -> Path:
    """The run, marked finished (its final evaluation recorded) so that it can be exported."""
    meta = raw_meta(directory)
    meta["final_eval"] = {"return_per_seed": [1.0], "return_mean": 1.0}
    write_meta(directory, meta)
    return directory


def export(*argv) -> int:
    """`python -m maxatar_agents.export ARGV`'s exit status."""
    from maxatar_agents.run import export as export_cli

    try:
        export_cli.main([str(a) for a in argv])
    except SystemExit as stop:
        return stop.code
    return 0


def contents(directory: Path) -> dict[str, bytes]:
    return {name: (directory / name).read_bytes() for name in files(directory)}


def test_export_never_writes_over_a_run(base, run, tmp_path, capsys, monkeypatch):
    finished(run)
    other = Path(shutil.copytree(base, tmp_path / "other"))
    a_file = tmp_path / "file"
    a_file.write_text("x")
    monkeypatch.chdir(tmp_path)
    for out in (run, other, tmp_path / "run" / ".", "", ".", a_file, a_file / "below"):
        before = {d: contents(d) for d in (run, other)}
        assert export(run, out) == 2, out
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "error:" in err, err
        assert {d: contents(d) for d in (run, other)} == before
    with open(other / checkpoint.LOCK_FILE, "w") as held:  # a run still training holds its lock
        import fcntl

        fcntl.flock(held, fcntl.LOCK_EX)
        (other / META).unlink()  # still training, before its first checkpoint
        assert export(run, other) == 2 and "in use by another run" in capsys.readouterr().err
    # A previous export is the one thing an export replaces.
    out = tmp_path / "policy"
    assert export(run, out) == 0 and export(run, out) == 0
    assert raw_meta(out)["policy_only"] and not (out / checkpoint.LOCK_FILE).exists()
    policies.load_policy(out)


def test_resume_never_deletes_state_it_did_not_write(run, capsys):
    arrays = [n for n in files(run) if n.startswith("checkpoint-")]
    # An export written into the run's directory (as earlier versions allowed), or a JSON gone missing: the
    # resume is refused and every array file stays.
    meta = raw_meta(run)
    write_meta(run, {**meta, "policy_only": True, "state_file": STATE, "state_sha256": sha256(run / STATE)})
    with pytest.raises(SystemExit):
        cli.main("dqn", ["--out", str(run), "--resume", "--no-progress"])
    assert "holds only a trained policy" in capsys.readouterr().err
    assert set(arrays) <= set(files(run))
    for change in ({"state_file": STATE}, None):
        if change is None:
            (run / META).unlink()
        else:
            write_meta(run, {**meta, **change})
        checkpoint.lock_run(run)
        checkpoint.unlock_run(run)
        assert set(arrays) <= set(files(run))


def test_loaders_open_only_regular_files_and_refuse_non_finite_weights(run, tmp_path):
    finished(run)
    named, held = state_path(run), tmp_path / "held"
    held.mkdir()
    for path in (named, run / STATE):
        os.replace(path, held / path.name)
    for make in (lambda path: path.symlink_to("/dev/zero"), os.mkfifo):  # each would hang a plain open and read
        make(named)
        make(run / STATE)
        for read in (load, policies.load_policy, lambda d: policies.export_policy(d, tmp_path / "policy", 0, {})):
            with pytest.raises(checkpoint.CheckpointError, match=re.escape(f"cannot read {named}: not a regular")):
                read(run)
        named.unlink()
        (run / STATE).unlink()
    for path in (named, run / STATE):
        os.replace(held / path.name, path)
    meta_text = (run / META).read_text()
    (run / META).unlink()
    os.mkfifo(run / META)
    with pytest.raises(checkpoint.CheckpointError, match=re.escape(f"cannot read {run / META}: not a regular file")):
        checkpoint.read_meta(run)
    (run / META).unlink()
    (run / META).write_text(meta_text)
    for seed_index in (True, 1.5, "0"):
        with pytest.raises(TypeError, match="seed_index must be a whole number"):
            policies.load_policy(run, seed_index=seed_index)
    nan_in_the_policy(run)
    message = f"{state_path(run)} is damaged or its run diverged: the policy weights "
    with pytest.raises(checkpoint.CheckpointError, match=re.escape(message)):
        policies.export_policy(run, tmp_path / "policy", 0, {})
    assert not (tmp_path / "policy" / META).exists()


def test_load_policy_names_a_path_of_the_wrong_type():
    for path in (None, 5, b"x"):
        with pytest.raises(
            TypeError, match=re.escape(f"path must be a run directory or checkpoint file (a str or path), got {path!r}")
        ):
            policies.load_policy(path)


def test_export_refuses_an_output_directory_inside_the_installed_package(tmp_path, capsys):
    package = Path(checkpoint.__file__).parents[1]  # maxatar_agents/
    assert export(tmp_path / "run", package) == 2
    err = capsys.readouterr().err
    inside = f"the output directory '{package}' is inside the installed package {package}: choose another"
    assert err == f"python -m maxatar_agents.export: error: {inside}\n"
    assert not (package / META).exists()


# --- the JSON's keys and metrics rows, as every loader reads them ---

NOT_A_NUMBER = st.one_of(st.none(), st.booleans(), st.text(max_size=3), st.lists(st.integers(), max_size=2))


@st.composite
def damaged_rows(draw) -> tuple[callable, str]:
    """An edit of a run's metrics rows that a runner never writes, and the words its error must have."""
    kind = draw(st.sampled_from(["no key", "extra key", "not a number", "not a row"]))
    index = draw(st.integers(0, 1))
    key = draw(st.sampled_from(checkpoint.ROW_KEYS + ("loss",)))
    if kind == "no key":
        required = index == 0 and key in checkpoint.ROW_KEYS  # else rows[1] differs from rows[0]
        return (lambda rows: rows[index].pop(key)), f"has no {key!r}" if required else f"differs in {key!r}"
    if kind == "extra key":
        name = draw(st.text("abcdefghij_", min_size=1, max_size=8).filter(lambda k: k not in ("loss", "seed")))
        return (lambda rows: rows[index].__setitem__(name, 1)), f"differs in {name!r}"
    if kind == "not a number":
        value = draw(NOT_A_NUMBER)
        return (lambda rows: rows[index].__setitem__(key, value)), f"rows[{index}][{key!r}] is {value!r}, not a number"
    value = draw(NOT_A_NUMBER)
    return (lambda rows: rows.__setitem__(index, value)), f"rows[{index}] is {value!r}, not a metrics row"


@settings(max_examples=examples(60), deadline=None)
@given(damage=damaged_rows())
def test_metrics_rows_a_runner_never_writes_are_refused_naming_the_file_and_the_key(base, damage):
    edit, words = damage
    meta = raw_meta(base)
    edit(meta["rows"])
    with tempfile.TemporaryDirectory() as directory:
        write_meta(Path(directory), meta)
        with pytest.raises(checkpoint.CheckpointError) as error:
            checkpoint.read_meta(directory)
    text = str(error.value)
    assert text.startswith(f"{Path(directory) / META} is damaged: ") and words in text and "\n" not in text, text


JSON_DAMAGE = {
    "a row without recent_return": (lambda m: m["rows"][0].pop("recent_return"), "rows[0] has no 'recent_return'"),
    "an unknown key": (lambda m: m.update(intervals_dne=1), "it has the unknown key(s) 'intervals_dne'"),
    "no rows": (lambda m: m.pop("rows"), "it has no rows"),
    "another env_id": (lambda m: m.update(env_id="maxatar/Breakout-v0"), "env_id is 'maxatar/Breakout-v0'"),
    "an unknown config field": (lambda m: m["config"].update(lrr=1), "unknown config field(s) ['lrr']"),
    "a final_eval without returns": (lambda m: m.update(final_eval={}), "its final_eval has no return_per_seed"),
    "no seeds": (lambda m: m.pop("seeds"), "it has no seeds"),
}


def gif_of(directory: Path, tmp_path: Path) -> int:
    from renderers.cli import main as renderers

    out = tmp_path / "policy.gif"
    try:
        return renderers(["gif", "--env", "CartPole-v1", "--policy", str(directory), "--steps", "2", "--out", str(out)])
    except SystemExit as stop:
        return stop.code


@pytest.mark.parametrize("case", [*JSON_DAMAGE, "NaN policy weights"])
def test_every_loader_refuses_a_damaged_checkpoint_with_one_line_naming_file_and_key(run, case, tmp_path, capsys):
    finished(run)  # so that the export gets as far as reading it
    if case in JSON_DAMAGE:
        edit, words = JSON_DAMAGE[case]
        meta = raw_meta(run)
        edit(meta)
        write_meta(run, meta)
        named = f"{run / META} is damaged: "
    else:
        nan_in_the_policy(run)
        reseal(run)
        named, words = f"{state_path(run)} is damaged or its run diverged", policy_leaf(run)
    with pytest.raises(checkpoint.CheckpointError) as error:
        policies.load_policy(run)
    assert named in str(error.value) and words in str(error.value)
    before = contents(run)
    for front_end, status in [
        ("python -m maxatar_agents.dqn", lambda: cli.main("dqn", ["--out", str(run), "--resume", "--no-progress"])),
        ("python -m maxatar_agents.export", lambda: export(run, tmp_path / "policy")),
        ("python -m renderers gif", lambda: gif_of(run, tmp_path)),
    ]:
        try:
            code = status()
        except SystemExit as stop:
            code = stop.code
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and err.startswith(f"{front_end}: error: "), (front_end, err)
        assert named in err and words in err, (front_end, err)
    assert contents(run) == before and not (tmp_path / "policy.gif").exists() and not (tmp_path / "policy").exists()


# --- a run that cannot write its metrics ---


def unwritable_metrics(how: str):
    def make(out: Path) -> None:
        if how == "read-only":
            (out / "metrics.csv").chmod(0o444)
        elif how == "a FIFO in its place":  # opening it for writing would wait for a reader
            (out / "metrics.csv").unlink()
            os.mkfifo(out / "metrics.csv")
        else:  # what stops root too
            (out / "metrics.csv").unlink()
            (out / "metrics.csv").mkdir()

    return make


@pytest.mark.parametrize(
    "how",
    [
        "a directory in its place",
        "a FIFO in its place",
        pytest.param("read-only", marks=pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files")),
    ],
)
def test_a_run_that_cannot_write_its_metrics_stops_with_the_resume_command(tmp_path, monkeypatch, capsys, how):
    out = tmp_path / "run"
    damage = unwritable_metrics(how)

    def after(done: int) -> None:
        if done == 2:
            damage(out)

    monkeypatch.setattr(cli, "run", functools.partial(cli.run, on_interval=after))
    with pytest.raises(SystemExit) as stop:
        cli.main("dqn", [*ARGS, "--out", str(out), "--checkpoint-every", "1"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1, err
    resume = f"python -m maxatar_agents.dqn --out {out} --resume"
    assert f"could not write {out / 'metrics.csv'}: " in err and "the checkpoint of interval 3 of 4" in err, err
    assert err.endswith(f"is intact. Continue with: {resume}\n"), err
    assert checkpoint.read_meta(out)["intervals_done"] == 3 and not (out / checkpoint.LOCK_FILE).exists()
    if (out / "metrics.csv").is_dir():
        (out / "metrics.csv").rmdir()
    elif how == "a FIFO in its place":
        (out / "metrics.csv").unlink()
    else:
        (out / "metrics.csv").chmod(0o644)
    monkeypatch.undo()
    cli.main("dqn", resume.split()[3:] + ["--no-progress"])  # the command it printed
    assert len((out / "metrics.csv").read_text().splitlines()) == 1 + 4


def immutable(path: Path) -> bool:
    """`chattr +i path`, which stops root too; False where the file system has no such attribute."""
    return subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode == 0


def test_a_run_whose_directory_turns_immutable_stops_with_the_resume_command(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    if not immutable(tmp_path):
        pytest.skip("chattr +i is not available here")
    subprocess.run(["chattr", "-i", str(tmp_path)], check=True)
    monkeypatch.setattr(cli, "run", functools.partial(cli.run, on_interval=lambda done: done == 2 and immutable(out)))
    try:
        with pytest.raises(SystemExit) as stop:
            cli.main("dqn", [*ARGS, "--out", str(out), "--checkpoint-every", "1"])
    finally:
        subprocess.run(["chattr", "-i", str(out)], check=True)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1, err
    assert f"could not save the checkpoint in {out}" in err and "interval 2 of 4" in err, err
    assert err.endswith(f". Continue with: python -m maxatar_agents.dqn --out {out} --resume\n"), err


# --- Ctrl-C at any moment, in a real process ---

ANNOUNCING = """
import functools, sys
from maxatar_agents.run import cli, runner

compiled = runner.compiled
def announce(*args):
    print("compiling", file=sys.stderr, flush=True)
    return compiled(*args)

cli.compiled = announce
cli.run = functools.partial(cli.run, on_interval=lambda done: print(f"interval {done}", file=sys.stderr, flush=True))
cli.main("dqn", sys.argv[1:])
"""


@pytest.mark.parametrize("moment", ["compiling", "interval 2"])
def test_ctrl_c_while_compiling_or_training_ends_with_one_line_and_status_130(tmp_path, moment):
    """`python -m maxatar_agents.dqn` (announcing when it compiles and each interval it completes) gets SIGINT
    then: once it ended in a segmentation fault while compiling."""
    out = tmp_path / "run"
    argv = [a for a in ARGS if a != "--total-steps" and a != "2000"] + ["--total-steps", "400000"]
    argv += ["--set=log_points=400", "--checkpoint-every", "0", "--out", str(out)]
    child = subprocess.Popen(
        [sys.executable, "-c", ANNOUNCING, *argv], stderr=subprocess.PIPE, text=True, cwd=ROOT, env=os.environ
    )
    for line in child.stderr:
        if line.startswith(moment):
            child.send_signal(signal.SIGINT)
            break
    err = child.stderr.read()
    assert child.wait(120) == cli.EXIT_INTERRUPTED, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    if moment == "compiling":
        assert lines[0] == "interrupted while compiling, before any training" and not out.exists()
    else:
        assert lines[0].startswith("interrupted after ") and lines[0].endswith(f"--out {out} --resume"), err
        assert checkpoint.read_meta(out)["intervals_done"] >= 2 and not (out / checkpoint.LOCK_FILE).exists()
        policies.load_policy(out)  # whole
