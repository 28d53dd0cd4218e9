"""The wheel stands alone: built from the tree, installed into a fresh virtual environment and run in an empty
folder, it runs what the docs promise (the demo, every Gymnasium id, `make_vec`, the gymnax facade, the shipped
policies, the agents' command line), and carries none of the project's own release pipeline.

The environment sees the packages of the interpreter running the tests (a `.pth` file lists its site-packages
directories, so jax and the extras need no download, whether the tests run in a virtual environment or not;
`--system-site-packages` would show a virtual environment's base interpreter instead) and gets the wheel with
`--no-deps`; its own site-packages come first on `sys.path`, and every command checks that MaxAtar is imported
from there, not from the checkout (which may be installed editable). A second environment sees only MaxAtar's
own dependencies, as `pip install maxatar` brings them: each entry point that needs an extra says which one, in
one line. The release checklist in docs/contributing.md runs the same build with `python -m build` and `twine
check`.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import site
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

pytestmark = pytest.mark.slow  # the suite's slow tier (docs/contributing.md)

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("maxatar", "maxatar_agents", "renderers")
# The project's results pipeline (it writes docs/ and README.md): it belongs to the checkout, not to the wheel.
# The project's own results and release pipeline (`lab/`, not installed). `maxatar_agents/published.py` stays:
# the installed evaluation normalises by MinAtar's published DQN returns it holds.
FORBIDDEN = (
    "maxatar_agents/results.py",
    "maxatar_agents/pages.py",
    "maxatar_agents/machine.py",
    "lab/__init__.py",
    "lab/results.py",
)

# Run by the environment's interpreter in the empty folder: the API a user meets first, one step of each.
API = """
import sys
from pathlib import Path

import gymnasium
import jax
import numpy as np

import maxatar
import maxatar_agents
import renderers
from maxatar import gymnax
from maxatar_agents import load_policy

for module in (maxatar, maxatar_agents, renderers):
    assert Path(module.__file__).is_relative_to(sys.prefix), f"{module.__name__} from {module.__file__}"

ids = [i for i in gymnasium.registry if i.startswith("maxatar/")]
assert len(ids) >= 12, ids
for env_id in ids:
    env = gymnasium.make(env_id)
    env.reset(seed=0)
    env.step(env.action_space.sample())
    env.close()

vec = gymnasium.make_vec("maxatar/Breakout-v0", num_envs=4)
vec.reset(seed=0)
vec.step(vec.action_space.sample())

env, params = gymnax.make("Breakout-MinAtar")
obs, state = env.reset(jax.random.key(0), params)
env.step(jax.random.key(1), state, 0, params)

env_id, act = load_policy("pretrained:maxatar/Breakout-v0")
assert 0 <= int(act(None, obs)) < 6, env_id
print(f"{len(ids)} ids, make_vec, gymnax, load_policy: ok")
"""

# name: (command, the file it writes)
COMMANDS = {
    "demo": (
        "python -m renderers gif --env maxatar/Breakout-v0 --policy pretrained --steps 30 --seed 0 --out x.gif",
        "x.gif",
    ),
    "api": ("python api.py", "api.py"),
    "agents": (
        "python -m maxatar_agents.ppo --env maxatar/CartPole-v1 --total-steps 2048 --out run --no-progress",
        "run/summary.json",
    ),
}


def copy_sources(dest: Path) -> Path:
    """What the build reads (pyproject.toml, the readme, the licence files and the packages it finds), without
    the tree's stale build/ and egg-info directories, which setuptools would otherwise pack."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    names = ["pyproject.toml", project["project"]["readme"], *project["project"]["license-files"]]
    for name in names:
        shutil.copy2(ROOT / name, dest / name)
    patterns = project["tool"]["setuptools"]["packages"]["find"]["include"]
    for path in ROOT.iterdir():
        if path.is_dir() and any(fnmatch.fnmatch(path.name, p) for p in patterns):
            shutil.copytree(path, dest / path.name, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = copy_sources(tmp_path_factory.mktemp("src"))
    out = tmp_path_factory.mktemp("dist")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", out, src], check=True)
    (built,) = out.glob("maxatar-*.whl")
    return built


def environment_with(wheel: Path, env: Path, site_dirs: list[str]) -> Path:
    """A fresh virtual environment at `env` holding the wheel, which sees the packages in `site_dirs` after its
    own; returns its bin/ directory."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", env], check=True)
    python = env / "bin" / "python"
    where = [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]
    purelib = Path(subprocess.run(where, check=True, capture_output=True, text=True).stdout.strip())
    (purelib / "packages-seen.pth").write_text("".join(f"{path}\n" for path in site_dirs))
    # This interpreter's pip installs into the environment; --ignore-installed leaves an editable install alone.
    install = ["-m", "pip", "--disable-pip-version-check", "--python", python, "install", "-q", "--no-deps"]
    subprocess.run([sys.executable, *install, "--ignore-installed", wheel], check=True)
    return env / "bin"


def dependencies_only(dest: Path) -> list[str]:
    """A site directory of links to MaxAtar's own dependencies and theirs, as installed here (what `pip install
    maxatar` brings), and no extra."""
    from importlib import metadata

    todo = [
        Requirement(text) for text in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    ]
    seen = set()
    while todo:
        requirement = todo.pop()
        if canonicalize_name(requirement.name) in seen:
            continue
        seen.add(canonicalize_name(requirement.name))
        dist = metadata.distribution(requirement.name)
        for top in {file.parts[0] for file in dist.files or ()} - {"..", "__pycache__"}:
            if not (dest / top).exists():
                (dest / top).symlink_to(dist.locate_file(top))
        wanted = [{"extra": extra} for extra in requirement.extras or {""}]
        for text in dist.requires or ():
            needed = Requirement(text)
            if needed.marker is None or any(needed.marker.evaluate(env) for env in wanted):
                todo.append(needed)
    return [str(dest)]


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh environment holding the wheel and seeing every package installed here; its bin/ directory."""
    site_dirs = site.getsitepackages() + ([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])
    return environment_with(wheel, tmp_path_factory.mktemp("venv"), site_dirs)


@pytest.fixture(scope="module")
def bare_venv(wheel, tmp_path_factory) -> Path:
    """A fresh environment holding the wheel and seeing only MaxAtar's own dependencies; its bin/ directory."""
    site_dirs = dependencies_only(tmp_path_factory.mktemp("dependencies"))
    return environment_with(wheel, tmp_path_factory.mktemp("bare-venv"), site_dirs)


def run_in(venv: Path, command: str, cwd: Path) -> subprocess.CompletedProcess:
    """`command` in a shell whose PATH starts with the environment's bin/, in `cwd`; prints what it printed."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv}{os.pathsep}{env['PATH']}"
    env["MAXATAR_CACHE_DIR"] = str(venv.parent / "jax-cache")  # a fresh environment compiles from scratch
    start = time.perf_counter()
    run = subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    print(f"$ {command}   ({time.perf_counter() - start:.1f} s)\n{(run.stdout + run.stderr)[-1500:]}")
    return run


def test_the_wheel_carries_the_packages_the_licence_and_the_shipped_policies(wheel):
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {*PACKAGES, f"maxatar-{version}.dist-info"}
    assert f"maxatar-{version}.dist-info/licenses/LICENSE" in names
    assert any(name.startswith("maxatar_agents/pretrained/Breakout-v0/") for name in names)


def test_the_wheel_leaves_the_release_pipeline_in_the_checkout(wheel):
    carried = [name for name in FORBIDDEN if name in zipfile.ZipFile(wheel).namelist()]
    assert not carried, f"the wheel carries the project's results pipeline: {carried}"


@pytest.mark.parametrize("name", COMMANDS)
def test_the_installed_wheel_runs_the_documented_commands_in_an_empty_folder(name, venv, tmp_path):
    (tmp_path / "api.py").write_text(API)
    command, writes = COMMANDS[name]
    run = run_in(venv, command, tmp_path)
    assert run.returncode == 0, f"`{command}` failed:\n{run.stderr[-3000:]}"
    assert (tmp_path / writes).is_file()


# Without extras: what each entry point prints, and its exit status (1: an uncaught MissingExtra's traceback).
BARE = """
import gymnasium

from maxatar.extras import MissingExtra

for name, call in {
    "sb3": lambda: __import__("maxatar.sb3", fromlist=["_"]).make_sb3_vec_env("maxatar/Breakout-v0", num_envs=2),
    "human": lambda: gymnasium.make("maxatar/Breakout-v0", render_mode="human").reset(seed=0),
    "load_policy": lambda: __import__("maxatar_agents").load_policy,
}.items():
    try:
        call()
    except MissingExtra as error:
        print(f"{name}: {error}")
"""
AGENTS = 'flax, optax, flashbax, tqdm, matplotlib are not installed: pip install "maxatar[agents]"'
MISSING = {
    "python -m renderers gif --env maxatar/Breakout-v0 --out x.gif": (
        'python -m renderers gif: error: imageio is not installed: pip install "maxatar[render]"'
    ),
    "python -m renderers play --env maxatar/Breakout-v0": (
        'python -m renderers play: error: pygame is not installed: pip install "maxatar[render]"'
    ),
    "python -m maxatar_agents pqn --out run": f"python -m maxatar_agents.pqn: error: {AGENTS}",
    "python -m maxatar_agents.sweep --algo pqn --out sweep": f"python -m maxatar_agents.sweep: error: {AGENTS}",
    "python bare.py": (
        'sb3: stable_baselines3 is not installed: pip install "maxatar[sb3]"\n'
        'human: pygame is not installed: pip install "maxatar[render]"\n'
        f"load_policy: {AGENTS}"
    ),
}


def test_without_extras_each_entry_point_names_the_extra_to_install_before_any_work(bare_venv, tmp_path):
    (tmp_path / "bare.py").write_text(BARE)
    for command, said in MISSING.items():
        run = run_in(bare_venv, command, tmp_path)
        assert (run.stdout + run.stderr).strip() == said, command
        assert run.returncode == (2 if command.startswith("python -m") else 0), command
    assert not any((tmp_path / name).exists() for name in ("x.gif", "run", "sweep"))
