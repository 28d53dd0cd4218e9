"""A checkpoint's config and program: the agent its metadata names, its config rebuilt from the JSON, and the
metadata checked against that config's schedule (`checkpoint.check_meta`). The checkpoint store reads and checks
files against a `checkpoint.Schema` alone; this is the one place that builds an agent's program for one."""

from __future__ import annotations

from typing import Any

from maxatar_agents.algorithms.registry import agent_module
from maxatar_agents.run.checkpoint import REQUIRED, CheckpointError, Schema, check_meta, require, where
from maxatar_agents.run.configs import config_from_dict


def schema(program: Any) -> Schema:
    """What a checkpoint of `program` holds (`checkpoint.Schema`)."""
    sched = program.schedule
    return Schema(sched.num_intervals, sched.frames_per_interval, program.policy_field)


def program_for(meta: dict[str, Any]) -> tuple[Any, Any]:
    """The config a checkpoint was made with and its program, after checking the metadata against them."""
    require(meta, *REQUIRED)
    module = agent_module(meta["algorithm"])
    try:
        config = config_from_dict(module.Config, meta["config"])
    except (TypeError, ValueError) as error:
        raise CheckpointError(
            f"{where(meta)} is damaged: its config is not a valid {meta['algorithm']} config: {error}"
        ) from None
    if config.env_id != meta["env_id"]:
        raise CheckpointError(f"{where(meta)} is damaged: env_id is {meta['env_id']!r}, its config's {config.env_id!r}")
    program = module.make_program(config)
    check_meta(meta, schema(program))
    return config, program


def config_for(meta: dict[str, Any]) -> Any:
    """The config a checkpoint was made with (`read_meta` has checked its algorithm), once its metadata has
    been checked against it."""
    return program_for(meta)[0]
