"""The persistent compilation cache (`maxatar.compilation_cache`): where it lives, that a second process reads
what the first compiled (with the same results), that a directory the user chose and the opt-out are obeyed,
and that processes sharing it at once all succeed. Processes of their own: the cache is per-process JAX state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from maxatar import compilation_cache

pytestmark = pytest.mark.slow  # the suite's slow tier (docs/contributing.md)

# Makes CartPole, compiles a 200-step rollout of it (longer than MIN_COMPILE_SECONDS to compile), and prints
# the cache directory JAX uses, the cache hits and misses it counted, and the rollout's return.
SCRIPT = """
import json
import jax, jax.numpy as jnp
import maxatar
events = {}
jax.monitoring.register_event_listener(lambda name, **_: events.__setitem__(name, events.get(name, 0) + 1))
env, params = maxatar.make("CartPole-v1")

@jax.jit
def rollout(key):
    obs, state = env.reset(key, params)
    def one(carry, t):
        state, total = carry
        obs, state, reward, *_ = env.step(jax.random.fold_in(key, t), state, t % 2, params)
        return (state, total + reward), None
    return jax.lax.scan(one, (state, 0.0), jnp.arange(200))[0][1]

total = float(rollout(jax.random.PRNGKey(0)))
print(json.dumps({
    "dir": jax.config.values["jax_compilation_cache_dir"],
    "hits": events.get("/jax/compilation_cache/cache_hits", 0),
    "misses": events.get("/jax/compilation_cache/cache_misses", 0),
    "total": total,
}))
"""


def run_script(env_vars: dict[str, str], home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("MAXATAR_CACHE_DIR", "JAX_COMPILATION_CACHE_DIR")}
    env.update({"HOME": str(home), "XDG_CACHE_HOME": "", **env_vars})
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def entries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.glob("*-cache")) if directory.exists() else []


def test_the_cache_directory_by_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(compilation_cache.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert compilation_cache.cache_dir() == tmp_path / "xdg" / "maxatar" / "jax"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert compilation_cache.cache_dir() == tmp_path / "home" / ".cache" / "maxatar" / "jax"
    monkeypatch.setenv(compilation_cache.ENV_VAR, str(tmp_path / "mine"))
    assert compilation_cache.cache_dir() == tmp_path / "mine"
    for off in ("off", "", "0", "OFF", "false"):
        monkeypatch.setenv(compilation_cache.ENV_VAR, off)
        assert compilation_cache.cache_dir() is None


def test_a_second_process_reads_what_the_first_compiled(tmp_path):
    home = tmp_path / "home"
    first = run_script({}, home)
    default = home / ".cache" / "maxatar" / "jax"  # on by default, in the user's cache directory
    assert first["dir"] == str(default) and first["hits"] == 0 and first["misses"] >= 1
    written = entries(default)
    assert written
    second = run_script({}, home)
    assert second["hits"] >= 1 and second["misses"] == 0
    assert second["total"] == first["total"]  # the cached program computes what the compiled one did
    assert entries(default) == written


def test_a_directory_the_user_chose_and_the_opt_out_are_obeyed(tmp_path):
    home = tmp_path / "home"
    # Their directory and their settings (JAX's 1 s minimum compile time unless they lower it, as here).
    chosen = {"JAX_COMPILATION_CACHE_DIR": str(tmp_path / "theirs"), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
    theirs = run_script(chosen, home)
    assert theirs["dir"] == str(tmp_path / "theirs") and entries(tmp_path / "theirs")
    assert not (home / ".cache").exists()
    off = run_script({"MAXATAR_CACHE_DIR": "off"}, home)
    assert off["dir"] is None and off["hits"] == off["misses"] == 0
    assert not (home / ".cache").exists()


@pytest.mark.parametrize("processes", [3])
def test_processes_sharing_the_cache_at_once_all_succeed(tmp_path, processes):
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    env["MAXATAR_CACHE_DIR"] = str(tmp_path / "shared")
    running = [
        subprocess.Popen([sys.executable, "-c", SCRIPT], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(processes)
    ]
    results = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in running]
    assert all(p.returncode == 0 for p in running)
    assert len({r["total"] for r in results}) == 1
    assert entries(tmp_path / "shared")


def test_the_cache_directories_are_private_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        directory = tmp_path / "made" / "by" / "maxatar"
        assert compilation_cache.private_dir(directory)
    finally:
        os.umask(old)
    for path in (directory, directory.parent, directory.parent.parent):
        assert path.stat().st_mode & 0o777 == 0o700, path


def test_a_cache_directory_others_can_write_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.warns(UserWarning, match="writable by others"):
        assert not compilation_cache.private_dir(shared)
    shared.chmod(0o700)
    assert compilation_cache.private_dir(shared)


def test_a_cache_directory_that_cannot_be_made_or_written_is_one_warning(tmp_path):
    (tmp_path / "afile").write_text("x")
    with pytest.warns(
        UserWarning, match=r"cache .*afile/sub: cannot create or write it \(Not a directory\); set MAXATAR"
    ):
        assert not compilation_cache.private_dir(tmp_path / "afile" / "sub")
    with pytest.warns(UserWarning, match=r"afile: cannot create or write it \(it is not a directory\); set MAXATAR"):
        assert not compilation_cache.private_dir(tmp_path / "afile")  # MAXATAR_CACHE_DIR naming a regular file
    frozen = tmp_path / "frozen"
    frozen.mkdir(mode=0o700)
    if subprocess.run(["chattr", "+i", str(frozen)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i (unwritable, even for root) is not available here")
    try:
        for directory in (frozen / "new", frozen):  # one it cannot make, one it cannot write
            with pytest.warns(UserWarning, match=f"{directory}: cannot create or write it .*MAXATAR_CACHE_DIR"):
                assert not compilation_cache.private_dir(directory)
    finally:
        subprocess.run(["chattr", "-i", str(frozen)], check=True)
