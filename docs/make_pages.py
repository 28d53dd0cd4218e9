"""Write one docs page per environment (docs/environments/<game>.md) from the environment classes, and one per
deep RL agent (docs/agents/<algo>.md) from the agent modules.

    python docs/make_pages.py            # rewrite the pages and the channel pictures
    python docs/make_pages.py --check    # exit 1 if an environment page differs from what the code gives

The environment pages are committed (they read well on GitHub too) and tests/test_docs.py checks them; the agent
pages follow the agents' presets and docstrings, which change often, so docs/conf.py writes them at every build
(`agent_pages()`) and git ignores them.

Everything on a page comes from the game's class data (`maxatar/games/<game>/rules.py`: its docstring, channels,
action names and sets, difficulty levels, randomness sentence, settings), the GIFs in docs/ and the results table of
docs/results.md (written by `python -m lab.results report --readme docs/results.md`), so rerun
this after changing any of them. tests/test_docs.py checks that the pages are up to date.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import maxatar  # noqa: E402
import maxatar.continual  # noqa: E402
from maxatar.registry import MINATAR_GAMES, canonical_name  # noqa: E402

QUIRK_MARK = re.compile(r"reproduced|^Behaviour of", re.IGNORECASE)


def split_docstring(doc: str) -> tuple[str, str]:
    """The module docstring's description, and its list of reference behaviour kept on purpose (may be empty)."""
    lines = doc.strip().splitlines()
    for i, line in enumerate(lines):
        if QUIRK_MARK.search(line):
            return "\n".join(lines[:i]).strip(), "\n".join(lines[i:]).strip()
    return "\n".join(lines).strip(), ""


def results_lines() -> list[str]:
    """The lines of docs/results.md's table in MinAtar's setting (its first generated section, not the
    like-for-like table below it)."""
    text = (DOCS / "results.md").read_text()
    return text[text.index("<!-- results:start -->") : text.index("<!-- results:end -->")].splitlines()


def runs_table() -> list[str]:
    """The table of every run on docs/results.md, header first (the one whose header starts "| game | agent";
    the page's other tables have a row per game too)."""
    text = results_lines()
    start = next((i for i, line in enumerate(text) if line.startswith("| game | agent")), len(text))
    end = next((i for i in range(start, len(text)) if not text[i].startswith("|")), len(text))
    return text[start:end]


def results_rows(game_row: str) -> list[str]:
    """The header and this game's rows of the table of every run."""
    block = runs_table()
    return [*block[:1], *(line for line in block if line.startswith(f"| {game_row} |"))]


def earlier_preset_note(rows: list[str]) -> list[str]:
    """The results page's note on rows trained with an earlier version of their preset (marked `\\*`), with
    the blank line after it, where one of `rows` is such a row; else nothing."""
    if not any(" \\* |" in row for row in rows):
        return []
    return [line for line in results_lines() if line.startswith("\\* ")] + [""]


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *("| " + " | ".join(r) + " |" for r in rows)]


def game_pictures(env_id: str, cls) -> tuple[str, str | None, str | None]:
    """The random play GIF and, for a MinAtar game (which the results protocol trains), the trained play GIF
    (under docs/, as `lab/results.py` writes them) and the game's row name in the results table."""
    name = canonical_name(env_id)
    if name not in MINATAR_GAMES:
        return f"{cls.name}.gif", None, None
    game = name.removesuffix("-v0")
    return f"{cls.name}.gif", f"trained/{game.lower()}.gif", game


def multi_game_page(env_id: str, env, params) -> tuple[str, str]:
    """The page of an id that plays several games (`maxatar.continual`): its games, their channels' slots, their
    actions, its schedule and the presets, from the class and the games' own data."""
    from maxatar.continual import PRESETS

    cls = type(env)
    module = importlib.import_module(cls.__module__)
    title = env_id.split("/")[1].removesuffix("-v0")
    summary = " ".join(cls.__doc__.split(". ")[0].split())
    out = [f"# {title}", "", f"`{env_id}`: {summary}.", ""]
    spec = [
        ["observation", f"{env.obs_shape}, {np.dtype(env.obs_dtype)} (the union of the games' channels)"],
        ["actions", f"{env.num_actions} (MinAtar's full set, every game)"],
        ["games (default)", ", ".join(env.games)],
        ["uniforms per reset / step", f"{env.num_reset_uniforms} / {env.num_step_uniforms} (the most any game reads)"],
        ["defaults", f"sticky actions {float(params.sticky_action_prob):.2g}, max_steps {int(params.max_steps)}"],
        ["code", f"`{cls.__module__.replace('.', '/')}.py`"],
    ]
    out += table(["", ""], spec) + [""]
    out += ["## The environment", "", (module.__doc__ or "").strip(), ""]
    out += ["See [continual and multi-task RL](../guides/continual.md) for a runnable example.", ""]
    out += ["## Observation", ""]
    games = list(maxatar.continual.minatar_games().items())
    union, _ = maxatar.make(env_id, games=tuple(name for name, _ in games))
    rows = [
        [name, *(f"`{game.looks.channels[c].name}`" for c in range(game.obs_shape[-1]))]
        + [""] * (10 - game.obs_shape[-1])
        for name, game in games
    ]
    out += [
        'With `layout="front"` (the default, as C-CHAIN and the NaP harness pad), channel i of a game is slot i of '
        "the union; the other slots are zero. `permute_seed=s` moves each game's channels to slots of a permutation "
        "drawn from (s, the game's index).",
        "",
    ]
    out += table(["game", *(f"slot {i}" for i in range(10))], rows) + [""]
    semantic, _ = maxatar.make(env_id, games=union.games, layout="semantic")
    rows = [
        [name, *(f"`{channel}`" if channel else "" for channel in semantic.slot_names(k))]
        for k, (name, _) in enumerate(games)
    ]
    out += [
        'With `layout="semantic"` every role has one slot across games (a channel\'s `role` is declared beside its '
        "colour in the game's `rules.py`); a channel with no counterpart elsewhere takes the game's first free slot.",
        "",
    ]
    roles = maxatar.continual.ROLES
    out += table(["game", *(f"{i} {role}" for i, role in enumerate(roles))], rows) + [""]
    out += ["## Actions", ""]
    rows = [[name, *("yes" if legal else "" for legal in union.legal_actions[k])] for k, (name, _) in enumerate(games)]
    out += [
        "Six actions for every game (MinAtar's full set). `info[\"legal_action_mask\"]` is the current game's minimal "
        "set (below); with `full_action_space=False` an action outside it is a no-op.",
        "",
    ]
    out += table(["game", *(f"{a} {n}" for a, n in enumerate(cls.action_names))], rows) + [""]
    out += ["## Tasks and schedules", ""]
    out += [
        "`params.task` is the index in `games` of the game being played; `Schedule` (the env's `schedule`) says "
        "which task each frame plays, frames being environment steps summed over the batch. Presets "
        "(`preset=`, which fills `games`, `frames_per_task`, `cycles` and `shuffle`; explicit keywords override it):",
        "",
    ]
    rows = [
        [f'`"{name}"`', ", ".join(p.games), f"{p.frames_per_task:,}", str(p.cycles), p.about]
        for name, p in PRESETS.items()
    ]
    out += table(["preset", "games, in order", "frames per game", "cycles", "protocol"], rows) + [""]
    out += ["## Randomness", "", cls.randomness, ""]
    return cls.name, "\n".join(out).rstrip() + "\n"


def page(env_id: str) -> tuple[str, str]:
    env, params = maxatar.make(env_id)
    if hasattr(env, "games"):
        return multi_game_page(env_id, env, params)
    cls = type(env)
    module = importlib.import_module(cls.__module__)
    about, quirks = split_docstring(module.__doc__ or "")
    title = env_id.split("/")[1].split("-")[0]
    names = cls.action_names
    minimal = cls.minimal_action_set
    out = [f"# {title}", "", f"`{env_id}`" + (f" (gymnax: `{cls.gymnax_name}`)" if cls.gymnax_name else ""), ""]
    spec = [
        ["observation", f"{env.obs_shape}, {np.dtype(env.obs_dtype)}"],
        ["actions (full)", str(cls.num_game_actions)],
        ["actions (`full_action_space=False`)", str(len(minimal)) if minimal else str(cls.num_game_actions)],
        ["difficulty levels", f"0-{cls.max_difficulty}" if cls.max_difficulty else "0 (no ramp)"],
        ["uniforms per reset / step", f"{env.num_reset_uniforms} / {cls.num_step_uniforms}"],
        ["defaults", f"sticky actions {float(params.sticky_action_prob):.2g}, max_steps {int(params.max_steps)}"],
        ["rules", f"`{cls.__module__.replace('.', '/')}.py`"],
    ]
    out += table(["", ""], spec) + [""]
    out += ["## The game", "", about, ""]
    random_gif, trained_gif, result_row = game_pictures(env_id, cls)
    pictures = [f"![random play](../{random_gif})"]
    if trained_gif:
        pictures.append(f"![trained play](../{trained_gif})")
    out += [" ".join(pictures), "", "Random play" + (", then the shipped trained agent." if trained_gif else "."), ""]
    out += ["## Observation", ""]
    channels = cls.looks.channels
    if channels:
        rows = [[str(i), f"`{c.name}`", f"rgb{tuple(c.colour)}"] for i, c in enumerate(channels)]
        out += table(["channel", "name", "colour when drawn"], rows) + [""]
    if has_channel_picture(env):
        out += [
            f"![the observation, then each channel]({cls.name}_channels.png)",
            "",
            f'After {CHANNEL_STEPS} random steps (seed 0): the picture (`obs_type="rgb"`), then channels 0-'
            f"{len(channels) - 1} left to right, each cell that is set in its colour.",
            "",
        ]
    if channels:
        out += ['`obs_type="rgb"` or `"grayscale"` gives the picture instead ([pixels](../guides/pixels.md)).', ""]
    else:
        out += [f"A {np.dtype(env.obs_dtype)} vector of shape {env.obs_shape} (see above).", ""]
    out += ["## Actions", ""]
    rows = [[str(a), names[a], "yes" if minimal is None or a in minimal else ""] for a in range(cls.num_game_actions)]
    out += table(["action", "meaning", "in the minimal set"], rows) + [""]
    out += ["## Difficulty", ""]
    if cls.max_difficulty:
        out += [
            f"The game ramps its difficulty as MinAtar's does, through levels 0-{cls.max_difficulty}; "
            '`reset(options={"difficulty": k})` or `maxatar.make(id, difficulty=k)` starts at level k, and '
            "`difficulty_ramping=False` keeps the level fixed ([reset options](../guides/reset-options.md)).",
            "",
        ]
    else:
        out += ["No difficulty ramp (the reference has none): only level 0.", ""]
    out += ["## Randomness", "", cls.randomness, ""]
    out += [
        "Sticky actions repeat the last executed action with probability `sticky_action_prob` (one draw every "
        "step, also when it is 0, so that a seed's tape does not shift). See "
        "[deterministic play](../guides/reset-options.md).",
        "",
    ]
    out += ["## The reference's quirks, kept on purpose", ""]
    out += [quirks or "None beyond the reference's own rules.", ""]
    out += ["All of them, with the parity method: [reference quirks](../reference-quirks.md).", ""]
    out += ["## Settings", ""]
    rows = []
    for name, knobs in cls.settings.items():
        rows.append([f'`"{name}"`', *(str(knobs.get(k, "-")) for k in ("sticky_action_prob", "full_action_space"))])
        rows[-1] += [str(knobs.get("difficulty_ramping", "-")), str(knobs.get("max_steps", "-"))]
    if rows and any(knobs for knobs in cls.settings.values()):
        out += table(["`setting=`", "sticky actions", "full action set", "ramping", "max_steps"], rows) + [""]
    else:
        out += ['Only its own defaults (`setting="minatar"`).', ""]
    out += ["See [settings of other papers](../guides/settings.md).", ""]
    out += ["## Baseline results", ""]
    rows = results_rows(result_row) if result_row else []
    if len(rows) > 1:
        out += [
            "From [the results](../results.md) (MinAtar's setting; the seeds column gives each row's):",
            "",
            rows[0],
            "|" + "---|" * (rows[0].count("|") - 1),
            *rows[1:],
            "",
            *earlier_preset_note(rows),
            f"![learning curves](../results/{result_row.lower()}.png)",
            "",
        ]
    else:
        out += ["Every agent's `cartpole` or `doors` preset solves it: see [the agents](../agents/index.md).", ""]
    return cls.name, "\n".join(out).rstrip() + "\n"


GENERATED = "<!-- written by docs/make_pages.py from the agent's module: edit the module, not this page -->"


def generated_agents() -> list[str]:
    """The registered agents whose page is written here: all but those with a page of their own (one without the
    `GENERATED` line, such as the tabular agents')."""
    from maxatar_agents.algorithms.registry import AGENT_MODULES

    pages = {algo: DOCS / "agents" / f"{algo}.md" for algo in AGENT_MODULES}
    return [a for a, page in pages.items() if not page.exists() or page.read_text().startswith(GENERATED)]


def agent_title(module) -> str:
    """An agent's name on its page: the module's `TITLE`, or its `ALGORITHM` in capitals."""
    return getattr(module, "TITLE", module.ALGORITHM.upper())


def fence_commands(doc: str) -> str:
    """A docstring's indented `python -m` command lines as ```bash blocks marked for tests/test_examples.py (they
    train for minutes to hours, so the test does not run them)."""
    return re.sub(
        r"^    (python -m \S+ .*)$",
        r"<!-- docs: long-running (a full training run) -->\n```bash\n\1\n```",
        doc,
        flags=re.M,
    )


def agent_page(algo: str) -> str:
    """An agent's page: its docstring, presets (with the fields they set) and its rows of the results table."""
    from maxatar_agents.algorithms.registry import agent_module
    from maxatar_agents.run.configs import env_presets

    module = agent_module(algo)
    source = module.__name__.replace(".", "/") + ".py"
    out = [GENERATED, f"# {agent_title(module)}", "", f"`{source}`: `python -m maxatar_agents {algo} --help`.", ""]
    out += [fence_commands((module.__doc__ or "").strip()), ""]
    out += ["## Presets", ""]
    by_env = {v: k for k, v in env_presets(module).items()}
    rows = []
    for name, fields in module.PRESETS.items():
        chosen = (
            f"`{by_env[name]}`" if name in by_env else ("the MinAtar games" if name == module.DEFAULT_PRESET else "")
        )
        values = ", ".join(f"`{k}={v!r}`" for k, v in fields.items())
        rows.append([f"`{name}`", chosen, values])
    out += table(["preset", "chosen by `--env`", "fields it sets (the rest: the config's defaults)"], rows) + [""]
    out += [
        "`--preset NAME` (or a JSON file of fields) overrides the choice; every field is also an option "
        "(`--help`). See [the agents](index.md) for the common command line and the CartPole results.",
        "",
    ]
    if "cartpole" in module.PRESETS:
        out += [
            "<!-- docs: long-running (trains for seconds to minutes) -->",
            "```bash",
            f"python -m maxatar_agents {algo} --env maxatar/CartPole-v1 --seeds 2 --out runs/{algo}-cartpole",
            "```",
            "",
        ]
    if hasattr(module.Config, "dataset"):  # an offline agent: its results are the offline table's
        out += [
            "## Results on the MinAtar datasets",
            "",
            "Normalised scores per game and dataset: [Offline RL](../guides/offline-baselines.md#offline-baselines).",
            "",
        ]
        return "\n".join(out).rstrip() + "\n"
    out += ["## Results on the MinAtar games", ""]
    header, *rows = runs_table() or [""]
    label = agent_title(module).split()[0]
    rows = [line for line in rows if f"| {label} (`" in line]
    if header and rows:
        out += [
            "From [the results](../results.md) (MinAtar's setting; the seeds column gives each row's):",
            "",
            header,
            "|" + "---|" * (header.count("|") - 1),
            *rows,
            "",
        ]
    else:
        out += ["Not run on the MinAtar games yet.", ""]
    return "\n".join(out).rstrip() + "\n"


def agent_pages() -> None:
    """docs/agents/<algo>.md for every registered agent without a page of its own (rewritten only where it
    changed)."""
    for algo in generated_agents():
        path, text = DOCS / "agents" / f"{algo}.md", agent_page(algo)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)


CHANNEL_STEPS = 40  # random steps before the state whose channels each page shows


def has_channel_picture(env) -> bool:
    """The MinAtar games: a 10x10 grid of named channels (Doors' channels draw a flat observation)."""
    return bool(env.looks.channels) and len(env.obs_shape) == 3


def channel_picture(env_id: str, path: Path, cell: int = 12, gap: int = 6) -> None:
    """One PNG per game: the rendered frame, then every observation channel as its own 10x10 panel (cells set
    in the channel's colour on dark grey), after CHANNEL_STEPS seeded random steps through Gymnasium."""
    import gymnasium
    import imageio.v3 as iio

    actions = np.random.default_rng(0).integers(0, 6, CHANNEL_STEPS)
    frames = []
    for obs_type in ("rgb", None):
        env = gymnasium.make(env_id, **({"obs_type": obs_type, "obs_scale": cell} if obs_type else {}))
        obs, _ = env.reset(seed=0)
        for a in actions % env.action_space.n:
            obs, _, terminated, truncated, _ = env.step(int(a))
            if terminated or truncated:
                obs, _ = env.reset()
        frames.append(obs)
    picture, channels = frames
    colours = [np.array(c.colour, np.uint8) for c in maxatar.make(env_id)[0].looks.channels]
    panels = [picture]
    for i, colour in enumerate(colours):
        panel = np.where(channels[:, :, i, None], colour, np.uint8(40)).astype(np.uint8)
        panels.append(np.kron(panel, np.ones((cell, cell, 1), np.uint8)))
    height = max(p.shape[0] for p in panels)
    spacer = np.full((height, gap, 3), 255, np.uint8)
    row = [part for panel in panels for part in (panel, spacer)][:-1]
    path.parent.mkdir(parents=True, exist_ok=True)
    iio.imwrite(path, np.concatenate(row, axis=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a page is stale")
    args = parser.parse_args()
    stale = []
    for env_id in maxatar.registered_ids():
        name, text = page(env_id)
        path = DOCS / "environments" / f"{name}.md"
        picture = DOCS / "environments" / f"{name}_channels.png"
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path))
            if has_channel_picture(maxatar.make(env_id)[0]) and not picture.exists():
                stale.append(str(picture))
        else:
            path.write_text(text)
            if has_channel_picture(maxatar.make(env_id)[0]):
                channel_picture(env_id, picture)
    if not args.check:
        agent_pages()
    if stale:
        sys.exit(f"stale: {', '.join(stale)}; run python docs/make_pages.py")


if __name__ == "__main__":
    main()
