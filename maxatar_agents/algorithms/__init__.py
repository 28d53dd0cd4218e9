"""The agents and the blocks they are built from, pure JAX: configs and their checks (`fields`, `config`), a run's
shape (`program`), the off- and on-policy skeletons, networks, returns measured in JAX (`evaluation`), float
sweeps in one program (`grid`), one file per agent, and the agents by name (`registry`). Nothing here imports the
command line, storage or trackers; the blocks are what a new agent (continual, offline) is written with."""
