"""Baseline agents for MaxAtar, in three layers, each importing only those below it (`lint-imports` checks it):

* `algorithms`: the agents and their blocks, pure JAX, importing nothing of the command line, storage or
  trackers. One file per agent (`dqn`, `sac`, `ppo`, `pqn`, `q_learning`: tabular Q-learning, expected SARSA
  and double Q-learning on Doors), each with its `Config`, presets and search space, its losses as plain
  functions, and `make_train(config) -> train(key)`, a whole run as one jitted program that can be vmapped over
  seeds; the blocks they share: `fields` and `config` (config fields and their checks; the run's and the
  network's configs), `program` (a run's shape, the `Agent` contract, the gradient step), `off_policy` and
  `on_policy` (the skeletons), `networks`, `evaluation` (returns measured in JAX), `grid` (float
  hyperparameters swept in the same program) and `registry` (the agents by name; `register` adds one).
* `run`: the run platform: the command line generated from each `Config` (`cli`), one interval at a time with
  checkpoints (`runner`), the files a run writes (`artifacts`), the checkpoint store (`checkpoint`), a run's
  trained policy (`policies`: load, export), configs as text (`configs`), and the commands' file and signal
  rules (`files`, `interrupts`).
* `experiments`: the experiment platform: Optuna sweeps (`sweep`) on their study storage (`study`), MLflow /
  TensorBoard tracking (`tracking`, hung on a run as its hooks), passwords kept out of output (`redaction`),
  and the evaluation statistics over finished runs (`statistics`, with the published figures in `published`).

On top, the commands (`commands`): `python -m maxatar_agents ALGO ...`, the same as

    python -m maxatar_agents.pqn --env maxatar/Breakout-v0 --seeds 4 --out runs/breakout

(and `python -m maxatar_agents.sweep`, `.evaluate`, `.export`). The names of 0.2.0's flat package still work,
with a warning, until 0.4 (`_compat`).

`load_policy(path)` plays a run's trained policy; `load_policy("pretrained:maxatar/Breakout-v0")` the one
shipped with the package for that game (`pretrained/`, made by `python -m lab.results`). `register(name, module)`
adds an agent of your own to the command line, checkpoints, sweeps and `load_policy`; `make_config(module,
env_id, preset, **overrides)` an agent's config as the command line makes it. These three are imported when
first read, after a check of the `agents` extra, so that without it `import maxatar_agents` works and reading
them says in one line what to install (`pip install "maxatar[agents]"`); every command checks the same first.
"""

import importlib

from maxatar.extras import require
from maxatar_agents import _compat

# The modules of the `agents` extra: the agents (flax, optax, flashbax), the progress bar and the learning curve.
# Every entry point checks them before it imports any of the package's modules that need them (`require_agents`).
AGENTS_EXTRA = ("flax", "optax", "flashbax", "tqdm", "matplotlib")
# The names above, imported from their modules when first read, after `require_agents`.
_API = {
    "load_policy": "maxatar_agents.run.policies",
    "make_config": "maxatar_agents.run.configs",
    "register": "maxatar_agents.algorithms.registry",
}

_compat.install()

__all__ = ["load_policy", "make_config", "register"]


def require_agents() -> None:
    """`maxatar.extras.MissingExtra` (one line: `pip install "maxatar[agents]"`) unless the agents' modules are
    installed; nothing is imported."""
    require("agents", *AGENTS_EXTRA)


def __getattr__(name: str):
    if name not in _API:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    require_agents()
    value = getattr(importlib.import_module(_API[name]), name)
    globals()[name] = value
    return value
