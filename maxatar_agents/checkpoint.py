"""Checkpoints in safe formats: the training state as `.npz` (numpy arrays only, loaded with
`allow_pickle=False`) and everything else as JSON (format, algorithm, env id, config, seeds, progress).
Loading never executes code from the files.

`load_policy(path) -> (env_id, act_fn)` is the entry point the `renderers` package uses to play a trained
policy: `act_fn(params_or_none, obs) -> action`, jittable; with `None` it uses the checkpoint's params.
`path` may also name a policy shipped with the package, `"pretrained:maxatar/Breakout-v0"`: a policy-only
checkpoint (`export_policy`: one seed's policy params and the figures it was chosen by) in
`maxatar_agents/pretrained/<id>/`.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from maxatar_agents.configs import config_from_dict
from maxatar_agents.registry import AGENT_MODULES, agent_module

FORMAT = "maxatar_agents.checkpoint/1"
STATE_FILE = "checkpoint.npz"
META_FILE = "checkpoint.json"
PROGRESS_KEY = "__intervals_done__"
PRETRAINED_PREFIX = "pretrained:"
PRETRAINED_DIR = Path(__file__).parent / "pretrained"


class CheckpointError(ValueError):
    """A checkpoint is missing, damaged, or belongs to another configuration."""


def _atomic_write(path: Path, write: Callable[[Any], None], mode: str = "wb") -> None:
    """Write next to `path`, then rename: an interrupted write never replaces a good checkpoint."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, mode) as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def save(directory: str | Path, state: Any, meta: dict[str, Any]) -> Path:
    """Save a (seed-batched) training state and its metadata; returns the state file's path."""
    directory = Path(directory)
    leaves = jax.device_get(jax.tree.leaves(state))
    arrays = {name: np.asarray(leaf) for name, leaf in zip(tree_paths(state), leaves, strict=True)}
    arrays[PROGRESS_KEY] = np.asarray(meta["intervals_done"], np.int64)
    _atomic_write(directory / STATE_FILE, lambda f: np.savez(f, **arrays))
    text = json.dumps({"format": FORMAT, **meta}, indent=1)
    _atomic_write(directory / META_FILE, lambda f: f.write(text), mode="w")
    return directory / STATE_FILE


def pretrained_ids() -> list[str]:
    """The environment ids that have a policy shipped in the package."""
    if not PRETRAINED_DIR.is_dir():
        return []
    return sorted(f"maxatar/{d.name}" for d in PRETRAINED_DIR.iterdir() if (d / META_FILE).is_file())


def pretrained_path(env_id: str) -> Path:
    """The directory of the shipped policy for `env_id` (`maxatar/Breakout-v0` or `Breakout-v0`)."""
    name = env_id.split(":")[-1].removeprefix("maxatar/")
    if f"maxatar/{name}" not in pretrained_ids():
        shipped = ", ".join(pretrained_ids()) or "none"
        raise CheckpointError(f"no pretrained policy for {env_id!r}; shipped: {shipped}")
    return PRETRAINED_DIR / name


def _resolve(path: str | Path) -> Path:
    """A run directory, or the path of its state or metadata file -> the run directory; a
    `pretrained:<env id>` name -> the shipped policy's directory."""
    if isinstance(path, str) and path.startswith(PRETRAINED_PREFIX):
        return pretrained_path(path.removeprefix(PRETRAINED_PREFIX))
    path = Path(path)
    if path.is_dir():
        return path
    if path.name in (STATE_FILE, META_FILE):
        return path.parent
    raise CheckpointError(f"{path} is neither a run directory nor a {STATE_FILE} / {META_FILE} file")


def exists(directory: str | Path) -> bool:
    """Whether `directory` holds (part of) a checkpoint, so a new run never overwrites one."""
    directory = Path(directory)
    return (directory / META_FILE).is_file() or (directory / STATE_FILE).is_file()


def read_meta(path: str | Path) -> dict[str, Any]:
    """The checkpoint's metadata, checked to be this format and a known algorithm before anything trusts it."""
    directory = _resolve(path)
    try:
        meta = json.loads((directory / META_FILE).read_text())
    except FileNotFoundError:
        raise CheckpointError(f"no checkpoint in {directory} ({META_FILE} is missing)") from None
    except json.JSONDecodeError as error:
        raise CheckpointError(f"{directory / META_FILE} is not valid JSON: {error}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{directory / META_FILE} is not a {FORMAT} checkpoint")
    if meta.get("algorithm") not in AGENT_MODULES:
        raise CheckpointError(f"unknown algorithm {meta.get('algorithm')!r} in {directory / META_FILE}")
    return meta


def _open_arrays(directory: Path):
    """The state file's arrays, never unpickled."""
    try:
        return np.load(directory / STATE_FILE, allow_pickle=False)
    except FileNotFoundError:
        raise CheckpointError(f"no checkpoint state in {directory} ({STATE_FILE} is missing)") from None


def load_state(directory: str | Path, template: Any, meta: dict[str, Any]) -> Any:
    """Fill `template` (a state or its `jax.eval_shape`) with the saved arrays, checking names, shapes and
    dtypes, so that a checkpoint of another configuration is refused rather than half-loaded."""
    directory = _resolve(directory)
    if meta.get("policy_only"):
        raise CheckpointError(f"{directory} holds only a trained policy (export_policy); it cannot be resumed")
    names = tree_paths(template)
    leaves, treedef = jax.tree.flatten(template)
    with _open_arrays(directory) as saved:
        if PROGRESS_KEY not in saved or int(saved[PROGRESS_KEY]) != meta["intervals_done"]:
            raise CheckpointError(f"{STATE_FILE} and {META_FILE} in {directory} are from different saves")
        missing = [n for n in names if n not in saved]
        extra = sorted(set(saved.files) - set(names) - {PROGRESS_KEY})
        if missing or extra:
            raise CheckpointError(
                f"checkpoint in {directory} does not match this configuration: "
                f"missing {missing[:3]}{'...' if len(missing) > 3 else ''}, unexpected {extra[:3]}"
            )
        arrays = []
        for name, leaf in zip(names, leaves, strict=True):
            array = saved[name]
            if array.shape != tuple(leaf.shape) or array.dtype != np.dtype(leaf.dtype):
                raise CheckpointError(
                    f"checkpoint in {directory} does not match this configuration: {name} is "
                    f"{array.dtype}{list(array.shape)}, expected {np.dtype(leaf.dtype)}{list(leaf.shape)}"
                )
            arrays.append(jnp.asarray(array))
    return jax.tree.unflatten(treedef, arrays)


def tree_paths(tree: Any) -> list[str]:
    """Stable, readable names of a pytree's leaves: the keys of the state file, so that a mismatch names
    the leaf."""
    return [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_flatten_with_path(tree)[0]]


def config_for(meta: dict[str, Any]):
    """The config a checkpoint was made with (`read_meta` has checked its algorithm)."""
    module = agent_module(meta["algorithm"])
    try:
        return config_from_dict(module.Config, meta["config"])
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"checkpoint config is not a valid {meta['algorithm']} config: {error}") from None


def load_policy(path: str | Path, seed_index: int | None = None) -> tuple[str, Callable]:
    """The trained policy of a checkpoint: `(env_id, act_fn)` with `act_fn(params_or_none, obs) -> action`.

    `path` is a run directory or its checkpoint file. The policy is the evaluation policy (greedy for DQN
    and PQN, most probable action for SAC and PPO) of one seed: `seed_index`, or by default the seed with
    the best final evaluation (the first seed if the run has not finished). `obs` may carry leading batch axes. `act_fn`
    is a `jax.tree_util.Partial` holding the params, so passing it into a jitted function passes the
    weights as arguments rather than compiling them in as constants.
    """
    directory = _resolve(path)
    meta = read_meta(directory)
    if meta.get("sweep"):
        raise CheckpointError(f"{directory} holds a sweep: load the policy of one value from its directory in it")
    config = config_for(meta)
    module = agent_module(meta["algorithm"])
    program = module.make_program(config)
    num_seeds = len(meta["seeds"])
    if seed_index is None:
        per_seed = (meta.get("final_eval") or {}).get("return_per_seed")
        seed_index = int(np.argmax(per_seed)) if per_seed else 0
    if not 0 <= seed_index < num_seeds:
        raise CheckpointError(f"seed_index {seed_index} is outside the checkpoint's {num_seeds} seeds")

    names, template = _policy_leaves(program, num_seeds)
    leaves, treedef = jax.tree.flatten(template)
    with _open_arrays(directory) as saved:
        arrays = []
        for name, leaf in zip(names, leaves, strict=True):
            if name not in saved or saved[name].shape != tuple(leaf.shape):
                raise CheckpointError(f"checkpoint in {directory} does not match its own config ({name})")
            arrays.append(jnp.asarray(saved[name][seed_index]))
    params = jax.tree.unflatten(treedef, arrays)
    return meta["env_id"], jax.tree_util.Partial(functools.partial(_act, program.act), params)


def _policy_leaves(program: Any, num_seeds: int) -> tuple[list[str], Any]:
    """The state file's names of the policy params' leaves, and their (seed-batched) shapes."""
    keys = jax.ShapeDtypeStruct((num_seeds, 2), jnp.uint32)
    template = getattr(jax.eval_shape(jax.vmap(program.init), keys), program.policy_field)
    return [f".{program.policy_field}{name}" for name in tree_paths(template)], template


def export_policy(run: str | Path, out: str | Path, seed_index: int, record: dict[str, Any]) -> Path:
    """Write one seed's trained policy as a policy-only checkpoint that `load_policy` reads (what the package
    ships under `pretrained/`): the policy params only (a compressed `.npz`, a few hundred kB instead of a
    run's whole state) and the run's metadata for that seed, plus `record` (the figures the policy was
    chosen by, which the tests check it still reaches). Returns the output directory."""
    directory, out = _resolve(run), Path(out)
    meta = read_meta(directory)
    if meta.get("final_eval") is None:
        raise CheckpointError(f"the run in {directory} has not finished; export its policy once it has")
    program = agent_module(meta["algorithm"]).make_program(config_for(meta))
    num_seeds = len(meta["seeds"])
    if not 0 <= seed_index < num_seeds:
        raise CheckpointError(f"seed_index {seed_index} is outside the checkpoint's {num_seeds} seeds")
    names, _ = _policy_leaves(program, num_seeds)
    with _open_arrays(directory) as saved:
        arrays = {name: saved[name][seed_index : seed_index + 1] for name in names}
    arrays[PROGRESS_KEY] = np.asarray(meta["intervals_done"], np.int64)
    out.mkdir(parents=True, exist_ok=True)
    _atomic_write(out / STATE_FILE, lambda f: np.savez_compressed(f, **arrays))
    eval_ = meta["final_eval"]
    one = {**eval_, "return_per_seed": [eval_["return_per_seed"][seed_index]]}
    one["return_mean"] = one["return_per_seed"][0]
    kept = {k: meta[k] for k in ("algorithm", "env_id", "config", "preset", "intervals_done", "num_intervals")}
    text = json.dumps(
        {
            "format": FORMAT,
            **kept,
            "frames_done": meta.get("frames_done"),
            "seeds": [meta["seeds"][seed_index]],
            "final_eval": one,
            "policy_only": True,
            "record": record,
        },
        indent=1,
    )
    _atomic_write(out / META_FILE, lambda f: f.write(text), mode="w")
    return out


def policy_env_kwargs(path: str | Path) -> dict[str, Any]:
    """The `maxatar.make` keywords, besides the id, of the environment a checkpoint's (or `pretrained:<id>`)
    policy was trained in: its setting, sticky actions, ramping and observation type. A policy played in
    another setting would be wrong without an error: a `pgx`-setting Breakout policy picks among 3 actions,
    whose indices mean other actions in the full set of 6. The renderers play checkpoints with these."""
    from maxatar_agents.program import env_kwargs

    return env_kwargs(config_for(read_meta(_resolve(path))))


def policy_returns(path: str | Path, episodes: int, key: int = 0, seed_index: int | None = None) -> np.ndarray:
    """Returns of `episodes` episodes of a checkpoint's (or `pretrained:<id>`) evaluation policy, played in
    the environment setting it was trained in, from `PRNGKey(key)`: the figure a shipped policy records
    at export and its test checks."""
    from maxatar_agents.evaluation import evaluate
    from maxatar_agents.program import env_from_config

    config = config_for(read_meta(_resolve(path)))
    _, act = load_policy(path, seed_index)
    env, env_params = env_from_config(config)
    play = jax.jit(evaluate, static_argnums=(0, 4, 5))
    policy = jax.tree_util.Partial(act, None)
    return np.asarray(play(env, env_params, policy, jax.random.PRNGKey(key), episodes, config.eval_max_steps))


def _act(act: Callable, saved_params: Any, params_or_none: Any, obs: jax.Array) -> jax.Array:
    """The policy with the given params, or the checkpoint's. Only a mapping counts as params: `None`, or a
    PRNG key from callers whose contract is `act(key, obs)` (the evaluation policies are deterministic),
    selects the checkpoint's own."""
    params = params_or_none if isinstance(params_or_none, Mapping) else saved_params
    return act(params, obs)
