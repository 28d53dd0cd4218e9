"""End-to-end tests of the baseline agents (maxatar_agents) on CartPole.

Compilation dominates the cost on CPU, so each agent is compiled and trained once per module (fixtures) in
two ways, the whole-run program `make_train(config)` and the chunked command line, and the tests compare
and inspect those runs.
"""

from __future__ import annotations

import csv
import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import maxatar
from maxatar_agents.algorithms import dqn, off_policy
from maxatar_agents.algorithms.evaluation import episode_stats_init, episode_stats_update, recent_return
from maxatar_agents.algorithms.networks import patches3x3
from maxatar_agents.algorithms.off_policy import Transition
from maxatar_agents.run import checkpoint, cli, policies, runner, saved
from maxatar_agents.run.configs import config_to_dict
from tests import agent_lists

pytestmark = pytest.mark.slow  # the suite's slow tier (docs/contributing.md)

AGENTS = {module.ALGORITHM: module for module in agent_lists.cartpole_modules()}
SEEDS = 2
# A short CartPole run: long enough to beat random play clearly, short enough for CI.
OVERRIDES = {
    "dqn": {
        "total_steps": 12_000,
        "learning_starts": 1_000,
        "epsilon_frames": 4_000,
        "log_points": 4,
        "buffer_size": 20_000,
    },
    # SAC's CartPole preset does not keep the best params; the test run does, so that the off-policy
    # skeleton's keep_best is exercised by an agent whose policy params are not its `params`.
    "sac": {"total_steps": 12_000, "learning_starts": 1_000, "log_points": 4, "buffer_size": 20_000, "keep_best": True},
    "ppo": {"total_steps": 40_000, "log_points": 4},
    "pqn": {"total_steps": 40_000, "log_points": 4},
}
COMMON = {"eval_episodes": 16}
# An agent without overrides of its own here trains its `cartpole` preset for 4 intervals.
DEFAULT_OVERRIDES = {"log_points": 4}


def make_test_config(algorithm: str):
    module = AGENTS[algorithm]
    return dataclasses.replace(module.Config(**module.PRESETS["cartpole"]), **overrides(algorithm), **COMMON)


def overrides(algorithm: str) -> dict:
    return OVERRIDES.get(algorithm, DEFAULT_OVERRIDES)


def cli_args(algorithm: str, out, *extra: str) -> list[str]:
    sets = [f"--set={k}={v}" for k, v in {**overrides(algorithm), **COMMON}.items() if k != "total_steps"]
    total = make_test_config(algorithm).total_steps
    base = ["--env", "CartPole-v1", "--preset", "cartpole", "--seeds", str(SEEDS), "--total-steps", str(total)]
    return [*base, *sets, "--out", str(out), "--no-progress", *extra]


def seed_keys() -> jax.Array:
    return jnp.stack([jax.random.PRNGKey(s) for s in range(SEEDS)])


@pytest.fixture(scope="module", params=sorted(AGENTS))
def algorithm(request) -> str:
    return request.param


_cache: dict = {}


def whole_run(algorithm: str):
    """`make_train(config)` on two seeds, vmapped, as one jitted program (computed once per agent)."""
    if ("train", algorithm) not in _cache:
        train = jax.jit(jax.vmap(AGENTS[algorithm].make_train(make_test_config(algorithm))))
        _cache["train", algorithm] = jax.device_get(train(seed_keys()))
    return _cache["train", algorithm]


def cli_run(algorithm: str, tmp_path_factory):
    """The command line on the same config and seeds (computed once per agent)."""
    if ("cli", algorithm) not in _cache:
        out = tmp_path_factory.mktemp(f"{algorithm}-cli")
        summary = cli.run(algorithm, cli_args(algorithm, out))
        _cache["cli", algorithm] = (out, summary)
    return _cache["cli", algorithm]


def saved_state(algorithm: str, out):
    parts = runner.compiled(algorithm, make_test_config(algorithm), SEEDS)
    return checkpoint.load_state(out, parts["template"], checkpoint.read_meta(out), saved.schema(parts["program"]))


def assert_trees_equal(a, b):
    leaves_a, leaves_b = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(leaves_a) == len(leaves_b)
    for x, y in zip(leaves_a, leaves_b, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


# --- learning ---


def test_agent_beats_random_play_on_cartpole(algorithm):
    result = whole_run(algorithm)
    # Uniformly random play returns about 22 on CartPole. The off-policy agents' first logged interval is
    # mostly such play; the on-policy agents learn from their first rollout on, so theirs is higher already.
    random_return = 22.0
    first = result.metrics["recent_return"][:, 0]
    if algorithm in ("dqn", "sac"):
        assert np.all(first < 40), first
    per_seed = result.eval_returns.mean(axis=1)
    assert per_seed.shape == (SEEDS,)
    assert np.all(per_seed > 3 * random_return), (random_return, per_seed)
    assert np.all(result.metrics["recent_return"][:, -1] > result.metrics["recent_return"][:, 0])


def test_same_seed_same_run_other_seed_other_run(algorithm, tmp_path_factory):
    result = whole_run(algorithm)
    out, summary = cli_run(algorithm, tmp_path_factory)
    # Same seeds through two separately compiled programs (one scan vs chunked calls): identical.
    np.testing.assert_array_equal(result.eval_returns.mean(axis=1), summary["final_eval_return_per_seed"])
    # Different seeds: different runs.
    assert not np.array_equal(result.metrics["recent_return"][0], result.metrics["recent_return"][1])


def test_chunked_run_equals_whole_run_bit_for_bit(algorithm, tmp_path_factory):
    result = whole_run(algorithm)
    out, _ = cli_run(algorithm, tmp_path_factory)
    assert_trees_equal(saved_state(algorithm, out), result.state)
    rows = list(csv.DictReader(open(out / "metrics.csv")))
    cli_curve = np.array([[float(r["recent_return"]) for r in rows if int(r["seed"]) == s] for s in range(SEEDS)])
    np.testing.assert_array_equal(cli_curve, np.asarray(result.metrics["recent_return"], np.float64))


# The learner's field of each agent's evaluation policy; with keep_best the best of them sit in `best_params`.
POLICY_FIELD = {"dqn": "params", "sac": "actor_params", "pqn": "params"}


@pytest.mark.parametrize("name", sorted(POLICY_FIELD))
def test_keep_best_keeps_the_params_of_the_best_evaluation(name):
    assert make_test_config(name).keep_best  # DQN's and PQN's CartPole presets, SAC's test overrides
    result = whole_run(name)
    evals, best = result.metrics["eval_return"], result.metrics["best_eval_return"]
    assert evals.shape == (SEEDS, OVERRIDES[name]["log_points"])
    np.testing.assert_array_equal(best, np.maximum.accumulate(evals, axis=1))
    np.testing.assert_array_equal(result.state.best_return, best[:, -1])
    assert AGENTS[name].make_program(make_test_config(name)).policy_field == "best_params"
    kept, last = (
        jax.tree.leaves(result.state.best_params),
        jax.tree.leaves(getattr(result.state.learner, POLICY_FIELD[name])),
    )
    for seed in range(SEEDS):
        same = all(np.array_equal(a[seed], b[seed]) for a, b in zip(kept, last, strict=True))
        # Ties go to the later params, so the last params are kept exactly when their evaluation was a best.
        assert same == bool(evals[seed, -1] >= best[seed, -2]), (seed, evals[seed])


# --- command line ---


def test_cli_writes_all_artefacts(algorithm, tmp_path_factory):
    out, summary = cli_run(algorithm, tmp_path_factory)
    config = make_test_config(algorithm)
    for name in ["metrics.csv", "summary.json", "learning_curve.png", "checkpoint.npz", "checkpoint.json"]:
        assert (out / name).is_file(), name
    assert (out / "learning_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    rows = list(csv.DictReader(open(out / "metrics.csv")))
    intervals = config.log_points
    assert len(rows) == intervals * SEEDS
    assert {"seed", "frames", "episodes", "recent_return", "wall_time"} <= set(rows[0])
    assert int(rows[-1]["frames"]) >= config.total_steps

    saved = json.loads((out / "summary.json").read_text())
    assert saved["config"] == config_to_dict(config)
    assert saved["env_id"] == "maxatar/CartPole-v1" and saved["algorithm"] == algorithm
    assert len(saved["final_eval_return_per_seed"]) == SEEDS
    assert saved["final_eval_return_mean"] == pytest.approx(np.mean(saved["final_eval_return_per_seed"]))
    assert saved["wall_time"] > 0 and saved["devices"]
    # Agents whose policy is a distribution (SAC, PPO) are evaluated by actions drawn from it too, as the
    # whole-run program does; the greedy learners have no such column.
    sampled = whole_run(algorithm).sampled_eval_returns
    if algorithm in ("sac", "ppo"):
        assert sampled.shape == (SEEDS, config.eval_episodes) and np.all(np.isfinite(sampled))
        np.testing.assert_allclose(saved["final_eval_sampled_return_per_seed"], sampled.mean(axis=1), rtol=1e-6)
    else:
        assert sampled is None and "final_eval_sampled_return_mean" not in saved


def test_load_policy_plays_the_trained_policy(algorithm, tmp_path_factory):
    out, summary = cli_run(algorithm, tmp_path_factory)
    env_id, act_fn = policies.load_policy(out / "checkpoint.npz")
    assert env_id == "maxatar/CartPole-v1"
    env, params = maxatar.make(env_id)
    obs, _ = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(jax.random.PRNGKey(3), 8), params)
    actions = jax.jit(lambda policy, obs: policy(None, obs))(act_fn, obs)  # weights passed as arguments
    assert actions.shape == (8,) and actions.dtype == jnp.int32
    assert np.all((np.asarray(actions) >= 0) & (np.asarray(actions) < env.num_actions))
    single = act_fn(None, obs[0])
    assert single.shape == () and int(single) == int(actions[0])
    # Explicit params are used; a PRNG key in their place (the renderers' act(key, obs)) means "saved params".
    saved_params = act_fn.args[0]
    np.testing.assert_array_equal(act_fn(saved_params, obs), actions)
    assert int(act_fn(jax.random.PRNGKey(7), obs[0])) == int(actions[0])
    zeroed = jax.tree.map(jnp.zeros_like, saved_params)
    assert np.all(np.asarray(act_fn(zeroed, obs)) == 0)  # all-zero network: every action ties, argmax is 0


def test_resume_after_ctrl_c_equals_uninterrupted_run(algorithm, tmp_path_factory):
    full_out, full_summary = cli_run(algorithm, tmp_path_factory)
    out = tmp_path_factory.mktemp(f"{algorithm}-resume")

    def ctrl_c_after_two(done: int):
        if done == 2:
            raise KeyboardInterrupt

    # No periodic checkpoint before the interrupt: the Ctrl-C handler must save the latest state.
    args = cli_args(algorithm, out, "--checkpoint-every", str(10**9))
    with pytest.raises(SystemExit) as stop:
        cli.run(algorithm, args, on_interval=ctrl_c_after_two)
    assert stop.value.code == cli.EXIT_INTERRUPTED
    assert checkpoint.read_meta(out)["intervals_done"] == 2
    assert not (out / "summary.json").exists()

    summary = cli.run(algorithm, ["--out", str(out), "--resume", "--no-progress"])
    assert summary["final_eval_return_per_seed"] == full_summary["final_eval_return_per_seed"]
    assert_trees_equal(saved_state(algorithm, out), saved_state(algorithm, full_out))
    drop_time = lambda rows: [{k: v for k, v in r.items() if k != "wall_time"} for r in rows]
    resumed_rows = drop_time(csv.DictReader(open(out / "metrics.csv")))
    assert resumed_rows == drop_time(csv.DictReader(open(full_out / "metrics.csv")))


def test_stop_at_return_ends_where_the_full_run_first_reaches_it_and_resume_completes_it(tmp_path_factory):
    full_out, full_summary = cli_run("ppo", tmp_path_factory)
    rows = list(csv.DictReader(open(full_out / "metrics.csv")))
    frames = sorted({int(r["frames"]) for r in rows})
    lowest = [min(float(r["recent_return"]) for r in rows if int(r["frames"]) == f) for f in frames]
    target = lowest[1]  # every seed is there after the second interval, perhaps after the first
    stop_at = frames[next(i for i, low in enumerate(lowest) if low >= target)]
    out = tmp_path_factory.mktemp("ppo-stop")

    summary = cli.run("ppo", cli_args("ppo", out, "--stop-at-return", repr(target)))
    assert summary["frames_per_seed"] == stop_at < full_summary["frames_per_seed"]
    assert summary["stopped_at_return"] == target
    stopped_rows = list(csv.DictReader(open(out / "metrics.csv")))
    drop_time = lambda rows: [{k: v for k, v in r.items() if k != "wall_time"} for r in rows]
    assert drop_time(stopped_rows) == drop_time(r for r in rows if int(r["frames"]) <= stop_at)

    summary = cli.run("ppo", ["--out", str(out), "--resume", "--no-progress"])  # on to the run's full frames
    assert "stopped_at_return" not in summary
    assert summary["final_eval_return_per_seed"] == full_summary["final_eval_return_per_seed"]
    assert drop_time(csv.DictReader(open(out / "metrics.csv"))) == drop_time(rows)


# --- bad input ---


def expect_usage_error(capsys, algorithm: str, argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as stop:
        cli.main(algorithm, argv)
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


def test_bad_command_lines_fail_clearly(capsys, tmp_path):
    out = str(tmp_path / "run")
    expect_usage_error(capsys, "dqn", ["--env", "Pong-v5", "--out", out], "unknown environment id 'Pong-v5'")
    out = ["--env", "CartPole-v1", "--out", out]
    expect_usage_error(capsys, "sac", ["--preset", "turbo", *out], "unknown preset 'turbo'")
    expect_usage_error(capsys, "dqn", ["--set", "learning_rate=1", *out], "--set expects FIELD=VALUE")
    expect_usage_error(capsys, "dqn", ["--set", "batch_size=abc", *out], "--set batch_size=abc")
    expect_usage_error(capsys, "dqn", ["--set", "optimizer=sgd", *out], "optimizer must be")
    expect_usage_error(capsys, "dqn", ["--seeds", "0", *out], "--seeds must be >= 1")
    expect_usage_error(capsys, "ppo", ["--stop-at-return", "nan", *out], "--stop-at-return must be a finite return")
    expect_usage_error(capsys, "sac", [*out, "--resume"], "no checkpoint")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    cartpole = ["--env", "CartPole-v1"]
    expect_usage_error(capsys, "dqn", [*cartpole, "--out", str(blocker / "run")], "cannot write to --out")
    expect_usage_error(capsys, "dqn", [*cartpole, "--out", str(blocker)], "is not a directory")


def test_checkpoint_of_another_run_is_refused(capsys, tmp_path_factory):
    out, _ = cli_run("dqn", tmp_path_factory)
    base = ["--out", str(out), "--resume"]
    expect_usage_error(capsys, "dqn", [*base, "--set", "lr=0.1"], "was made with another config (lr:")
    expect_usage_error(capsys, "dqn", [*base, "--env", "Doors-v0"], "is for maxatar/CartPole-v1")
    expect_usage_error(capsys, "sac", base, "is a dqn run, not sac")
    expect_usage_error(capsys, "dqn", ["--out", str(out), "--preset", "cartpole"], "already holds a run")
    # Loading the saved state into another configuration's template fails by name, shape or dtype.
    other = dataclasses.replace(make_test_config("dqn"), hidden=(64,))
    template = jax.eval_shape(jax.vmap(dqn.make_program(other).init), seed_keys())
    with pytest.raises(checkpoint.CheckpointError, match="does not match this configuration"):
        checkpoint.load_state(out, template, checkpoint.read_meta(out), saved.schema(dqn.make_program(other)))


def test_exported_policy_is_one_seed_of_the_run_and_cannot_be_resumed(algorithm, tmp_path_factory):
    out, summary = cli_run(algorithm, tmp_path_factory)
    shipped = tmp_path_factory.mktemp(f"{algorithm}-export")
    policies.export_policy(out, shipped, 1, record={"note": "test"})
    meta = checkpoint.read_meta(shipped)
    assert meta["policy_only"] and meta["seeds"] == [1] and meta["record"] == {"note": "test"}
    assert meta["final_eval"]["return_per_seed"] == [summary["final_eval_return_per_seed"][1]]
    env, params = maxatar.make("maxatar/CartPole-v1")
    obs, _ = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(jax.random.PRNGKey(5), 16), params)
    _, from_run = policies.load_policy(out, seed_index=1)
    _, exported = policies.load_policy(shipped)
    np.testing.assert_array_equal(exported(None, obs), from_run(None, obs))
    assert_trees_equal(exported.args[0], from_run.args[0])
    # Its fixed evaluation is the run's policy's, and a policy-only checkpoint is not a training state.
    np.testing.assert_array_equal(policies.policy_returns(shipped, 4), policies.policy_returns(out, 4, seed_index=1))
    parts = runner.compiled(algorithm, make_test_config(algorithm), SEEDS)
    with pytest.raises(checkpoint.CheckpointError, match="holds only a trained policy"):
        checkpoint.load_state(shipped, parts["template"], meta, saved.schema(parts["program"]))
    with pytest.raises(checkpoint.CheckpointError, match="outside the checkpoint's 2 seeds"):
        policies.export_policy(out, shipped, 2, record={})


def test_the_export_command_keeps_the_best_seed_and_names_a_bad_seed(capsys, tmp_path_factory):
    from maxatar_agents.run import export

    out, summary = cli_run("dqn", tmp_path_factory)
    policy = export.main([str(out), str(tmp_path_factory.mktemp("exported") / "policy")])
    best = int(np.argmax(summary["final_eval_return_per_seed"]))
    meta = checkpoint.read_meta(policy)
    assert meta["policy_only"] and meta["seeds"] == [summary["seeds"][best]] and meta["record"]["seed"] == best
    assert "kB (the run:" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        export.main([str(out), str(policy), "--seed-index", "5"])
    assert "seed_index 5 is outside the checkpoint's 2 seeds" in capsys.readouterr().err


def test_load_policy_rejects_what_is_not_a_checkpoint(tmp_path):
    (tmp_path / "checkpoint.json").write_text(json.dumps({"format": "something else"}))
    with pytest.raises(checkpoint.CheckpointError, match="is not a"):
        policies.load_policy(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(checkpoint.CheckpointError, match="no checkpoint"):
        policies.load_policy(empty)


# --- shared pieces ---


def test_patch_extraction_equals_a_valid_convolution():
    rng = np.random.default_rng(0)
    x = (rng.random((2, 10, 10, 4)) < 0.3).astype(np.float32)
    kernel = rng.normal(size=(3, 3, 4, 16)).astype(np.float32)  # (height, width, in, out), as flax's Conv
    reference = np.zeros((2, 8, 8, 16), np.float32)
    for i in range(3):
        for j in range(3):
            reference += x[:, i : i + 8, j : j + 8, :] @ kernel[i, j]
    via_patches = np.asarray(patches3x3(jnp.asarray(x))) @ kernel.reshape(9 * 4, 16)
    np.testing.assert_allclose(via_patches, reference, rtol=1e-5, atol=1e-5)


def test_recent_return_covers_exactly_the_last_hundred_episodes():
    @jax.jit
    def play():
        stats = episode_stats_init(num_envs=150)
        # Step 1: all 150 environments finish with return 1; step 2: 50 of them finish again with return 3.
        first = episode_stats_update(stats, jnp.ones(150), jnp.ones(150, bool))
        second = episode_stats_update(first, jnp.full(150, 3.0), jnp.arange(150) < 50)
        none_yet = recent_return(episode_stats_init(4))
        return first.finished, recent_return(first), second.finished, recent_return(second), none_yet

    finished1, recent1, finished2, recent2, none_yet = jax.device_get(play())
    assert (finished1, recent1) == (150, 1.0)
    assert finished2 == 200 and recent2 == pytest.approx((50 * 1 + 50 * 3) / 100)
    assert np.isnan(none_yet)


def test_n_step_target_matches_a_plain_loop():
    """Random runs of n + 1 steps with episode ends anywhere: the target and the usable flag equal the
    textbook definition written as a loop (n = 1 is MinAtar's one-step target)."""
    rng = np.random.default_rng(0)
    gamma = 0.9
    for n in (1, 3):
        batch = 256
        terminated = rng.random((batch, n + 1)) < 0.15
        truncated = rng.random((batch, n + 1)) < 0.15
        reward = rng.normal(size=(batch, n + 1)).astype(np.float32)
        next_q = rng.normal(size=batch).astype(np.float32)
        sequence = Transition(
            obs=np.zeros((batch, n + 1, 1), np.float32),
            action=np.zeros((batch, n + 1), np.int32),
            reward=reward,
            terminated=terminated,
            truncated=truncated,
        )
        target, usable = jax.device_get(off_policy.n_step_target(jax.tree.map(jnp.asarray, sequence), next_q, gamma))
        for b in range(batch):
            expected, ok = 0.0, True
            for k in range(n):
                expected += gamma**k * reward[b, k]
                if terminated[b, k] or truncated[b, k]:
                    ok = bool(terminated[b, k])  # a truncation leaves no state to bootstrap from
                    break
            else:
                expected += gamma**n * next_q[b]
            assert bool(usable[b]) == ok
            if ok:
                assert target[b] == pytest.approx(expected, rel=1e-5, abs=1e-5)


def test_n_step_dqn_trains_end_to_end():
    config = dqn.Config(
        **{**dqn.PRESETS["cartpole"], "n_step": 3, "total_steps": 3_000, "log_points": 3, "keep_best": False},
        eval_episodes=4,
    )
    result = jax.device_get(jax.jit(dqn.make_train(config))(jax.random.PRNGKey(0)))
    assert np.all(np.isfinite(result.metrics["loss"])) and result.metrics["loss"][-1] > 0
    assert result.eval_returns.shape == (4,) and np.all(result.eval_returns >= 1)
