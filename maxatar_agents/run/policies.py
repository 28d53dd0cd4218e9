"""A trained agent's policy, from a checkpoint (`maxatar_agents.run.checkpoint`, which stores and checks it):
`load_policy` plays it, `export_policy` keeps one seed's policy as the package ships its pretrained ones, and
`policy_env_kwargs` and `policy_returns` give the environment it was trained in and what it scores there.

`load_policy(path) -> (env_id, act_fn)` is the entry point the `renderers` package uses to play a trained
policy: `act_fn(params_or_none, obs) -> action`, jittable; with `None` it uses the checkpoint's params.
`path` may also name a policy shipped with the package, `"pretrained:maxatar/Breakout-v0"`: a policy-only
checkpoint (`export_policy`: one seed's policy params and the figures it was chosen by) in
`maxatar_agents/pretrained/<id>/`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import numbers
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from maxatar_agents.run.checkpoint import (
    FORMAT,
    META_FILE,
    PROGRESS_KEY,
    STATE_FILE,
    CheckpointError,
    check_finite,
    exists,
    lock_run,
    open_arrays,
    read_meta,
    resolve,
    tree_paths,
    unlock_run,
    write_file,
)
from maxatar_agents.run.saved import config_for, program_for


class Policy(jax.tree_util.Partial):
    """`load_policy`'s act function: a `Partial` holding the params, printed by its size (a `Partial`'s repr
    lists every array)."""

    def __repr__(self) -> str:
        return f"Policy({sum(x.size for x in jax.tree.leaves(self.args)):,} parameters)"


# A subclass is no pytree by inheritance: registered, so that a jitted caller still takes the params as arguments.
jax.tree_util.register_pytree_node(
    Policy, lambda p: ((p.args, p.keywords), p.func), lambda func, xs: Policy(func, *xs[0], **xs[1])
)


def load_policy(path: str | Path, seed_index: int | None = None) -> tuple[str, Callable]:
    """The trained policy of a checkpoint: `(env_id, act_fn)` with `act_fn(params_or_none, obs) -> action`.

    `path` is a run directory or its checkpoint file. The policy is the evaluation policy (greedy for DQN
    and PQN, most probable action for SAC and PPO) of one seed: `seed_index`, or by default the seed with
    the best final evaluation (the first seed if the run has not finished). `obs` may carry leading batch axes. `act_fn`
    is jitted, so calling it for one observation at a time in a Python loop is fast (each observation shape
    compiles once), and it is a `jax.tree_util.Partial` holding the params, so passing it into a jitted
    function passes the weights as arguments rather than compiling them in as constants.
    """
    directory = resolve(path)
    meta = read_meta(directory)
    if meta.get("sweep"):
        raise CheckpointError(f"{directory} holds a sweep: load the policy of one value from its directory in it")
    _, program = program_for(meta)
    num_seeds = len(meta["seeds"])
    if seed_index is None:
        per_seed = (meta.get("final_eval") or {}).get("return_per_seed")
        seed_index = int(np.argmax(per_seed)) if per_seed else 0
    check_seed_index(seed_index, num_seeds)

    names, template = _policy_leaves(program, num_seeds)
    leaves, treedef = jax.tree.flatten(template)
    with open_arrays(directory, meta) as saved:
        saved.progress(meta, directory)
        for name, leaf in zip(names, leaves, strict=True):
            if name not in saved:
                raise CheckpointError(f"checkpoint in {directory} does not match its own config ({name})")
            saved.check(name, leaf.shape, leaf.dtype, "does not match its own config")
        arrays = []
        for name, leaf in zip(names, leaves, strict=True):
            array = saved.read(name, tuple(leaf.shape), np.dtype(leaf.dtype))[seed_index]
            check_finite(saved, name, array)
            arrays.append(jnp.asarray(array))
    params = jax.tree.unflatten(treedef, arrays)
    # Jitted once here, so that a Python loop calling `act_fn(None, obs)` dispatches one compiled program (tens
    # of microseconds) instead of running the network op by op (milliseconds); inside a jitted caller the
    # inner jit is inlined. Each observation shape (one, or a batch) compiles once.
    return meta["env_id"], Policy(jax.jit(functools.partial(_act, program.act)), params)


def check_seed_index(seed_index: Any, num_seeds: int) -> None:
    if isinstance(seed_index, bool) or not isinstance(seed_index, numbers.Integral):
        raise TypeError(f"seed_index must be a whole number (or None: the best seed), got {seed_index!r}")
    if not 0 <= seed_index < num_seeds:
        raise CheckpointError(f"seed_index {seed_index} is outside the checkpoint's {num_seeds} seeds")


def _policy_leaves(program: Any, num_seeds: int) -> tuple[list[str], Any]:
    """The state file's names of the policy params' leaves, and their (seed-batched) shapes."""
    keys = jax.ShapeDtypeStruct((num_seeds, 2), jnp.uint32)
    template = program.policy_params(jax.eval_shape(jax.vmap(program.init), keys))
    return [f".{program.policy_field}{name}" for name in tree_paths(template)], template


def export_policy(run: str | Path, out: str | Path, seed_index: int, record: dict[str, Any]) -> Path:
    """Write one seed's trained policy as a policy-only checkpoint that `load_policy` reads (what the package
    ships under `pretrained/`): the policy params only (a compressed `.npz`, a few hundred kB instead of a
    run's whole state) and the run's metadata for that seed, plus `record` (the figures the policy was
    chosen by, which the tests check it still reaches), the JSON naming `STATE_FILE` and its sha256.
    Returns the output directory."""
    directory, out = resolve(run), Path(out)
    meta = read_meta(directory)
    if meta.get("final_eval") is None:
        raise CheckpointError(f"the run in {directory} has not finished; export its policy once it has")
    _, program = program_for(meta)
    num_seeds = len(meta["seeds"])
    check_seed_index(seed_index, num_seeds)
    names, template = _policy_leaves(program, num_seeds)
    with open_arrays(directory, meta) as saved:
        saved.progress(meta, directory)
        arrays = {}
        for name, leaf in zip(names, jax.tree.leaves(template), strict=True):
            saved.check(name, leaf.shape, leaf.dtype, "does not match its own config")
            arrays[name] = saved.read(name, tuple(leaf.shape), np.dtype(leaf.dtype))[seed_index : seed_index + 1]
            check_finite(saved, name, arrays[name])
    arrays[PROGRESS_KEY] = np.asarray(meta["intervals_done"], np.int64)
    with _export_target(directory, out):
        _write_export(meta, out, seed_index, record, arrays)
    return out


@contextlib.contextmanager
def _export_target(run: Path, out: Path) -> Iterator[None]:
    """Hold `out` with the run lock (as training does) while an export writes it, once it is known to hold no
    run: `out` is not `run` itself, and any checkpoint in it is a policy-only one (an earlier export)."""
    if os.path.realpath(out) == os.path.realpath(run):
        raise CheckpointError(f"cannot export {run} into its own directory: choose another output directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CheckpointError(f"cannot create the output directory {out}: {error.strerror or error}") from None
    lock_run(out)
    try:
        if exists(out):
            try:
                held = read_meta(out)
            except CheckpointError as error:
                raise CheckpointError(f"{out} holds a checkpoint that is not an exported policy ({error})") from None
            if not held.get("policy_only"):
                raise CheckpointError(f"{out} holds a run's checkpoint; an export never replaces it: choose another")
        yield
    except OSError as error:
        raise CheckpointError(f"cannot write the policy to {out}: {error.strerror or error}") from None
    finally:
        unlock_run(out)


def _write_export(meta: dict[str, Any], out: Path, seed_index: int, record: dict[str, Any], arrays: dict) -> None:
    digest = write_file(out, STATE_FILE, lambda f: np.savez_compressed(f, **arrays))
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
            "state_file": STATE_FILE,
            "state_sha256": digest,
        },
        indent=1,
    )
    write_file(out, META_FILE, lambda f: f.write(text.encode()))


def policy_env_kwargs(path: str | Path) -> dict[str, Any]:
    """The `maxatar.make` keywords, besides the id, of the environment a checkpoint's (or `pretrained:<id>`)
    policy was trained in: its setting, sticky actions, ramping and observation type. A policy played in
    another setting would be wrong without an error: a `pgx`-setting Breakout policy picks among 3 actions,
    whose indices mean other actions in the full set of 6. The renderers play checkpoints with these."""
    from maxatar_agents.algorithms.config import env_kwargs

    return env_kwargs(config_for(read_meta(resolve(path))))


def policy_returns(path: str | Path, episodes: int, key: int = 0, seed_index: int | None = None) -> np.ndarray:
    """Returns of `episodes` episodes of a checkpoint's (or `pretrained:<id>`) evaluation policy, played in
    the environment setting it was trained in, from `PRNGKey(key)`: the figure a shipped policy records
    at export and its test checks."""
    from maxatar_agents.algorithms.config import env_from_config
    from maxatar_agents.algorithms.evaluation import evaluate

    config = config_for(read_meta(resolve(path)))
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
