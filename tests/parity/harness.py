"""One parity harness for every MinAtar game: play the reference, replay through `transition`, compare.

The reference (minatar 1.0.15) plays with a `ScriptedRandom`, which logs every call it answers. Those calls
become MaxAtar `Draws`, and one jitted `lax.scan` of `transition` replays the episode in fixed-length chunks
(compiled once per game; a long episode is several chunks). After the start and after every step the
observation, reward, terminal flag, executed action and every internal field of the game must be identical;
the first differing step is reported with the fields that differ. The calls the reference made must be
exactly those the port's state says a step consumes. Draws the reference did not make are filled with random
values, so every comparison also proves the game ignores them. See `docs/architecture.md` (parity method).

A game's suite fills in a `GameAdapter`; everything else lives here.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import minatar
import numpy as np
from hypothesis import strategies as st

from maxatar.core import Draws, Environment, EnvParams, EnvState, check_params
from tests.parity.scripted_random import Call, HypothesisSource, ScriptedRandom, attach

CHUNK = 256  # steps per compiled scan call: short episodes stay cheap, long ones are several calls
STICKY_CALL = ("rand", ())  # the sticky-action uniform `Environment.act` draws before every step

Policy = Callable[[int, Any], "int | None"]  # (step index, reference game) -> action, or None to stop

# Sticky probabilities: the edges, the default, and any float32 (exact in both; see prng.float32_ceiling for
# the float64 ones a suite may add); small ones keep long episodes mostly under the policy's control.
PROBS = st.sampled_from([0.0, 1.0, 0.1]) | st.floats(0.0, 1.0, width=32)
SMALL_PROBS = st.sampled_from([0.0, 0.1]) | st.floats(0.0, 0.125, width=32)


class GameAdapter:
    """What the harness needs to know about one game; the rest of a parity suite is shared. A game's suite
    subclasses it, sets `env` and overrides the hooks its game needs (the defaults suit a game that draws only
    the sticky uniform and starts from its reset).

    `snapshot` must return the names `port_fields` and `port_records` return together, with comparable values
    (arrays of one shape per field, or hashable records compared with `==`); the observation, `terminal` and
    `last_action` are read by the harness itself."""

    env: Environment  # its `name` is minatar's name for the game too
    reset_calls: tuple = ()  # the (method, args) calls the reference's reset makes

    def snapshot(self, game) -> dict:
        """The reference game's internal state as {field: value}, in the port's terms."""
        raise NotImplementedError

    def port_fields(self, state: EnvState) -> dict:
        """The same fields from one port state, as arrays: traced inside the compiled replay, so that reading
        them costs no compilation per episode length."""
        raise NotImplementedError

    def port_records(self, states: EnvState) -> dict:
        """Fields that are not arrays (e.g. ordered entity lists), from numpy port states with a leading time
        axis: {field: object array (T,)}."""
        return {}

    def observe(self, ref) -> np.ndarray | None:
        """The reference's observation, or None where it cannot build one (then only the state is compared)."""
        return ref.state()

    def reset_draws(self, log: list[Call]) -> Any:
        """The reset's logged calls as the port's reset draws."""
        return ()

    def step_calls(self, pre: EnvState, episode: Episode) -> list:
        """Per step, the (method, args) calls after the sticky uniform that the port's state before the step
        says the reference must make."""
        return [[] for _ in range(episode.n)]

    def game_draws(self, logs: list[list[Call]], rng: np.random.Generator, length: int) -> Any:
        """The per-step calls after the sticky one as the game part of `Draws` (leading axis `length`); random
        values from `rng` where the reference drew nothing, which the port must ignore."""
        return ()

    def apply_start(self, ref, start) -> None:
        """Put a crafted start into the reference `Environment` (after its reset)."""
        raise NotImplementedError(f"{type(self).__name__} has no crafted starts")

    def port_start(self, start) -> EnvState:
        """The port's state for a crafted start."""
        raise NotImplementedError(f"{type(self).__name__} has no crafted starts")

    def port_faults(self, states: EnvState) -> dict:
        """Port-only invariants over numpy states: {name: violated per row} (e.g. a buffer overflow flag)."""
        return {}


@dataclasses.dataclass
class Episode:
    """A reference episode. State rows (`obs`, `terminal`, `last_action`, `fields`): row 0 is the start, row
    t + 1 the state after step t. Step rows (`actions`, `logs`, `rewards`): one per step."""

    sticky_prob: float
    ramping: bool
    start: Any  # None for an episode begun by `reset()`, else the crafted start it began from
    reset_log: list[Call]
    actions: np.ndarray
    logs: list[list[Call]]
    rewards: np.ndarray
    obs: np.ndarray
    obs_ok: np.ndarray  # False where the reference could not build its observation
    terminal: np.ndarray
    last_action: np.ndarray
    fields: dict[str, np.ndarray]

    @property
    def n(self) -> int:
        """Steps played."""
        return len(self.actions)


@dataclasses.dataclass
class Replay:
    """The port's side of an episode (numpy), rows as in `Episode`; `states` holds whole `EnvState`s."""

    obs: np.ndarray
    states: EnvState
    rewards: np.ndarray
    truncated: np.ndarray
    fields: dict[str, np.ndarray]


def from_list(actions) -> Policy:
    """A policy replaying a fixed action list; the episode stops where the list ends."""
    return lambda t, game: int(actions[t]) if t < len(actions) else None


def stack_rows(values: list) -> np.ndarray:
    """Rows of one field as an array; records (tuples, e.g. Seaquest's entity lists) as an object array."""
    if isinstance(values[0], tuple):
        rows = np.empty(len(values), object)
        for i, value in enumerate(values):
            rows[i] = value
        return rows
    return np.asarray(values)


def play(
    adapter: GameAdapter,
    source,
    p: float,
    ramping: bool,
    policy: Policy,
    steps: int,
    start=None,
    after_terminal: int | None = None,
) -> Episode:
    """Play the reference for up to `steps` steps with a scripted generator fed by `source`, from its reset
    or, given `start`, from a crafted state; stop where `policy` returns None or, if `after_terminal` is set,
    that many steps after the first terminal step (a terminated game must stay frozen)."""
    ref = minatar.Environment(adapter.env.name, sticky_action_prob=p, difficulty_ramping=ramping)
    rng = attach(ref, ScriptedRandom(source))
    ref.reset()
    reset_log = rng.take_log()
    if start is not None:
        adapter.apply_start(ref, start)
    rows, actions, logs, rewards = [], [], [], []

    def record():
        obs = adapter.observe(ref)
        state = adapter.snapshot(ref.env)
        rows.append((obs, obs is not None, bool(ref.env.terminal), int(ref.last_action), state))

    record()
    after = None
    for t in range(steps):
        action = policy(t, ref.env)
        if action is None:
            break
        reward, terminal = ref.act(action)
        actions.append(action)
        logs.append(rng.take_log())
        rewards.append(reward)
        record()
        if terminal and after_terminal is not None:
            after = 0 if after is None else after + 1
            if after >= after_terminal:
                break
    obs, obs_ok, terminal, last_action, states = zip(*rows, strict=True)
    blank = np.zeros(adapter.env.obs_shape, bool)
    return Episode(
        sticky_prob=p,
        ramping=ramping,
        start=start,
        reset_log=reset_log,
        actions=np.asarray(actions, np.int32),
        logs=logs,
        rewards=np.asarray(rewards, np.float64),
        obs=np.stack([blank if o is None else o for o in obs]),
        obs_ok=np.asarray(obs_ok),
        terminal=np.asarray(terminal),
        last_action=np.asarray(last_action),
        fields={name: stack_rows([s[name] for s in states]) for name in states[0]},
    )


def play_drawn(adapter: GameAdapter, data, probs, actions, after_terminal: int | None = None) -> Episode:
    """An episode from reset where hypothesis chooses everything: the sticky probability, ramping, the actions
    and every value the reference draws (so it shrinks a failure to its simplest episode)."""
    p = data.draw(probs, label="sticky_action_prob")
    ramping = data.draw(st.booleans(), label="ramping")
    actions = data.draw(actions, label="actions")
    source = HypothesisSource(data)
    return play(adapter, source, p, ramping, from_list(actions), len(actions), after_terminal=after_terminal)


def crafted_inputs(starts, forced, actions) -> dict:
    """The inputs of a crafted-state property, as `@given` keywords: a crafted start, a seed for a
    `SeededSource` with a few forced values, the sticky probability, ramping and the actions."""
    return dict(
        start=starts, seed=st.integers(0, 2**32 - 1), forced=forced, p=PROBS, ramping=st.booleans(), actions=actions
    )


# --- the port's side -----------------------------------------------------------------------------------------


def params_for(episode: Episode) -> EnvParams:
    """The episode's params as the port takes them: `check_params` stores the float64 sticky probability as
    its float32 ceiling, which decides float32 draws exactly as the reference's float64 comparison."""
    p = check_params(EnvParams(sticky_action_prob=episode.sticky_prob)).sticky_action_prob
    return EnvParams(jnp.float32(p), jnp.bool_(episode.ramping), jnp.int32(0))


@functools.cache
def _compiled(adapter: GameAdapter):
    """The jitted reset, start view and chunk scan of one game: compiled once per game and chunk length."""
    env = adapter.env

    def view(state):
        return env.observation(state), adapter.port_fields(state)

    def scan(state, actions, draws, params):
        def body(state, inputs):
            action, step_draws = inputs
            obs, state, reward, _, truncated, _ = env.transition(state, action, step_draws, params)
            return state, (obs, state, reward, truncated, adapter.port_fields(state))

        return jax.lax.scan(body, state, (actions, draws))

    return jax.jit(env.reset_from_draws), jax.jit(view), jax.jit(scan)


def run_chunk(adapter: GameAdapter, state: EnvState, actions, draws: Draws, params: EnvParams):
    """`transition` scanned over one chunk of actions and draws: (last state, (obs, states, rewards,
    truncated, port fields)), each with a leading time axis. Shared with tests that drive the port alone."""
    return _compiled(adapter)[2](state, actions, draws, params)


def bridge(adapter: GameAdapter, logs: list[list[Call]], length: int, filler_seed: int) -> Draws:
    """The reference's per-step calls as `Draws` of `length` steps: the sticky uniform is each step's first
    call, the game's draws come from the adapter; what the reference did not draw is random filler."""
    rng = np.random.default_rng(filler_seed)
    sticky = rng.random(length, np.float32)
    for t, calls in enumerate(logs):
        assert calls and (calls[0].method, calls[0].args) == STICKY_CALL, f"step {t}: no sticky draw first: {calls}"
        sticky[t] = calls[0].value
    try:
        game = adapter.game_draws([calls[1:] for calls in logs], rng, length)
    except (IndexError, TypeError, ValueError) as error:  # name the step whose calls the adapter cannot read
        for t, calls in enumerate(logs):
            try:
                adapter.game_draws([calls[1:]], np.random.default_rng(0), 1)
            except (IndexError, TypeError, ValueError):
                raise AssertionError(f"step {t}: calls {calls} do not fit the game's draws ({error!r})") from error
        raise
    return Draws(sticky=sticky, game=game)


@functools.cache
def _draw_spec(env: Environment):
    """The shapes and dtypes of one step's `sample_draws`, which the bridged draws must mirror."""
    params = env.default_params()
    state = jax.eval_shape(env.reset, jax.random.key(0), params)[1]
    spec = jax.eval_shape(env.sample_draws, jax.random.key(1), state, params)
    return jax.tree.map(lambda leaf: (leaf.shape, np.dtype(leaf.dtype)), spec)


def _check_draw_layout(env: Environment, draws: Draws) -> None:
    """The bridged draws have `sample_draws`'s structure, shapes and dtypes, so the replay feeds `transition`
    exactly what `step` would."""
    got = jax.tree.map(lambda leaf: (np.shape(leaf)[1:], np.asarray(leaf).dtype), draws)
    assert got == _draw_spec(env), f"bridged draws {got} differ from sample_draws' {_draw_spec(env)}"


def replay(adapter: GameAdapter, episode: Episode, draws: Draws | None = None, reset_draws=None, filler_seed=0):
    """Replay `episode` through the port, chunk by chunk, with the bridged draws (or the given ones)."""
    env, n = adapter.env, episode.n
    reset, view, _ = _compiled(adapter)
    params = params_for(episode)
    if episode.start is None:
        state = reset(adapter.reset_draws(episode.reset_log) if reset_draws is None else reset_draws, params)[1]
    else:
        state = adapter.port_start(episode.start)
    state0 = state
    length = -(-max(n, 1) // CHUNK) * CHUNK
    actions = np.zeros(length, np.int32)
    actions[:n] = episode.actions
    if draws is None:
        draws = bridge(adapter, episode.logs, length, filler_seed)
    else:
        draws = jax.tree.map(lambda a: np.resize(np.asarray(a), (length, *np.shape(a)[1:])), draws)
    _check_draw_layout(env, draws)
    outs = []
    for c in range(length // CHUNK):
        part = slice(c * CHUNK, (c + 1) * CHUNK)
        state, out = run_chunk(adapter, state, actions[part], jax.tree.map(lambda a, s=part: a[s], draws), params)
        outs.append(out)
    obs, states, rewards, truncated, fields = jax.tree.map(lambda *a: np.concatenate(a)[:n], *jax.device_get(outs))
    with_start = lambda first, rest: np.concatenate([np.asarray(first)[None], rest])
    obs, fields, states = jax.tree.map(with_start, jax.device_get((*view(state0), state0)), (obs, fields, states))
    fields |= adapter.port_records(states)
    return Replay(obs=obs, states=states, rewards=rewards, truncated=truncated, fields=fields)


# --- comparison -----------------------------------------------------------------------------------------------


def _differs(got, want, rows: int) -> np.ndarray:
    """Per row: does the port's value differ from the reference's?"""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"shape {got.shape} vs reference {want.shape}"
    return np.asarray(got != want).reshape(rows, -1).any(axis=1)


def _show(value) -> str:
    value = np.asarray(value) if not isinstance(value, tuple) else value
    return str(value.tolist() if isinstance(value, np.ndarray) else value).replace("\n", " ")


def _detail(name: str, got, want) -> str:
    """One differing field, readably: small values in full, large arrays by their differing cells."""
    if isinstance(want, np.ndarray) and want.size > 16:
        cells = np.argwhere(np.asarray(got) != want)
        return f"{name}: differs at {cells.tolist()[:12]} (maxatar {np.asarray(got)[tuple(cells.T)].tolist()[:12]})"
    return f"{name}: maxatar {_show(got)} vs reference {_show(want)}"


def sides(episode: Episode, port: Replay) -> tuple[dict, dict]:
    """What is compared at every state row, as {field: rows} for the port and for the reference: the
    observation, reward, terminal flag, executed action and the game's internal fields."""
    got = {
        "obs": port.obs,
        "reward": np.concatenate([[0.0], port.rewards.astype(np.float64)]),
        "terminal": port.states.terminated,
        "last_action": port.states.last_action,
        **port.fields,
    }
    want = {
        "obs": episode.obs,
        "reward": np.concatenate([[0.0], episode.rewards]),
        "terminal": episode.terminal,
        "last_action": episode.last_action,
        **episode.fields,
    }
    assert set(port.fields) == set(episode.fields), f"fields {set(port.fields) ^ set(episode.fields)} on one side"
    return got, want


def first_mismatch(adapter: GameAdapter, episode: Episode, port: Replay) -> tuple[int, str] | None:
    """The first state row at which the port and the reference differ, with a report naming the step, the
    differing fields and their values; None if every row agrees."""
    rows = episode.n + 1
    zero = np.zeros(1, bool)
    got, want = sides(episode, port)
    bad = {name: _differs(got[name], want[name], rows) for name in want}
    bad["obs"] &= episode.obs_ok  # where the reference's observation crashed, only the state is compared
    bad["truncated (never in the reference)"] = np.concatenate([zero, port.truncated])
    bad |= {f"port fault: {name}": np.asarray(v) for name, v in adapter.port_faults(port.states).items()}
    any_bad = np.any(list(bad.values()), axis=0)
    if not any_bad.any():
        return None
    row = int(np.argmax(any_bad))
    names = [name for name, b in bad.items() if b[row]]
    if row == 0:
        where = "at the start (" + ("reset" if episode.start is None else f"crafted state {episode.start}") + ")"
        context = f"reset calls {episode.reset_log}"
    else:
        t = row - 1
        where = f"after step {t} (of {episode.n})"
        context = f"action {episode.actions[t]}, executed {episode.last_action[row]}, calls {episode.logs[t]}"
    lines = [f"{where}: {', '.join(names)} differ(s) [{context}]"]
    lines += [_detail(name, got[name][row], want[name][row]) for name in names if name in want]
    if row:
        before = {k: v[row - 1] for k, v in episode.fields.items()}
        small = [f"{k}={_show(v)}" for k, v in before.items() if isinstance(v, tuple) or np.size(v) <= 8]
        lines.append(f"reference before the step: {', '.join(small)}")
    return row, "\n  ".join(lines)


def check_draw_calls(adapter: GameAdapter, episode: Episode, port: Replay, steps: int | None = None) -> None:
    """The reference's reset made exactly `reset_calls`, and each step (the first `steps`) exactly the sticky
    uniform, float32-exact, then the calls the port's state before that step implies."""
    got = [(c.method, c.args) for c in episode.reset_log]
    assert got == list(adapter.reset_calls), f"reset: reference drew {got}, expected {list(adapter.reset_calls)}"
    steps = episode.n if steps is None else steps
    pre = jax.tree.map(lambda a: a[: episode.n], port.states)
    expected = adapter.step_calls(pre, episode)
    for t, calls in enumerate(episode.logs[:steps]):
        got = [(c.method, c.args) for c in calls]
        want = [STICKY_CALL, *expected[t]]
        assert got == want, f"step {t}: reference drew {got}, the port's state implies {want}"
        assert float(np.float32(calls[0].value)) == calls[0].value, f"step {t}: sticky draw not float32"


def check_parity(
    adapter: GameAdapter, episode: Episode, draws: Draws | None = None, reset_draws=None, filler_seed: int = 0
) -> Replay:
    """Replay `episode` through the port and assert it matches the reference at every row and that the
    reference drew what the port's states imply; returns the port's side for further assertions. Draws are
    checked up to the first mismatch first: a wrong draw explains a mismatch better than the mismatch does."""
    port = replay(adapter, episode, draws, reset_draws, filler_seed)
    mismatch = first_mismatch(adapter, episode, port)
    check_draw_calls(adapter, episode, port, steps=None if mismatch is None else mismatch[0])
    if mismatch is not None:
        raise AssertionError(mismatch[1])
    return port


# --- draw distributions ---------------------------------------------------------------------------------------


def assert_thresholds_exact(pairs) -> None:
    """`u < c32` on a float32 u gives the float64 answer `u < c` for every float32 u, for each (c, c32): the
    comparison is monotone, so checking the float32 neighbours of c32 suffices."""
    for c, c32 in pairs:
        below = np.nextafter(c32, np.float32(0))
        above = np.nextafter(c32, np.float32(1))
        for u in (below, c32, above):
            assert (float(u) < c) == bool(u < c32), (c, u)
