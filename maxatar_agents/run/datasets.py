"""Offline datasets of the five MinAtar games in Minari's format: made (`make`), written (`write`) and read back
as device arrays (`load`).

A dataset's id is `maxatar/<Game>/<tier>-v0` (Minari's namespace/environment/dataset naming), its tier one of

* `random`: uniformly random actions;
* `expert`: the package's pretrained policy (`load_policy("pretrained:maxatar/<Game>-v0")`), greedy;
* `medium`: the expert's own training run stopped part-way, at about a third to a half of the expert's return
  (shipped beside it, `maxatar_agents/pretrained/medium/<Game>-v0/`, made by `python -m lab.medium`);
* `mixed`: medium on the even environments, expert on the odd ones;
* `noisy`: the expert with ε-greedy actions (ε = 0.2 unless given);
* `human`: a person's play, recorded by `python -m renderers play --record` (`write_human`).

Each is played in MinAtar's setting (sticky actions 0.1, the full action set) or gymnax's (no sticky actions,
the minimal action set, gymnax's time limits) by the vmapped collector (`run.collector`); MinAtar's setting has
no time limit, so its datasets cut an episode at `TIME_LIMIT` steps (a truncation), and the environment
`recover_environment()` gives has the same limit. A trained policy, trained with the full action set, plays the
minimal set with the actions outside it as no-ops, which is what those actions do in the full set.

The metadata hold, besides Minari's own (`ref_min_score`: the random policy's mean return and
`ref_max_score`: the expert's, over `REFERENCE_EPISODES` episodes each, so that `minari.get_normalized_score`
works; `requirements` naming this package), a `maxatar` entry: the tier, the policy, the setting, the seed, the
package version, the digest of the episodes, and the trajectory quality (TQ) and state-action coverage (SACo) of
Schweighofer et al. 2022 (`quality`).

An offline run reads its `--dataset` through `for_config`: checked against the environment it is evaluated in,
with the identity its checkpoint records (so that `--resume` refuses another dataset).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import importlib.metadata
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from maxatar.checks import InputError, check_choice, check_size
from maxatar.extras import require
from maxatar.registry import MINATAR_GAMES, make
from maxatar_agents.algorithms.config import env_from_config
from maxatar_agents.algorithms.offline import OfflineConfig, Transitions
from maxatar_agents.run import collector
from maxatar_agents.run.checkpoint import PRETRAINED_DIR, PRETRAINED_PREFIX, CheckpointError

NAMESPACE = "maxatar"
GAMES = tuple(name.removesuffix("-v0") for name in MINATAR_GAMES)
TIERS = ("random", "medium", "expert", "mixed", "noisy")
HUMAN = "human"
SETTINGS = ("minatar", "gymnax")
TIME_LIMIT = 10_000  # steps of an episode in a setting with none (the agents' evaluation cap, eval_max_steps)
REFERENCE_EPISODES = 100
REFERENCE_SEED = 2**40  # the reference scores' episodes: apart from every dataset's own seeds
EPSILON = 0.2  # the noisy tier's chance of a random action
NUM_ENVS = 1024
DEFAULT_STEPS = 1_000_000
MEDIUM_DIR = PRETRAINED_DIR / "medium"
OBS_DEFLATE = 1  # the observations' gzip level: booleans, mostly False, ~10x smaller; higher levels gain little
_ID = re.compile(rf"{NAMESPACE}/(?P<game>[A-Za-z]+)/(?P<tier>[a-z]+)-v(?P<version>0)")


@dataclasses.dataclass(frozen=True)
class DatasetId:
    game: str
    tier: str

    @classmethod
    def parse(cls, dataset_id: str, tiers: Sequence[str] = TIERS) -> DatasetId:
        """`maxatar/<Game>/<tier>-v0`, checked: an InputError naming `dataset_id` and what it accepts."""
        match = _ID.fullmatch(dataset_id) if isinstance(dataset_id, str) else None
        if match is None:
            raise InputError(f"dataset_id must be {NAMESPACE}/<Game>/<tier>-v0, got {dataset_id!r}")
        check_choice("dataset_id's game", match["game"], GAMES)
        check_choice("dataset_id's tier", match["tier"], tiers)
        return cls(match["game"], match["tier"])

    def __str__(self) -> str:
        return f"{NAMESPACE}/{self.game}/{self.tier}-v0"

    @property
    def env_id(self) -> str:
        return f"{NAMESPACE}/{self.game}-v0"


def env_kwargs(game: str, setting: str) -> dict[str, Any]:
    """The `maxatar.make` / `gymnasium.make` keywords of a dataset's environment: the setting, with
    `TIME_LIMIT` where the setting has no time limit of its own."""
    check_choice("setting", setting, SETTINGS)
    _, params = make(f"{NAMESPACE}/{game}-v0", setting=setting)
    return {"setting": setting, "max_steps": int(params.max_steps) or TIME_LIMIT}


def setting_record(game: str, setting: str) -> dict[str, Any]:
    """What the metadata say of the setting: sticky probability, action set, time limit."""
    env, params = make(f"{NAMESPACE}/{game}-v0", **env_kwargs(game, setting))
    return {
        "name": setting,
        "sticky_action_prob": round(float(params.sticky_action_prob), 6),
        "full_action_space": len(env.action_set) == env.num_game_actions,
        "action_set": [env.action_names[a] for a in env.action_set],
        "difficulty_ramping": bool(params.difficulty_ramping),
        "max_episode_steps": int(params.max_steps),
    }


# --- policies: act(obs (N, ...), uniforms (N, 2), env_index (N,)) -> actions (N,) ---


def _random(num_actions: int, obs, uniforms, index):
    return jnp.minimum(jnp.floor(uniforms[:, 1] * num_actions), num_actions - 1).astype(jnp.int32)


def _greedy(action_map, policy, obs, uniforms, index):
    return action_map[policy(None, obs)]


def _epsilon(epsilon, num_actions: int, action_map, policy, obs, uniforms, index):
    greedy = _greedy(action_map, policy, obs, uniforms, index)
    return jnp.where(uniforms[:, 0] < epsilon, _random(num_actions, obs, uniforms, index), greedy)


def _alternate(even_map, even, odd_map, odd, obs, uniforms, index):
    return jnp.where(index % 2 == 0, even_map[even(None, obs)], odd_map[odd(None, obs)])


def trained(path: str | Path, env_id: str, env) -> tuple[jax.Array, Any]:
    """A trained policy (a checkpoint or `pretrained:<id>`) of `env_id` for `env`: (the map from its full action
    set to `env`'s actions, its act function). A file that is not such a checkpoint is a CheckpointError."""
    from maxatar_agents.run.policies import load_policy, policy_env_kwargs

    trained_id, act = load_policy(path)
    if trained_id != env_id:
        raise CheckpointError(f"policy {path} was trained on {trained_id}, not {env_id}")
    trained_kwargs = policy_env_kwargs(path)
    if trained_kwargs.get("setting") != "minatar" or trained_kwargs.get("obs_type") is not None:
        raise CheckpointError(f"policy {path} was not trained in MinAtar's setting on the grid observations")
    full, _ = make(env_id)
    idle = env.action_set.index(env.looks.idle_action)
    action_map = [env.action_set.index(a) if a in env.action_set else idle for a in full.action_set]
    return jnp.asarray(action_map, jnp.int32), act


def policy_path(game: str, level: str) -> str:
    """The shipped policy of a level, `expert` or `medium`."""
    if level == "expert":
        return f"{PRETRAINED_PREFIX}{NAMESPACE}/{game}-v0"
    if not (MEDIUM_DIR / f"{game}-v0").is_dir():
        shipped = sorted(d.name.removesuffix("-v0") for d in MEDIUM_DIR.iterdir()) if MEDIUM_DIR.is_dir() else []
        raise InputError(
            f"dataset_id's tier: no medium policy is shipped for {game} (shipped: {', '.join(shipped) or 'none'}); "
            "policy= (--policy) names one"
        )
    return str(MEDIUM_DIR / f"{game}-v0")


def tier_policy(ids: DatasetId, env, epsilon: float = EPSILON, policy: str | None = None):
    """The tier's act function and what the metadata say of it; `policy` replaces its trained policy."""
    n = env.num_actions
    if ids.tier == "random":
        return jax.tree_util.Partial(functools.partial(_random, n)), {"name": "uniformly random actions"}
    if ids.tier == "mixed":
        medium, expert = policy or policy_path(ids.game, "medium"), policy_path(ids.game, "expert")
        maps = trained(medium, ids.env_id, env), trained(expert, ids.env_id, env)
        act = jax.tree_util.Partial(_alternate, maps[0][0], maps[0][1], maps[1][0], maps[1][1])
        return act, {"name": "medium on even environments, expert on odd ones", "medium": medium, "expert": expert}
    path = policy or policy_path(ids.game, "medium" if ids.tier == "medium" else "expert")
    action_map, act = trained(path, ids.env_id, env)
    if ids.tier == "noisy":
        partial = jax.tree_util.Partial(functools.partial(_epsilon, epsilon, n), action_map, act)
        return partial, {"name": f"epsilon-greedy, epsilon {epsilon:g}", "policy": path, "epsilon": epsilon}
    return jax.tree_util.Partial(_greedy, action_map, act), {"name": "greedy", "policy": path}


# --- statistics ---


def returns_of(episodes) -> np.ndarray:
    return np.array([float(np.sum(e.rewards, dtype=np.float64)) for e in episodes])


def digest(episodes) -> str:
    """sha256 of the episodes' arrays in order (observations as bytes of booleans, actions as int64, rewards as
    float32, the flags as booleans): what the metadata record and a reader can recompute."""
    h = hashlib.sha256()
    for e in episodes:
        for array, dtype in (
            (e.observations, bool),
            (e.actions, np.int64),
            (e.rewards, np.float32),
            (e.terminations, bool),
            (e.truncations, bool),
        ):
            h.update(np.ascontiguousarray(array, dtype).tobytes())
    return h.hexdigest()


def quality(episodes, returns: np.ndarray, ref_min: float, ref_max: float) -> dict[str, float]:
    """Schweighofer et al. (2022), "A Dataset Perspective on Offline Reinforcement Learning": TQ, the mean
    episode return normalised by the random (0) and the expert (1) policy's, and SACo, the number of distinct
    (state, action) pairs; they divide SACo by a replay dataset's count, and for lack of one here it is divided
    by the number of transitions (the most a dataset of that size can hold), with the count kept beside it.
    `returns`: the episodes' returns (`returns_of`), which the caller records too."""
    tq = (float(np.mean(returns)) - ref_min) / (ref_max - ref_min)
    pairs = set()
    for e in episodes:
        packed = np.packbits(e.observations[:-1].reshape(len(e.actions), -1), axis=1)
        keyed = np.concatenate([packed, e.actions.astype(np.uint8)[:, None]], axis=1)
        pairs.update(row.tobytes() for row in keyed)
    steps = sum(len(e.actions) for e in episodes)
    return {"tq": tq, "saco": len(pairs) / steps, "state_action_pairs": len(pairs)}


@functools.cache
def reference_scores(game: str, setting: str) -> tuple[float, float]:
    """The random and the expert policy's mean returns over `REFERENCE_EPISODES` episodes."""
    env, params = make(f"{NAMESPACE}/{game}-v0", **env_kwargs(game, setting))
    scores = []
    for tier in ("random", "expert"):
        act, _ = tier_policy(DatasetId(game, tier), env)
        played = collector.collect(env, params, act, REFERENCE_SEED, REFERENCE_EPISODES, REFERENCE_EPISODES)
        scores.append(float(np.mean(returns_of(played))))
    return scores[0], scores[1]


# --- writing ---


def datasets_root() -> Path:
    from minari.storage import get_dataset_path

    return Path(get_dataset_path())


@contextlib.contextmanager
def _minari_root(path: Path) -> Iterator[None]:
    """Minari writes under $MINARI_DATASETS_PATH: pointed at `path` for the duration."""
    before = os.environ.get("MINARI_DATASETS_PATH")
    os.environ["MINARI_DATASETS_PATH"] = str(path)
    try:
        yield
    finally:
        if before is None:
            del os.environ["MINARI_DATASETS_PATH"]
        else:
            os.environ["MINARI_DATASETS_PATH"] = before


def check_free(ids: DatasetId, force: bool) -> None:
    if (datasets_root() / str(ids)).exists() and not force:
        raise InputError(f"dataset_id {str(ids)!r} exists in {datasets_root()}; force=True (--force) replaces it")


def write(ids: DatasetId, episodes: list[collector.Episode], setting: str, info: dict, force: bool = False):
    """The Minari dataset `ids` of `episodes`, with their metadata: written whole into a hidden temporary
    directory under the datasets root and renamed into place, so that an error (a full disk) leaves nothing."""
    require("offline", "minari")
    import gymnasium
    import minari

    check_free(ids, force)
    if not episodes:
        raise InputError("a dataset needs at least one episode")
    ref_min, ref_max = reference_scores(ids.game, setting)
    returns = returns_of(episodes)
    info = {
        "tier": ids.tier,
        **info,
        "setting": setting_record(ids.game, setting),
        "version": importlib.metadata.version("maxatar"),
        "episodes_digest": digest(episodes),
        **quality(episodes, returns, ref_min, ref_max),
        "return_mean": float(np.mean(returns)),
    }
    root = datasets_root()
    scratch = Path(tempfile.mkdtemp(prefix=".maxatar-", dir=root))
    try:
        with _minari_root(scratch), _quiet():
            env = gymnasium.make(ids.env_id, **env_kwargs(ids.game, setting))
            dataset = minari.create_dataset_from_buffers(
                str(ids),
                [],
                env=env,
                algorithm_name=f"maxatar_agents.datasets: {ids.tier}",
                author="The MaxAtar authors",
                ref_min_score=ref_min,
                ref_max_score=ref_max,
                num_episodes_average_score=REFERENCE_EPISODES,
                description=describe(ids, info),
                data_format="hdf5",
                requirements=[f"maxatar>={info['version']}"],
            )
            steps = _write_episodes(dataset.storage.data_path / "main_data.hdf5", episodes)
            dataset.storage.update_metadata({"total_episodes": len(episodes), "total_steps": steps, "maxatar": info})
            dataset.storage.update_metadata({"dataset_size": dataset.storage.get_size()})
        _move_into_place(scratch / str(ids), root, ids)
    except OSError as error:
        raise OSError(
            error.errno, f"could not write dataset {ids} ({error.strerror or error}); nothing was left in {root}"
        ) from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return minari.load_dataset(str(ids))


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Minari warns about the metadata left as None: the evaluation environment (the same one), and a code
    link and author email, which the package has none of (its version is in the metadata)."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*(eval_env|code_permalink|author_email).*", category=UserWarning)
        yield


_STEP_ARRAYS = (("actions", np.int64), ("rewards", np.float32), ("terminations", bool), ("truncations", bool))


def _write_episodes(path: Path, episodes: list[collector.Episode]) -> int:
    """The episodes in Minari's HDF5 layout, what `HDF5Storage` reads: a group `episode_<i>` per episode, with
    Minari's attributes (`id`, `total_steps`, `seed`) and ours (`env_index`, `episode_number`), holding a dataset
    per array. A random Breakout episode lasts ~11 steps, so its HDF5 objects outweigh its data; they are kept
    few, small and quick to make:

    * an array equal to an earlier episode's (rewards, terminations and truncations mostly are: they depend on
      little but the length) is a hard link to that dataset, which reads as any other;
    * the datasets' headers keep no room for attributes (`_no_room_for_attributes`), and the objects use
      HDF5's latest formats and no timestamps (as h5py's own calls);
    * h5py's low-level calls, with the types and property lists made once (its high-level ones take 3x the
      time);
    * the observations are compressed (Minari's own writer stores them raw: 400 bytes a step for Breakout).
    """
    import h5py
    from h5py import h5a, h5d, h5g, h5p, h5s, h5t

    types = {dtype: h5t.py_create(np.dtype(dtype), logical=True) for dtype in (np.bool_, np.int64, np.float32)}
    group_plist, plain, compressed = (h5p.create(kind) for kind in (h5p.GROUP_CREATE, *[h5p.DATASET_CREATE] * 2))
    for plist in (group_plist, plain, compressed):
        plist.set_obj_track_times(False)
    compressed.set_deflate(OBS_DEFLATE)
    scalar = h5s.create(h5s.SCALAR)
    stored: dict[tuple[str, bytes], bytes] = {}  # an array's name and bytes: the path of the dataset holding them
    steps = 0

    def dataset(group, name: str, array: np.ndarray, plist) -> None:
        hdf5_type = types[array.dtype.type]
        made = h5d.create(group, name.encode(), hdf5_type, h5s.create_simple(array.shape), dcpl=plist)
        made.write(h5s.ALL, h5s.ALL, array, mtype=hdf5_type)

    with h5py.File(path, "w", libver="latest") as file:
        _no_room_for_attributes(file)
        for number, e in enumerate(episodes):
            name = f"episode_{number}"
            group = h5g.create(file.id, name.encode(), gcpl=group_plist)
            attributes = {"id": number, "total_steps": len(e.actions), "env_index": e.env_index}
            attributes |= {"episode_number": e.number} | ({} if e.seed is None else {"seed": e.seed})
            for key, value in attributes.items():
                attribute = h5a.create(group, key.encode(), types[np.int64], scalar)
                attribute.write(np.array(value, np.int64), mtype=types[np.int64])
            observations = np.ascontiguousarray(e.observations, bool)
            compressed.set_chunk(observations.shape)
            dataset(group, "observations", observations, compressed)
            for key, dtype in _STEP_ARRAYS:
                array = np.ascontiguousarray(getattr(e, key), dtype)
                content = (key, array.tobytes())
                if content in stored:
                    group.links.create_hard(key.encode(), file.id, stored[content])
                else:
                    dataset(group, key, array, plain)
                    stored[content] = f"{name}/{key}".encode()
            steps += len(e.actions)
    return steps


def _no_room_for_attributes(file) -> None:
    """HDF5 gives a dataset's header room for attributes, 256 bytes at least, unless the file is told not to
    (`H5Fset_dset_no_attrs_hint`, which h5py does not wrap): the episodes' datasets have none, and the room
    would be a fifth of a random Breakout dataset. The call goes to the HDF5 library h5py is linked to; where
    it cannot be looked up through h5py's extension module, the headers keep their room."""
    import ctypes

    import h5py

    try:
        hint = getattr(ctypes.CDLL(h5py.h5f.__file__), "H5Fset_dset_no_attrs_hint", None)
    except OSError:  # an extension module the platform's loader will not open by path
        hint = None
    if hint is not None:
        hint.argtypes, hint.restype = (ctypes.c_int64, ctypes.c_bool), ctypes.c_int
        if hint(file.id.id, True) < 0:
            raise OSError(f"HDF5 refused H5Fset_dset_no_attrs_hint on {file.filename}")


def _move_into_place(made: Path, root: Path, ids: DatasetId) -> None:
    import minari

    namespace = f"{NAMESPACE}/{ids.game}"
    if namespace not in minari.namespace.list_local_namespaces():
        minari.namespace.create_namespace(namespace)
    target = root / str(ids)
    if target.exists():  # --force: the old one leaves with the scratch directory
        os.replace(target, made.parent / ".replaced")
    os.replace(made, target)


def describe(ids: DatasetId, info: dict) -> str:
    policy = info["policy"]["name"]
    setting = info["setting"]
    return (
        f"MinAtar {ids.game}, {ids.tier} tier ({policy}), made by maxatar_agents.datasets {info['version']} in "
        f"the {setting['name']} setting (sticky actions {setting['sticky_action_prob']:g}, "
        f"{len(setting['action_set'])} actions, episodes cut at {setting['max_episode_steps']} steps), seed "
        f"{info.get('seed')}. An episode's env_index j and episode_number k (its attributes): it is the k-th "
        f"episode of gymnasium.make('{ids.env_id}', setting='{setting['name']}', "
        f"max_steps={setting['max_episode_steps']}) after reset(seed=seed + j), reset() between episodes."
    )


# --- making ---


def make_dataset(
    dataset_id: str,
    episodes: int | None = None,
    steps: int | None = None,
    seed: int = 0,
    setting: str = "minatar",
    epsilon: float = EPSILON,
    num_envs: int = NUM_ENVS,
    policy: str | None = None,
    force: bool = False,
):
    """Make and write the dataset `dataset_id` (`maxatar/<Game>/<tier>-v0`): `episodes` episodes, or the fewest
    whole episodes of at least `steps` steps (`DEFAULT_STEPS` if neither), from `seed`; returns the
    `minari.MinariDataset`. Every argument is checked before anything is played."""
    require("offline", "minari")
    ids = DatasetId.parse(dataset_id)
    if episodes is not None and steps is not None:
        raise InputError("give episodes or steps, not both")
    if episodes is None and steps is None:
        steps = DEFAULT_STEPS
    if episodes is not None:
        check_size("episodes", episodes)
    else:
        check_size("steps", steps)
    check_size("num_envs", num_envs)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**62:
        raise InputError(f"seed must be a whole number in 0 .. 2**62 - 1, got {seed!r}")
    if not (isinstance(epsilon, (int, float)) and 0 <= epsilon <= 1):
        raise InputError(f"epsilon must be a probability in [0, 1], got {epsilon!r}")
    if policy is not None and ids.tier == "random":
        raise InputError("policy does not apply to the random tier")
    env, params = make(ids.env_id, **env_kwargs(ids.game, setting))
    check_free(ids, force)
    act, described = tier_policy(ids, env, epsilon, policy)
    num_envs = min(num_envs, episodes) if episodes is not None else num_envs
    played = collector.collect(env, params, act, seed, num_envs, episodes, steps)
    played = [e._replace(seed=seed + e.env_index if e.number == 0 else None) for e in played]
    info = {"policy": described, "seed": seed, "num_envs": num_envs}
    return write(ids, played, setting, info, force)


def write_human(game: str, setting: str, episodes: list[dict], seed: int, force: bool = False):
    """A person's recorded episodes (dicts of `collector.Episode`'s arrays, from `renderers.record`) as
    `maxatar/<Game>/human-v0`, with the other tiers' metadata."""
    ids = DatasetId.parse(f"{NAMESPACE}/{game}/{HUMAN}-v0", (HUMAN,))
    played = [collector.Episode(**e, env_index=0, number=k) for k, e in enumerate(episodes)]
    info = {"policy": {"name": "a person at the keyboard (python -m renderers play --record)"}, "seed": seed}
    return write(ids, played, setting, info, force)


# --- reading ---


# The returns a Minari dataset's scores are normalised by (`minari.get_normalized_score`: random play 0, the
# expert 1), which an offline run records with its dataset.
REFERENCE_SCORES = ("ref_min_score", "ref_max_score")


class DatasetError(ValueError):
    """An offline run's `--dataset` that cannot be used: not there, empty, or made for another environment."""


def load(dataset_id: str) -> Transitions:
    """The steps of the local Minari dataset `dataset_id` (e.g. "maxatar/Breakout/expert-v0") as device arrays,
    episode after episode; a dataset that is not there is Minari's own error, naming it."""
    require("offline", "minari")
    import minari

    return _transitions(minari.load_dataset(dataset_id))


def _transitions(dataset: Any) -> Transitions:
    parts: dict[str, list[np.ndarray]] = {field: [] for field in Transitions._fields}
    for episode in dataset.iterate_episodes():
        observations = np.asarray(episode.observations)
        parts["observation"].append(observations[:-1])
        parts["next_observation"].append(observations[1:])
        parts["action"].append(np.asarray(episode.actions, np.int32))
        parts["reward"].append(np.asarray(episode.rewards, np.float32))
        parts["terminated"].append(np.asarray(episode.terminations, bool))
        parts["truncated"].append(np.asarray(episode.truncations, bool))
    if not parts["action"]:
        raise ValueError(f"dataset {dataset.id!r} has no episodes")
    return Transitions(**{field: jnp.asarray(np.concatenate(rows)) for field, rows in parts.items()})


def inputs_for(config: Any) -> tuple[Transitions, ...]:
    """What a run's program takes after `t0` in each interval: an offline config's dataset (`for_config`),
    nothing for any other agent's."""
    return (for_config(config)[0],) if isinstance(config, OfflineConfig) else ()


def for_config(config: OfflineConfig) -> tuple[Transitions, dict[str, Any]]:
    """The transitions of `config.dataset` and its identity ({"id", "steps", "sha256"}: the digest of every
    array; and its `REFERENCE_SCORES`, None where it has none), after checking that the dataset was made for
    the config's environment (its recorded environment id, observation shape and dtype, and number of
    actions); every refusal is a `DatasetError` naming --dataset."""
    require("offline", "minari")
    import minari

    name = f"--dataset {config.dataset!r}"
    try:
        dataset = minari.load_dataset(config.dataset)
        data = _transitions(dataset)
    except (OSError, ValueError, KeyError) as error:
        raise DatasetError(f"{name}: {error}") from None
    env, _ = env_from_config(config)
    recorded = getattr(dataset.spec.env_spec, "id", None)
    if recorded is not None and recorded != config.env_id:
        raise DatasetError(f"{name} was made for {recorded}, not --env {config.env_id}")
    shape, dtype = data.observation.shape[1:], data.observation.dtype
    if shape != tuple(env.obs_shape) or dtype != np.dtype(env.obs_dtype):
        raise DatasetError(
            f"{name} holds observations of shape {shape} ({dtype}), --env {config.env_id}'s are "
            f"{tuple(env.obs_shape)} ({np.dtype(env.obs_dtype)})"
        )
    actions = getattr(dataset.action_space, "n", None)
    if actions != env.num_actions:
        raise DatasetError(f"{name} has {actions} actions, --env {config.env_id} has {env.num_actions}")
    digest = hashlib.sha256()
    for column in jax.device_get(tuple(data)):
        digest.update(np.ascontiguousarray(column).tobytes())
    refs = {name: dataset.storage.metadata.get(name) for name in REFERENCE_SCORES}
    refs = {name: None if value is None else float(value) for name, value in refs.items()}
    return data, {"id": config.dataset, "steps": data.num_steps, "sha256": digest.hexdigest(), **refs}


# --- command line ---


def main(argv: list[str] | None = None) -> None:
    """`python -m maxatar_agents.datasets ID [ID ...] [--episodes N | --steps N] [--seed S] [--setting ...]`."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m maxatar_agents.datasets",
        description="Make offline datasets of the MinAtar games in Minari's format (maxatar/<Game>/<tier>-v0; "
        f"games: {', '.join(GAMES)}; tiers: {', '.join(TIERS)}) under Minari's datasets root "
        "($MINARI_DATASETS_PATH, or ~/.minari/datasets).",
    )
    parser.add_argument("ids", nargs="+", metavar="ID", help="dataset ids, e.g. maxatar/Breakout/expert-v0")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--episodes", type=int, help="this many episodes")
    size.add_argument(
        "--steps", type=int, help=f"the fewest whole episodes of at least this many steps (default {DEFAULT_STEPS:,})"
    )
    parser.add_argument("--seed", type=int, default=0, help="environment i plays from seed + i (default 0)")
    parser.add_argument("--setting", default="minatar", choices=SETTINGS, help="MinAtar's (default) or gymnax's")
    parser.add_argument("--epsilon", type=float, default=EPSILON, help=f"the noisy tier's (default {EPSILON})")
    parser.add_argument("--envs", type=int, default=NUM_ENVS, help=f"environments played at once ({NUM_ENVS})")
    parser.add_argument("--policy", help="a checkpoint (or pretrained:<id>) to play instead of the tier's own")
    parser.add_argument("--force", action="store_true", help="replace a dataset of the same id")
    args = parser.parse_args(argv)
    try:
        for ids in args.ids:
            DatasetId.parse(ids)  # every id checked before the first is made
        for ids in args.ids:
            start = time.perf_counter()
            options = (args.episodes, args.steps, args.seed, args.setting, args.epsilon, args.envs, args.policy)
            dataset = make_dataset(ids, *options, force=args.force)
            info = dataset.storage.metadata["maxatar"]
            print(
                f"wrote {ids}: {dataset.total_episodes:,} episodes, {dataset.total_steps:,} steps, mean return "
                f"{info['return_mean']:.2f}, TQ {info['tq']:.2f}, SACo {info['saco']:.2f}, "
                f"{dataset.storage.metadata['dataset_size']} MB in {time.perf_counter() - start:.1f} s"
            )
    except (ValueError, OSError) as error:  # an InputError or CheckpointError, or the disk
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
