"""DQN with a uniform replay buffer and a target network, as one jitted JAX program.

The defaults reproduce the DQN of MinAtar's `examples/dqn.py` (Young & Tian, 2019): one 3x3 convolution with
16 filters, a 128-unit hidden layer, batch 32, a 100k replay buffer that starts feeding updates after 5k
frames of uniformly random play, one update per frame, a target copy every 1000 updates, epsilon annealed
from 1.0 to 0.1 over the 100k frames after that, gamma 0.99, Huber loss and centred RMSProp (lr 2.5e-4,
decay 0.95, eps 0.01 added outside the square root, as PyTorch does), 5M frames with sticky actions (0.1) and
difficulty ramping on.

Read top to bottom: `Config` and `PRESETS`; the loss (`td_loss`, on the skeleton's `n_step_target`); the
learner (DQN's part of the training state); the optimiser; `make_program`, which gives the off-policy skeleton
(`off_policy.py`: acting, stepping, the replay buffer, the update schedule) DQN's own pieces: initial params,
the epsilon-greedy acting rule, the update and what to log; `make_train(config) -> train(key)`, the whole run
as one jitted, vmappable function.

    python -m maxatar_agents.dqn --env maxatar/Breakout-v0 --preset minatar --seeds 4 --out runs/breakout
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from maxatar.prng import uniform_to_int
from maxatar_agents.algorithms import off_policy, program
from maxatar_agents.algorithms.config import env_from_config
from maxatar_agents.algorithms.fields import knob
from maxatar_agents.algorithms.networks import hidden_activations, make_network
from maxatar_agents.algorithms.off_policy import Transition
from maxatar_agents.algorithms.program import Program

ALGORITHM = "dqn"
DEFAULT_PRESET = "minatar"  # the MinAtar games


@dataclasses.dataclass(frozen=True)
class Config(off_policy.OffPolicyConfig):
    """Every knob of a run: the skeleton's (`off_policy.OffPolicyConfig`: environment, frames, replay, update
    schedule, network, evaluation), whose defaults are MinAtar's examples/dqn.py, and DQN's own below."""

    epsilon_start: float = knob(1.0, "exploration rate when learning starts")
    epsilon_end: float = knob(0.1, "exploration rate after the decay")
    epsilon_frames: int = knob(100_000, "frames of linear decay, counted from learning_starts")
    n_step: int = knob(1, "n-step returns (1: MinAtar's one-step target); episode ends inside the n steps cut them")
    double_q: bool = knob(False, "Double DQN target (van Hasselt et al., 2016): online argmax, target value")
    optimizer: str = knob("rmsprop", '"rmsprop" (centred, as the reference) or "adam"')
    lr: float = knob(2.5e-4, "step size")
    lr_decay: bool = knob(False, "decay the step size linearly to 0 over the run (the reference keeps it fixed)")
    rms_decay: float = knob(0.95, "RMSProp's decay of the squared-gradient average")
    rms_eps: float = knob(0.01, "RMSProp's epsilon (outside the square root)")
    adam_eps: float = knob(1e-8, "Adam's epsilon")
    max_grad_norm: float = knob(0.0, "0: no clipping (the reference does not clip)")

    def __post_init__(self):
        """The skeleton's checks, then DQN's."""
        super().__post_init__()
        if self.buffer_size // self.num_envs < self.n_step + 1:
            raise ValueError("buffer_size must hold at least n_step + 1 transitions per environment")


# A preset's settings go on a few lines by theme (run, replay and updates, exploration, optimiser, network).
# fmt: off
PRESETS: dict[str, dict[str, Any]] = {
    # MinAtar's examples/dqn.py, exactly the defaults above.
    "minatar": {},
    # Tuned for wall-clock time: 16 environments per seed and one update of 128 samples per vector step (8
    # samples per frame instead of 32: 16x fewer, 4x larger updates), a target copy every 250 updates (4000
    # frames), and the three DQN refinements that paid off on Breakout (measured in benchmarks/agents_bench.py;
    # see the README): 3-step returns, the Double DQN target and Adam (Rainbow's lr 2.5e-4 and eps 1.5e-4).
    # The exploration schedule, network, Huber loss and replay size stay MinAtar's. 2M frames.
    "fast": dict(
        total_steps=2_000_000, num_envs=16,
        batch_size=128, target_update_every=250, n_step=3, double_q=True,
        optimizer="adam", lr=2.5e-4, adam_eps=1.5e-4,
    ),
    # Continual MinAtar, C-CHAIN's protocol (SpaceInvaders -> Asterix -> Seaquest, 2M frames each, one pass, the
    # observations front-padded to 10 channels, the full action set) with its agent, Double DQN, on `fast`'s
    # wall-clock settings.
    "c-chain": dict(
        env_id="maxatar/MinAtar-Continual-v0", protocol="c-chain", total_steps=6_000_000, log_points=60,
        num_envs=16, batch_size=128, target_update_every=250, n_step=3, double_q=True,
        optimizer="adam", lr=2.5e-4, adam_eps=1.5e-4,
    ),
    # CartPole-v1 in 100k frames: 4 environments and one update of 64 samples per vector step with Adam
    # and gradient clipping, a target copy every 128 updates, a short epsilon decay (close to the RL
    # Baselines3 Zoo settings). DQN's greedy policy on CartPole is unstable from one interval to the next,
    # so the preset keeps the best evaluated params (`keep_best`); see benchmarks/agents_bench.py.
    "cartpole": dict(
        env_id="maxatar/CartPole-v1", total_steps=100_000, num_envs=4, log_points=50, keep_best=True,
        buffer_size=100_000, learning_starts=1_000, batch_size=64, train_every=1, target_update_every=128,
        epsilon_frames=8_000, epsilon_end=0.04,
        optimizer="adam", lr=1e-3, max_grad_norm=10.0,
        hidden=(128, 128),
    ),
    # Doors: 8 environments, an update of 64 samples per vector step with Adam, 3-step returns (the reward
    # is the step's progress towards the goal, so short returns carry the signal), a 50k-frame decay.
    "doors": dict(
        env_id="maxatar/Doors-v0", total_steps=200_000, num_envs=8, log_points=20,
        buffer_size=50_000, learning_starts=2_000, batch_size=64, target_update_every=250, n_step=3,
        epsilon_frames=50_000, epsilon_end=0.05,
        optimizer="adam", lr=1e-3,
    ),
}
# fmt: on

# What `python -m maxatar_agents.sweep` searches by default (`sweep.load_space`).
SEARCH_SPACE: dict[str, dict[str, Any]] = {
    "lr": {"low": 1e-4, "high": 3e-3, "log": True},
    "gamma": {"low": 0.95, "high": 0.999},
    "batch_size": {"choices": [32, 64, 128]},
    "target_update_every": {"choices": [1, 32, 128, 512]},
    "n_step": {"low": 1, "high": 5},
    "epsilon_end": {"low": 0.01, "high": 0.1},
}


def td_loss(
    params: Any,
    target_params: Any,
    sequence: Transition,
    *,
    q_values: Callable,
    gamma: float,
    double_q: bool,
) -> tuple[jax.Array, jax.Array]:
    """Huber loss between Q(s_0, a_0) and the n-step target with max_a' Q_target(s_n, a') over sampled runs
    of n + 1 steps, and the mean Q(s_0, a_0) (to log). With `double_q` the online network picks a' and the
    target network values it, which curbs the max operator's overestimation. `q_values(params, obs)` is the
    network. Samples cut by a truncation count for nothing (see `off_policy.n_step_target`)."""
    last_obs = sequence.obs[:, -1]
    next_q_all = q_values(target_params, last_obs)
    if double_q:
        next_action = q_values(params, last_obs).argmax(axis=-1)
        next_q = jnp.take_along_axis(next_q_all, next_action[:, None], axis=-1)[:, 0]
    else:
        next_q = next_q_all.max(axis=-1)
    target, usable = off_policy.n_step_target(sequence, next_q, gamma)
    q = q_values(params, sequence.obs[:, 0])
    q_taken = jnp.take_along_axis(q, sequence.action[:, 0, None], axis=-1)[:, 0]
    valid = usable.astype(jnp.float32)
    loss = jnp.sum(valid * optax.huber_loss(q_taken, jax.lax.stop_gradient(target))) / jnp.maximum(valid.sum(), 1)
    return loss, q_taken.mean()


class Learner(NamedTuple):
    """DQN's part of the training state (`program.TrainState.learner`): what an update changes."""

    params: Any
    target_params: Any
    opt_state: Any


def make_optimizer(config: Config) -> optax.GradientTransformation:
    """The reference's centred RMSProp or Adam, with optional global-norm clipping and linear decay."""
    lr = optax.linear_schedule(config.lr, 0.0, off_policy.num_updates(config)) if config.lr_decay else config.lr
    if config.optimizer == "rmsprop":
        # PyTorch's centred RMSProp adds eps outside the square root; optax's default puts it inside.
        opt = optax.rmsprop(lr, decay=config.rms_decay, eps=config.rms_eps, centered=True, eps_in_sqrt=False)
    else:
        opt = optax.adam(lr, eps=config.adam_eps)
    return program.clip_then(config.max_grad_norm, opt)


@functools.lru_cache(maxsize=16)
def make_program(config: Config) -> Program:
    """DQN's pieces in the off-policy skeleton. Cached so that several runs of one config in a process share
    compiled code."""
    env, env_params = env_from_config(config)
    network = make_network(env, config.hidden, config.conv_features)
    optimizer = make_optimizer(config)
    loss_fn = program.bind_config(td_loss, config, "gamma", "double_q", q_values=network.apply)
    start = off_policy.first_update_step(config)

    def epsilon(t: jax.Array) -> jax.Array:
        """Uniformly random play until learning starts, then a linear decay (MinAtar's schedule)."""
        progress = (t - start) * config.num_envs / config.epsilon_frames
        decayed = config.epsilon_start + (config.epsilon_end - config.epsilon_start) * jnp.clip(progress, 0.0, 1.0)
        return jnp.where(t < start, 1.0, decayed)

    def init(keys: list[jax.Array], obs: jax.Array) -> Learner:
        """One network; the target starts as a copy of it."""
        params = network.init(keys[0], obs)
        return Learner(params=params, target_params=params, opt_state=optimizer.init(params))

    def act(params, obs: jax.Array) -> jax.Array:
        """The greedy policy (any leading batch axes): what evaluation plays, and what exploration deviates from."""
        return network.apply(params, obs).argmax(axis=-1).astype(jnp.int32)

    def explore(learner: Learner, obs: jax.Array, uniforms: jax.Array, t: jax.Array):
        """Epsilon-greedy: the first uniform decides whether to explore, the second picks the random action."""
        random_action = uniform_to_int(uniforms[:, 1], 0, env.num_actions)
        return jnp.where(uniforms[:, 0] < epsilon(t), random_action, act(learner.params, obs)).astype(jnp.int32), ()

    def update(learner: Learner, sequence: Transition, number: jax.Array):
        """One gradient step on a uniform sample, then the target update."""
        (loss, q_mean), params, opt_state = program.gradient_update(
            loss_fn, optimizer, learner.params, learner.opt_state, learner.target_params, sequence
        )
        target_params = off_policy.update_target(params, learner.target_params, number, config)
        return Learner(params, target_params, opt_state), (loss, q_mean)

    def report(learner: Learner, mean_logs, t_end: jax.Array) -> dict[str, jax.Array]:
        """The interval's mean loss and Q, and the current epsilon."""
        loss, q_mean = mean_logs
        return {"loss": loss, "q_mean": q_mean, "epsilon": epsilon(t_end - 1)}

    def renew(learner: Learner) -> Learner:
        """A fresh optimiser state (a continual run's `reset_optimizer`)."""
        return learner._replace(opt_state=optimizer.init(learner.params))

    agent = program.Agent(
        init=init,
        explore=explore,
        learn=off_policy.Learning(config.n_step + 1, update, renew),
        report=report,
        act=act,
        features=functools.partial(hidden_activations, network),
    )
    return off_policy.assemble(config, env, env_params, agent)


make_train = program.make_train_for(make_program)
