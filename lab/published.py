"""Published figures that only the project's reports (`lab.results`) set results beside, with their sources;
those the installed package uses too (MinAtar's DQN, pgx's PPO) are in `maxatar_agents.experiments.published`."""

from __future__ import annotations

# MinAtar's AC(lambda=0.8) after 5M frames, read off the learning curves of its README and paper
# (img/learning_curves.gif; 30 seeds, full action set, sticky 0.1, ramping): about +-5% of the axis.
MINATAR_AC = {"Breakout-v0": 17.5, "Asterix-v0": 19, "Freeway-v0": 46, "Seaquest-v0": 15, "SpaceInvaders-v0": 185}
# pgx's PPO (`experiments.published.PGX_PPO`) after 5M frames (a quarter of its run), read off the curves of
# its README: their x axis is seconds, so this assumes its updates took equal time; about +-2 (Freeway,
# SpaceInvaders +-5). What the PPO runs here, at most 5M frames, compare with.
PGX_PPO_5M = {"Breakout-v0": 5, "Asterix-v0": 4, "Freeway-v0": 30, "Seaquest-v0": 3, "SpaceInvaders-v0": 28}

# Returns published for gymnax's MinAtar setting (no sticky actions, minimal action set, gymnax's time limits), for
# the like-for-like tables: each entry names the file and commit it was read at, how the figure was read, and the
# training budget. A gymnax MinAtar step is one frame (no frame skip), so "frames" is environment steps summed over
# the parallel environments. No source below publishes a Seaquest figure (gymnax-blines trains no Seaquest agent).
GYMNAX_SETTING_PUBLISHED = {
    # gymnax's README, table "Implemented Accelerated Environments", column "Ckpt (Return)": the return of the
    # gymnax-blines PPO checkpoint, given as integers. The README names no budget: 10M is that of the linked
    # gymnax-blines configs (agents/*-MinAtar/ppo.yaml). The MinAtar rows date from gymnax commit fb7c953 (2022-06-20),
    # a day before gymnax-blines replaced its checkpoints (c7dd018), which may be why Breakout's 28 differs from the
    # current checkpoint's log (22.88, next entry).
    "gymnax README PPO": {
        "algorithm": "PPO",
        "returns": {"Asterix-v0": 15, "Breakout-v0": 28, "Freeway-v0": 58, "SpaceInvaders-v0": 131},
        "frames": 10_000_000,
        "source": "RobertTLange/gymnax README.md @ 086ad95697d5898b95ce3b14fa25f2b0bae4a1fc",
        "how": "README table (Ckpt (Return) column); budget from gymnax-blines `agents/*-MinAtar/ppo.yaml`",
    },
    # gymnax-blines' PPO results files agents/*-MinAtar/ppo.pkl (config ppo.yaml: num_train_steps 10M, 64
    # environments, learning rate 5e-4, MLP on the flattened grid): the last entry of `log_return`, the mean return
    # of 164 evaluation episodes with sampled actions, logged at 9,919,936 steps. The README shows these runs only
    # as a figure (docs/lcurves.png); notebooks/visualize_lcurves.ipynb prints final returns, but of the lr-1e-4
    # runs (ppo0.0001.pkl), not of the shipped config.
    "gymnax-blines PPO": {
        "algorithm": "PPO",
        "returns": {"Asterix-v0": 14.95, "Breakout-v0": 22.88, "Freeway-v0": 58.80, "SpaceInvaders-v0": 131.64},
        "frames": 10_000_000,
        "source": "RobertTLange/gymnax-blines `agents/*-MinAtar/ppo.pkl` @ 3f029d6b98afb0d654d387b5bc0f7a592373ad66",
        "how": "results file: last log_return (at log_steps 9,919,936), rounded to 2 decimals",
    },
}
# The budgets of the gymnax-setting sources, including two that publish no MinAtar returns to record: purejaxql's
# README reports no MinAtar results (Atari, Craftax, JaxMARL and Playground only), and PureJaxRL's are figures
# without numbers (README: Breakout return against wall-clock seconds, docs/minatar_plot_seconds.png; the notebook
# examples/brax_minatar.ipynb: a SpaceInvaders return curve). "frames" is environment steps summed over the
# environments, as above; purejaxql also logs an "env_frame" that is steps times observation channels, not frames.
GYMNAX_SETTING_BUDGETS = {
    "gymnax-blines PPO": {
        "frames": 10_000_000,
        "num_envs": 64,
        "source": "RobertTLange/gymnax-blines `agents/*-MinAtar/ppo.yaml` @ 3f029d6b98afb0d654d387b5bc0f7a592373ad66",
        "how": "config file: num_train_steps 10000000, num_train_envs 64 (Seaquest has no config)",
    },
    "purejaxql PQN": {
        "frames": 10_000_000,
        "num_envs": 128,
        "source": "mttga/purejaxql purejaxql/config/alg/pqn_minatar.yaml @ 47af6d7b35c89ddfe633aaf7341bdb8964cb7cce",
        "how": "config file: TOTAL_TIMESTEPS 1e7, NUM_ENVS 128, NUM_STEPS 32 (ENV_NAME Asterix-MinAtar by default)",
    },
    "PureJaxRL PPO": {
        "frames": 10_000_000,
        "num_envs": 64,
        "source": "luchris429/purejaxrl examples/brax_minatar.ipynb @ 31756b197773a52db763fdbe6d635e4b46522a73",
        "how": "notebook config: TOTAL_TIMESTEPS 1e7, NUM_ENVS 64, NUM_STEPS 128 (ENV_NAME SpaceInvaders-MinAtar)",
    },
}
