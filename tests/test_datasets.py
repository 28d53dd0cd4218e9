"""The offline datasets (`maxatar_agents.datasets`): made by the vmapped collector, read through Minari's own API
and command line, the same episodes as `gymnasium.make` plays for the same seeds, and bad input refused with
nothing left behind. Small Breakout datasets, made once per module."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import gymnasium
import numpy as np
import pytest

minari = pytest.importorskip("minari")

import maxatar  # noqa: E402
from maxatar.checks import InputError  # noqa: E402
from maxatar_agents import datasets as command  # noqa: E402
from maxatar_agents.run import checkpoint, collector, datasets  # noqa: E402
from maxatar_agents.run.checkpoint import CheckpointError  # noqa: E402

RANDOM, EXPERT, NOISY = (f"maxatar/Breakout/{tier}-v0" for tier in ("random", "expert", "noisy"))


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        path = tmp_path_factory.mktemp("minari")
        patch.setenv("MINARI_DATASETS_PATH", str(path))
        yield path


@pytest.fixture(scope="module")
def made(root):
    """Three small datasets: 12 random episodes from 4 environments, 3 expert ones, noisy ones of >= 200 steps."""
    return {
        RANDOM: datasets.make_dataset(RANDOM, episodes=12, seed=3, num_envs=4),
        EXPERT: datasets.make_dataset(EXPERT, episodes=3, seed=5),
        NOISY: datasets.make_dataset(NOISY, steps=200, seed=7, num_envs=8),
    }


def episodes_of(dataset):
    meta = list(dataset.storage.get_episode_metadata(range(dataset.total_episodes)))
    return [
        collector.Episode(
            e.observations, e.actions, e.rewards, e.terminations, e.truncations, m["env_index"], m["episode_number"]
        )  # fmt: skip
        for e, m in zip(dataset.iterate_episodes(), meta, strict=True)
    ]


def test_datasets_load_through_minari_with_their_spaces_counts_scores_and_digest(made):
    env = gymnasium.make("maxatar/Breakout-v0")
    for dataset_id in made:
        loaded = minari.load_dataset(dataset_id)
        assert loaded.observation_space == env.observation_space and loaded.action_space == env.action_space
        info = loaded.storage.metadata["maxatar"]
        episodes = episodes_of(loaded)
        assert info["episodes_digest"] == datasets.digest(episodes)
        assert all(len(e.observations) == len(e.actions) + 1 for e in episodes)  # the final observation kept
        assert all(e.terminations[-1] != e.truncations[-1] and not e.terminations[:-1].any() for e in episodes)
        assert info["setting"]["max_episode_steps"] == datasets.TIME_LIMIT and info["version"]
        assert loaded.storage.metadata["requirements"] == [f"maxatar>={info['version']}"]
        returns = datasets.returns_of(episodes)
        assert info["return_mean"] == pytest.approx(returns.mean())
        normalised = minari.get_normalized_score(loaded, returns)
        assert info["tq"] == pytest.approx(normalised.mean(), abs=1e-6)
        assert 0 < info["saco"] <= 1 and info["state_action_pairs"] <= loaded.total_steps
    assert made[RANDOM].total_episodes == 12 and made[EXPERT].total_episodes == 3
    assert made[NOISY].total_steps >= 200 and made[NOISY].total_steps - 200 < max(
        len(e.actions) for e in episodes_of(made[NOISY])
    )
    ref_min, ref_max = made[RANDOM].storage.metadata["ref_min_score"], made[RANDOM].storage.metadata["ref_max_score"]
    assert ref_min < 2 < 40 < ref_max  # a random Breakout player scores about 0.5, the expert about 70
    expert = made[EXPERT].storage.metadata["maxatar"]
    assert expert["tq"] > 0.5 > made[RANDOM].storage.metadata["maxatar"]["tq"]


def test_a_random_dataset_takes_under_100_bytes_a_transition_and_reads_back_whole(tmp_path, monkeypatch):
    """Random Breakout episodes last ~11 steps, so their HDF5 objects, not their data, set the size: the writer
    hard-links repeated arrays and trims the datasets' headers (issue 65: at most 100 bytes a transition)."""
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
    dataset = datasets.make_dataset(RANDOM, episodes=1000, seed=3, num_envs=4)
    files = [f for f in dataset.storage.data_path.parent.rglob("*") if f.is_file()]  # data and metadata
    assert sum(f.stat().st_size for f in files) / dataset.total_steps < 100
    assert dataset.storage.metadata["maxatar"]["episodes_digest"] == datasets.digest(episodes_of(dataset))


def test_the_same_command_and_seed_make_the_same_data(made):
    again = datasets.make_dataset(RANDOM, episodes=12, seed=3, num_envs=4, force=True)
    assert (
        again.storage.metadata["maxatar"]["episodes_digest"]
        == made[RANDOM].storage.metadata["maxatar"]["episodes_digest"]
    )
    other = collector.collect(*maxatar.make("maxatar/Breakout-v0", max_steps=10_000), _random_act(), 4, 4, 12)
    assert datasets.digest(other) != again.storage.metadata["maxatar"]["episodes_digest"]


def _random_act():
    env, _ = maxatar.make("maxatar/Breakout-v0")
    return datasets.tier_policy(datasets.DatasetId("Breakout", "random"), env)[0]


@pytest.mark.parametrize("dataset_id", [RANDOM, EXPERT, NOISY])
def test_collected_episodes_are_gymnasium_make_rollouts_of_the_same_seeds(made, dataset_id):
    dataset = minari.load_dataset(dataset_id)
    info = dataset.storage.metadata["maxatar"]
    env_kwargs = {"setting": "minatar", "max_steps": info["setting"]["max_episode_steps"]}
    pure_env, _ = maxatar.make("maxatar/Breakout-v0", **env_kwargs)
    act, _ = datasets.tier_policy(datasets.DatasetId.parse(dataset_id), pure_env)
    # The expert's episodes last thousands of steps: its first episode's first 300 steps make the point.
    episodes = episodes_of(dataset)
    chosen, steps = ([*episodes[:2], *episodes[-2:]], None) if dataset_id != EXPERT else (episodes[:1], 300)
    for episode in chosen:
        seed = info["seed"] + episode.env_index
        env = gymnasium.make("maxatar/Breakout-v0", **env_kwargs)
        obs, _ = env.reset(seed=seed)
        calls = 1
        for _ in range(episode.number):  # the environment's earlier episodes, then the recorded one
            done = False
            while not done:
                obs, _, terminated, truncated, _ = env.step(_action(act, obs, seed, calls, episode.env_index))
                calls, done = calls + 1, terminated or truncated
            obs, _ = env.reset()
            calls += 1
        played = [obs]
        for step, action in enumerate(episode.actions[:steps]):
            assert _action(act, obs, seed, calls, episode.env_index) == action
            obs, reward, terminated, truncated, _ = env.step(int(action))
            calls += 1
            played.append(obs)
            assert (reward, terminated, truncated) == (
                episode.rewards[step],
                episode.terminations[step],
                episode.truncations[step],
            )
        np.testing.assert_array_equal(np.stack(played), episode.observations[: len(played)])


def _action(act, obs, seed, call, env_index) -> int:
    uniforms = np.asarray(collector.policy_row(seed, call))[None]
    return int(act(np.asarray(obs)[None], uniforms, np.array([env_index]))[0])


def test_recovered_environment_is_the_datasets_and_plays(made):
    env = made[RANDOM].recover_environment()
    assert env.unwrapped.params.max_steps == datasets.TIME_LIMIT
    assert np.isclose(env.unwrapped.params.sticky_action_prob, 0.1)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert len(env.step(env.action_space.sample())) == 5


def test_a_gymnax_setting_dataset_recovers_gymnax_s_environment(root):
    """gymnax's setting: no sticky actions, the minimal action set (the expert, trained on the full set, plays it
    with the other actions as no-ops), gymnax's time limit."""
    dataset = datasets.make_dataset("maxatar/Breakout/expert-v0", episodes=2, setting="gymnax", force=True)
    setting = dataset.storage.metadata["maxatar"]["setting"]
    assert setting["action_set"] == ["noop", "left", "right"] and setting["max_episode_steps"] == 1000
    env = dataset.recover_environment()
    assert env.action_space == gymnasium.spaces.Discrete(3) == dataset.action_space
    assert env.unwrapped.params.sticky_action_prob == 0 and env.unwrapped.params.max_steps == 1000
    assert dataset.storage.metadata["ref_max_score"] > 20  # the expert plays the minimal set well
    datasets.make_dataset(EXPERT, episodes=3, seed=5, force=True)  # the module's own again


def test_the_loader_gives_device_arrays_with_episode_boundaries(made):
    transitions = command.load(RANDOM)
    dataset = made[RANDOM]
    assert transitions.num_steps == dataset.total_steps
    assert transitions.observation.shape == (dataset.total_steps, 10, 10, 4) and transitions.observation.dtype == bool
    ends = np.asarray(transitions.terminated | transitions.truncated)
    assert ends.sum() == dataset.total_episodes and ends[-1]
    first = next(iter(dataset.iterate_episodes()))
    np.testing.assert_array_equal(transitions.next_observation[: len(first.actions)], first.observations[1:])


def test_minaris_command_line_lists_and_shows_them(made, root):
    env = {**os.environ, "MINARI_DATASETS_PATH": str(root), "COLUMNS": "200"}  # rich wraps a narrower table
    minari_cli = [sys.executable, "-c", "from minari.cli import app; app()"]
    listed = subprocess.run([*minari_cli, "list", "local"], env=env, capture_output=True, text=True, check=True)
    assert all(dataset_id in listed.stdout for dataset_id in made)
    shown = subprocess.run([*minari_cli, "show", RANDOM], env=env, capture_output=True, text=True, check=True)
    assert "maxatar/Breakout-v0" in shown.stdout and "12" in shown.stdout


@pytest.mark.parametrize(
    ("dataset_id", "message"),
    [
        ("maxatar/Pong/expert-v0", "dataset_id's game must be one of"),
        ("maxatar/Breakout/replay-v0", "dataset_id's tier must be one of"),
        ("Breakout-expert", "dataset_id must be maxatar/<Game>/<tier>-v0"),
    ],
)
def test_unknown_games_and_tiers_are_refused(root, dataset_id, message):
    with pytest.raises(InputError, match=message):
        datasets.make_dataset(dataset_id, episodes=1)


def test_a_policy_file_that_is_not_one_is_refused(root, tmp_path):
    bogus = tmp_path / "policy.npz"
    bogus.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError):
        datasets.make_dataset(EXPERT.replace("expert", "medium"), episodes=1, policy=str(bogus))
    assert not (root / "maxatar/Breakout/medium-v0").exists()


def test_a_full_disk_mid_write_leaves_no_dataset(root, monkeypatch):
    real = datasets._write_episodes

    def full_disk(path, episodes):
        real(path, episodes[:1])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(datasets, "_write_episodes", full_disk)
    with pytest.raises(OSError, match="could not write dataset maxatar/Breakout/mixed-v0 .No space left on device"):
        datasets.make_dataset("maxatar/Breakout/mixed-v0", episodes=2)
    assert not (root / "maxatar/Breakout/mixed-v0").exists()
    assert not [p for p in root.iterdir() if p.name.startswith(".")]  # no scratch directory either


def test_play_record_saves_a_persons_episodes_as_the_human_dataset(root, made, monkeypatch, capsys):
    pygame = pytest.importorskip("pygame")
    from renderers.cli import main as renderers_main
    from renderers.window import Window

    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    presses = iter([pygame.event.Event(pygame.KEYDOWN, key=k)] for k in [pygame.K_LEFT, pygame.K_RIGHT] * 1000)
    monkeypatch.setattr(Window, "events", lambda self: next(presses))
    args = ["play", "--env", "maxatar/Breakout-v0", "--record", "--fps", "60", "--steps", "120", "--seed", "4"]
    assert renderers_main(args) == 0
    assert "wrote maxatar/Breakout/human-v0" in capsys.readouterr().out
    dataset = minari.load_dataset("maxatar/Breakout/human-v0")
    info = dataset.storage.metadata["maxatar"]
    assert info["tier"] == "human" and info["seed"] == 4 and "person" in info["policy"]["name"]
    assert info["episodes_digest"] == datasets.digest(episodes_of(dataset))
    assert dataset.storage.metadata["ref_max_score"] == made[RANDOM].storage.metadata["ref_max_score"]
    assert dataset.total_episodes >= 1 and dataset.total_steps <= 120
    with pytest.raises(SystemExit):  # it is there now: --force replaces it
        renderers_main(args)
    assert "exists" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        renderers_main(["play", "--env", "maxatar/CartPole-v1", "--record"])
    assert "the datasets are of the MinAtar games" in capsys.readouterr().err


def test_the_command_line_makes_datasets_and_refuses_bad_ones_in_one_line(root, made, capsys):
    with pytest.raises(SystemExit) as stop:
        datasets.main([RANDOM, "--episodes", "12", "--seed", "3", "--envs", "4"])
    assert stop.value.code == 2 and "exists" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        datasets.main(["maxatar/Breakout/random-v0", "maxatar/Pong/random-v0", "--episodes", "2"])
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dataset_id's game must be one of" in err
    datasets.main([RANDOM, "--episodes", "12", "--seed", "3", "--envs", "4", "--force"])
    assert "wrote maxatar/Breakout/random-v0: 12 episodes" in capsys.readouterr().out


def test_the_shipped_medium_policies_score_about_a_third_to_a_half_of_the_experts():
    shipped = sorted(datasets.MEDIUM_DIR.iterdir())
    assert shipped
    for directory in shipped:
        record = checkpoint.read_meta(directory)["record"]
        expert = checkpoint.read_meta(checkpoint.pretrained_path(directory.name))["record"]
        assert record["expert_greedy_return"] == expert["greedy_return"] and record["greedy_episodes"] == 100
        assert 0.25 <= record["greedy_return"] / expert["greedy_return"] <= 0.6, directory.name
