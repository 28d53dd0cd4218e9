"""DQN with a uniform replay buffer and a target network, as one jitted JAX program.

The defaults reproduce the DQN of MinAtar's `examples/dqn.py` (Young & Tian, 2019): one 3x3 convolution with
16 filters, a 128-unit hidden layer, batch 32, a 100k replay buffer that starts feeding updates after 5k
frames of uniformly random play, one update per frame, a target copy every 1000 updates, epsilon annealed
from 1.0 to 0.1 over the 100k frames after that, gamma 0.99, Huber loss and centred RMSProp (lr 2.5e-4,
decay 0.95, eps 0.01 added outside the square root, as PyTorch does), 5M frames with sticky actions (0.1) and
difficulty ramping on.

Read top to bottom: `Config` and `PRESETS`; the transition stored in the replay buffer; `make_program`, which
builds the pure functions `init(key)`, `interval(state, t0)` (one logging interval of environment steps and
updates, under `lax.scan`) and `evaluate(state)` (the greedy policy over many episodes, inside JAX);
`make_train(config) -> train(key)`, the whole run as one jitted, vmappable function; the command line.

    python -m maxatar_agents.dqn --env maxatar/Breakout-v0 --preset minatar --seeds 4 --out runs/breakout
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import flashbax as fbx
import jax
import jax.numpy as jnp
import optax

from maxatar.core import AutoReset, uniform, uniform_to_int
from maxatar_agents.common import Program, env_from_config, run_whole, schedule, tie_to_seed
from maxatar_agents.evaluation import EpisodeStats, episode_stats_init, episode_stats_update, evaluate, recent_return
from maxatar_agents.networks import make_network

ALGORITHM = "dqn"
DEFAULT_PRESET = "minatar"


@dataclasses.dataclass(frozen=True)
class Config:
    """Every knob of a run. Defaults: MinAtar's examples/dqn.py. Frames count environment steps of one seed
    over all its vectorised environments."""

    env_id: str = "maxatar/Breakout-v0"
    total_steps: int = 5_000_000  # frames per seed (rounded up to whole logging intervals)
    num_envs: int = 1  # environments stepped together (vmap) per seed
    buffer_size: int = 100_000  # transitions kept (split evenly between the environments)
    learning_starts: int = 5_000  # frames of uniformly random play before the first update
    batch_size: int = 32
    train_every: int = 1  # vector steps between two updates
    target_update_every: int = 1_000  # updates between target updates
    tau: float = 1.0  # target <- tau * online + (1 - tau) * target (1: MinAtar's hard copy)
    epsilon_start: float = 1.0
    epsilon_end: float = 0.1
    epsilon_frames: int = 100_000  # frames of linear decay, counted from learning_starts
    gamma: float = 0.99
    n_step: int = 1  # n-step returns (1: MinAtar's one-step target); episode ends inside the n steps cut them
    double_q: bool = False  # Double DQN target (van Hasselt et al., 2016): online argmax, target value
    optimizer: str = "rmsprop"  # "rmsprop" (centred, as the reference) or "adam"
    lr: float = 2.5e-4
    lr_decay: bool = False  # decay the step size linearly to 0 over the run (the reference keeps it fixed)
    rms_decay: float = 0.95
    rms_eps: float = 0.01
    adam_eps: float = 1e-8
    max_grad_norm: float = 0.0  # 0: no clipping (the reference does not clip)
    hidden: tuple[int, ...] = (128,)  # dense layers after the observation encoder
    conv_features: int = 16  # filters of the MinAtar 3x3 convolution (MinAtar games only)
    sticky_action_prob: float | None = None  # None: the environment's default (0.1 for MinAtar games)
    difficulty_ramping: bool | None = None  # None: the environment's default (on)
    log_points: int = 100  # logged points over the run; also the unit of resumable chunks
    eval_episodes: int = 100  # final greedy evaluation, all episodes in parallel
    eval_max_steps: int = 10_000  # safety cap on an evaluation episode's length
    # Evaluate the greedy policy after every logging interval and keep the best params (SB3's EvalCallback
    # "best model"); the final evaluation, checkpoints' policy and load_policy then use those. DQN's greedy
    # policy on CartPole swings between ~100 and 500 from one interval to the next, so the last params are
    # a lottery: see the `cartpole` preset.
    keep_best: bool = False
    keep_best_episodes: int = 10  # episodes of each of those evaluations (all in parallel)

    def __post_init__(self):
        positive = ["total_steps", "num_envs", "buffer_size", "batch_size", "train_every", "target_update_every"]
        positive += ["n_step", "log_points", "eval_episodes", "eval_max_steps", "keep_best_episodes"]
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 < self.tau <= 1.0:
            raise ValueError(f"tau must be in (0, 1], got {self.tau}")
        if self.optimizer not in ("rmsprop", "adam"):
            raise ValueError(f"optimizer must be 'rmsprop' or 'adam', got {self.optimizer!r}")
        if self.buffer_size // self.num_envs < self.n_step + 1:
            raise ValueError("buffer_size must hold at least n_step + 1 transitions per environment")
        if self.learning_starts < self.batch_size:
            raise ValueError("learning_starts must be at least batch_size (the buffer must hold a batch)")


PRESETS: dict[str, dict[str, Any]] = {
    # MinAtar's examples/dqn.py, exactly the defaults above.
    "minatar": {},
    # Tuned for wall-clock time: 16 environments per seed and one update of 128 samples per vector step (8
    # samples per frame instead of 32: 16x fewer, 4x larger updates), a target copy every 250 updates (4000
    # frames), and the three DQN refinements that paid off on Breakout (measured in benchmarks/agents_bench.py;
    # see the README): 3-step returns, the Double DQN target and Adam (Rainbow's lr 2.5e-4 and eps 1.5e-4).
    # The exploration schedule, network, Huber loss and replay size stay MinAtar's. 2M frames.
    "fast": dict(
        num_envs=16,
        batch_size=128,
        target_update_every=250,
        n_step=3,
        double_q=True,
        optimizer="adam",
        lr=2.5e-4,
        adam_eps=1.5e-4,
        total_steps=2_000_000,
    ),
    # CartPole-v1 in 100k frames: one environment, an update of 64 samples every 2 frames with Adam and
    # gradient clipping, a target copy every 128 updates, a wider network and a short epsilon decay
    # (close to the RL Baselines3 Zoo settings). DQN's greedy policy on CartPole is unstable from one interval
    # to the next (measured over 4 seeds: final returns 500, 104, 174, 109), so the preset keeps the best
    # evaluated params (`keep_best`); see benchmarks/agents_bench.py.
    "cartpole": dict(
        env_id="maxatar/CartPole-v1",
        total_steps=100_000,
        buffer_size=100_000,
        learning_starts=1_000,
        batch_size=64,
        train_every=2,
        target_update_every=128,
        epsilon_frames=8_000,
        epsilon_end=0.04,
        optimizer="adam",
        lr=1e-3,
        max_grad_norm=10.0,
        hidden=(256, 256),
        log_points=50,
        keep_best=True,
    ),
}


class Transition(NamedTuple):
    """What one environment step adds to the buffer. The buffer samples runs of n + 1 consecutive steps, so
    the observation n steps later is the `obs` of the run's last item and is stored only once."""

    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array


def n_step_target(sequence: Transition, next_q: jax.Array, gamma: float) -> tuple[jax.Array, jax.Array]:
    """The n-step target r_0 + gamma r_1 + ... + gamma^(n-1) r_(n-1) + gamma^n Q(s_n) of sampled runs of n + 1
    steps (fields shaped (batch, n + 1); `next_q` is Q(s_n)), cut at the first episode end in the window,
    and whether each sample is usable.

    With auto-reset, the item after an episode's last step is the next episode's first observation. That is
    harmless after a termination (no bootstrap) but wrong after a time-limit truncation, so windows cut by a
    truncation are left out of the loss rather than bootstrapped from the wrong state.
    """
    n = sequence.reward.shape[1] - 1
    ended = sequence.terminated[:, :n] | sequence.truncated[:, :n]
    target = next_q
    for k in reversed(range(n)):  # n is small and static: unrolled
        target = sequence.reward[:, k] + gamma * jnp.where(ended[:, k], 0.0, target)
    first_end = jnp.cumsum(ended, axis=1) - ended == 0  # no episode end before step k
    cut_by_truncation = jnp.any(first_end & sequence.truncated[:, :n] & ~sequence.terminated[:, :n], axis=1)
    return target, ~cut_by_truncation


class TrainState(NamedTuple):
    params: Any
    target_params: Any
    opt_state: Any
    buffer: Any  # flashbax TrajectoryBufferState of Transition
    env_state: Any
    obs: jax.Array
    stats: EpisodeStats
    key: jax.Array
    best_params: Any  # with `keep_best`: the params of the best evaluation so far (else unused)
    best_return: jax.Array  # () mean return of that evaluation (-inf before the first)


def make_optimizer(config: Config, num_updates: int) -> optax.GradientTransformation:
    lr = optax.linear_schedule(config.lr, 0.0, num_updates) if config.lr_decay else config.lr
    if config.optimizer == "rmsprop":
        # PyTorch's centred RMSProp adds eps outside the square root; optax's default puts it inside.
        opt = optax.rmsprop(lr, decay=config.rms_decay, eps=config.rms_eps, centered=True, eps_in_sqrt=False)
    else:
        opt = optax.adam(lr, eps=config.adam_eps)
    return optax.chain(optax.clip_by_global_norm(config.max_grad_norm), opt) if config.max_grad_norm > 0 else opt


@functools.lru_cache(maxsize=16)
def make_program(config: Config) -> Program:
    """The pure pieces of a run: `init`, `interval` (one logging interval), `evaluate`. Cached so that
    several runs of one config in a process share compiled code."""
    env, env_params = env_from_config(config)
    stepper = AutoReset(env)
    network = make_network(env, config.hidden, config.conv_features)
    sched = schedule(config.total_steps, config.log_points, config.num_envs)
    start = -(-config.learning_starts // config.num_envs)  # first vector step that may update
    total_vector_steps = sched.num_intervals * sched.steps_per_interval
    optimizer = make_optimizer(config, max(1, -(-(total_vector_steps - start) // config.train_every)))
    # Sequences of n + 1 consecutive steps of one environment (with n = 1 exactly flashbax's flat buffer).
    buffer = fbx.make_trajectory_buffer(
        max_length_time_axis=config.buffer_size // config.num_envs,
        min_length_time_axis=max(config.batch_size // config.num_envs + 1, config.n_step + 1),
        add_batch_size=config.num_envs,
        sample_batch_size=config.batch_size,
        sample_sequence_length=config.n_step + 1,
        period=1,
    )
    batched_step = jax.vmap(stepper.step_from_uniforms, in_axes=(0, 0, 0, None))

    def epsilon(t: jax.Array) -> jax.Array:
        """Uniformly random play until learning starts, then a linear decay (MinAtar's schedule)."""
        progress = (t - start) * config.num_envs / config.epsilon_frames
        decayed = config.epsilon_start + (config.epsilon_end - config.epsilon_start) * jnp.clip(progress, 0.0, 1.0)
        return jnp.where(t < start, 1.0, decayed)

    def init(key: jax.Array) -> TrainState:
        key, net_key, env_key = jax.random.split(key, 3)
        obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(env_key, config.num_envs), env_params)
        params = network.init(net_key, obs)
        example = Transition(obs[0], jnp.int32(0), jnp.float32(0), jnp.bool_(False), jnp.bool_(False))
        state = TrainState(
            params=params,
            target_params=params,
            opt_state=optimizer.init(params),
            buffer=buffer.init(example),
            env_state=env_state,
            obs=obs,
            stats=episode_stats_init(config.num_envs),
            key=key,
            best_params=params,
            best_return=jnp.float32(-jnp.inf),
        )
        return tie_to_seed(state, key)  # see common.tie_to_seed: chunked runs equal whole runs

    def loss_fn(params, target_params, sequence: Transition):
        """Huber loss between Q(s_0, a_0) and the n-step target with max_a' Q_target(s_n, a') (with
        `double_q` the online network picks a', the target network values it)."""
        last_obs = sequence.obs[:, -1]
        next_q_all = network.apply(target_params, last_obs)
        if config.double_q:
            next_action = network.apply(params, last_obs).argmax(axis=-1)
            next_q = jnp.take_along_axis(next_q_all, next_action[:, None], axis=-1)[:, 0]
        else:
            next_q = next_q_all.max(axis=-1)
        target, usable = n_step_target(sequence, next_q, config.gamma)
        q = network.apply(params, sequence.obs[:, 0])
        q_taken = jnp.take_along_axis(q, sequence.action[:, 0, None], axis=-1)[:, 0]
        valid = usable.astype(jnp.float32)
        loss = jnp.sum(valid * optax.huber_loss(q_taken, jax.lax.stop_gradient(target))) / jnp.maximum(valid.sum(), 1)
        return loss, q_taken.mean()

    def update(params, target_params, opt_state, buffer_state, t: jax.Array, key: jax.Array):
        """One gradient step on a uniform sample; every `target_update_every`-th copies the online network."""
        sequence = buffer.sample(buffer_state, key).experience
        (loss, q_mean), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, target_params, sequence)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        number = (t - start) // config.train_every + 1  # updates so far, this one included
        target_params = jax.lax.cond(
            number % config.target_update_every == 0,
            lambda: optax.incremental_update(params, target_params, config.tau),
            lambda: target_params,
        )
        return params, target_params, opt_state, loss, q_mean

    def no_update(params, target_params, opt_state, buffer_state, t, key):
        return params, target_params, opt_state, jnp.float32(0), jnp.float32(0)

    def env_step(state: TrainState, t: jax.Array):
        """One vector step at global step `t` (unbatched, so `lax.cond` on it stays a branch under vmap)."""
        # One draw covers the step's randomness: explore-or-not, the random action, the environments'.
        key, step_key, update_key = jax.random.split(state.key, 3)
        uniforms = uniform(step_key, (config.num_envs, 2 + stepper.num_uniforms))
        greedy = network.apply(state.params, state.obs).argmax(axis=-1)
        random_action = uniform_to_int(uniforms[:, 1], 0, env.num_actions)
        action = jnp.where(uniforms[:, 0] < epsilon(t), random_action, greedy).astype(jnp.int32)
        obs, env_state, reward, terminated, truncated, _ = batched_step(
            uniforms[:, 2:], state.env_state, action, env_params
        )
        stored = Transition(state.obs, action, reward, terminated, truncated)
        state = state._replace(
            buffer=buffer.add(state.buffer, jax.tree.map(lambda x: x[:, None], stored)),  # a time axis of 1
            env_state=env_state,
            obs=obs,
            stats=episode_stats_update(state.stats, reward, terminated | truncated),
            key=key,
        )
        # Only the learning state goes through the branch: the buffer is read, never returned, so the
        # compiler need not copy it.
        learn = (t >= start) & ((t - start) % config.train_every == 0)
        params, target_params, opt_state, loss, q_mean = jax.lax.cond(
            learn, update, no_update, state.params, state.target_params, state.opt_state, state.buffer, t, update_key
        )
        state = state._replace(params=params, target_params=target_params, opt_state=opt_state)
        return state, (loss, q_mean, learn)

    def interval(state: TrainState, t0: jax.Array) -> tuple[TrainState, dict[str, jax.Array]]:
        """`sched.steps_per_interval` vector steps starting at global step `t0`, and what to log about them."""
        steps = t0 + jnp.arange(sched.steps_per_interval, dtype=jnp.int32)
        state, (loss, q_mean, learned) = jax.lax.scan(env_step, state, steps)
        n = jnp.maximum(learned.sum(), 1)
        t_end = t0 + sched.steps_per_interval
        metrics = {
            "frames": t_end * config.num_envs,
            "episodes": state.stats.finished,
            "recent_return": recent_return(state.stats),
            "loss": jnp.sum(loss) / n,
            "q_mean": jnp.sum(q_mean) / n,
            "epsilon": epsilon(t_end - 1),
        }
        if config.keep_best:
            # A key derived from the interval's end, not drawn from the training stream: keeping the best
            # params changes nothing about the training itself.
            key = jax.random.fold_in(state.key, t_end)
            act_now = functools.partial(act, state.params)
            returns = evaluate(env, env_params, act_now, key, config.keep_best_episodes, config.eval_max_steps)
            score = returns.mean()
            better = score >= state.best_return  # ties go to the later, longer-trained params
            state = state._replace(
                best_params=jax.tree.map(lambda new, old: jnp.where(better, new, old), state.params, state.best_params),
                best_return=jnp.where(better, score, state.best_return),
            )
            metrics["eval_return"] = score
            metrics["best_eval_return"] = state.best_return
        return state, metrics

    def act(params, obs: jax.Array) -> jax.Array:
        """The greedy policy (any leading batch axes)."""
        return network.apply(params, obs).argmax(axis=-1).astype(jnp.int32)

    policy_field = "best_params" if config.keep_best else "params"

    def evaluate_state(state: TrainState) -> jax.Array:
        key = jax.random.fold_in(state.key, 1)
        act_batch = functools.partial(act, getattr(state, policy_field))
        return evaluate(env, env_params, act_batch, key, config.eval_episodes, config.eval_max_steps)

    return Program(
        config=config,
        init=init,
        interval=interval,
        evaluate=evaluate_state,
        act=act,
        policy_field=policy_field,
        schedule=sched,
    )


class TrainResult(NamedTuple):
    state: TrainState
    metrics: dict[str, jax.Array]  # one entry per logged point
    eval_returns: jax.Array  # (eval_episodes,) returns of the final greedy policy


def make_train(config: Config):
    """`train(key) -> TrainResult`: the whole run, pure. `jax.jit(jax.vmap(train))(keys)` trains many seeds."""
    program = make_program(config)

    def train(key: jax.Array) -> TrainResult:
        state, metrics = run_whole(program, key)
        return TrainResult(state, metrics, program.evaluate(state))

    return train


if __name__ == "__main__":
    from maxatar_agents.cli import main

    main(ALGORITHM)
