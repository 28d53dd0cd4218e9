"""`python -m maxatar_agents.datasets ID [ID ...]`: offline datasets of the MinAtar games in Minari's format
(`maxatar_agents.run.datasets`); `load(dataset_id)` gives a dataset's steps as device arrays for jitted training."""

from maxatar_agents.run.datasets import load, make_dataset

__all__ = ["load", "make_dataset"]

if __name__ == "__main__":
    from maxatar_agents.commands import tool

    tool("datasets")
