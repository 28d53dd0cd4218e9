"""The run platform: an agent's command line (`cli`), the run one interval at a time (`runner`), its files
(`artifacts`), the checkpoint store (`checkpoint`, which checks files against a `Schema`) and a checkpoint's
agent (`saved`), trained policies (`policies`, `export`), configs as text (`configs`), the commands' file and
signal rules (`files`, `interrupts`). Imports the algorithms, never the experiment platform."""
