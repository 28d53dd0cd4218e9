"""A new agent is one file and one registry line: A2C (`tests/toy_agent.py`, an agent that exists only in the
tests) is registered by one call, `maxatar_agents.register(name, module)` (in the package: its line in
`maxatar_agents/algorithms/registry.py`), and every generic layer picks it up with no other edit: the command line
(`python -m maxatar_agents ALGO`), its presets, the sweep's search space, checkpoints and `--resume`,
`load_policy`, the docs page generator, and the tests that parametrize over the agents. docs/architecture.md's
"Adding an agent" is what this test needs.

The layers run in one fresh interpreter (`python -m tests.test_new_agent`), so that the registration comes first,
as the registry line does in a checkout that has it, and nothing of it leaks into the other tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NAME = "toy_a2c"
# The test files that parametrize over the agents: each must collect the toy agent's cases.
PARAMETRIZED = ["test_agents.py", "test_agents_cli.py", "test_sweeps.py"]

pytestmark = pytest.mark.slow


def register() -> None:
    import maxatar_agents

    maxatar_agents.register(NAME, "tests.toy_agent")  # the one line a contributor adds


def check_every_layer(out: Path) -> None:
    register()
    import jax
    import numpy as np

    import maxatar
    from maxatar_agents import commands, load_policy
    from maxatar_agents.algorithms.registry import agent_module
    from maxatar_agents.experiments import sweep
    from maxatar_agents.run import checkpoint, cli, saved
    from maxatar_agents.run.configs import default_preset, make_config
    from tests import agent_lists, toy_agent

    module = agent_module(NAME)
    assert module is toy_agent
    # Presets and the search space.
    assert default_preset(module, "maxatar/CartPole-v1") == "cartpole"
    config = make_config(module, "maxatar/CartPole-v1")
    assert config.num_epochs == 1 and config.num_envs == 8
    assert sweep.load_space(NAME, None, config) is toy_agent.SEARCH_SPACE
    # The command line, stopped after its first interval, then resumed: checkpoints of the agent.
    args = ["--env", "CartPole-v1", "--seeds", "2", "--out", str(out), "--no-progress"]
    commands.main([NAME, *args, "--stop-at-return", "-1000"])
    meta = checkpoint.read_meta(out)
    assert meta["algorithm"] == NAME and meta["intervals_done"] == 1
    assert saved.config_for(meta) == config
    summary = cli.run(NAME, ["--out", str(out), "--resume", "--no-progress"])
    assert summary["algorithm"] == NAME and len(summary["final_eval_return_per_seed"]) == 2
    assert (out / "metrics.csv").read_text().count("\n") == 1 + 2 * config.log_points
    # Its trained policy.
    env_id, act = load_policy(out)
    env, params = maxatar.make(env_id)
    obs, _ = env.reset(jax.random.PRNGKey(0), params)
    assert int(act(None, obs)) in range(env.num_actions)
    np.testing.assert_array_equal(act(None, obs[None]), act(None, obs[None]))
    # The docs page generator.
    sys.path.insert(0, str(ROOT / "docs"))
    import make_pages

    assert NAME in make_pages.generated_agents()
    page = make_pages.agent_page(NAME)
    assert page.splitlines()[1] == "# A2C (toy)" and "`tests/toy_agent.py`" in page
    # The tests' lists of agents, and the test files that parametrize over them.
    assert NAME in agent_lists.agents() and NAME in agent_lists.cartpole_agents()
    collected = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import tests.test_new_agent as t; t.register(); import pytest; pytest.main({COLLECT!r})",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    ).stdout
    for name in PARAMETRIZED:
        assert any(line.startswith(f"tests/{name}::") and NAME in line for line in collected.splitlines()), name


COLLECT = ["--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider", *[f"tests/{n}" for n in PARAMETRIZED]]


def test_a_new_agent_is_one_file_and_one_registry_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "tests.test_new_agent", str(tmp_path / "run")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


if __name__ == "__main__":
    check_every_layer(Path(sys.argv[1]))
