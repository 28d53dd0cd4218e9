"""This project's own results and release pipeline, run from a checkout and never installed (the wheel holds
`maxatar`, `maxatar_agents` and `renderers`):

* `results`: the results protocol (`python -m lab.results run|report|export`): every agent on every MinAtar game
  through the agents' own command line, the tables of docs/results.md and README.md, the shipped pretrained
  policies and their GIFs;
* `gpu`, `gpu_suite.sh`: training time on one GPU and the GPU sections of docs/performance.md;
* `published`: the published figures only these reports set results beside.

The lab imports the library and `benchmarks`; neither imports the lab.
"""
