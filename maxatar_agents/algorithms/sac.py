"""Soft actor-critic for discrete actions, as one jitted JAX program.

Discrete SAC (Christodoulou, 2019): with a finite action set the policy's distribution is explicit, so every
expectation over actions is an exact sum instead of a sampled estimate, in all three losses:

* critics (two, with target copies):  Q_i(s, a) -> r + gamma * sum_a' pi(a'|s') [min_j Qtarget_j(s', a')
  - alpha log pi(a'|s')]  (no bootstrap at termination; with `n_step`, the n-step return bootstraps from the
  n-th state, and `critic_target="mean"` averages the two target critics instead of taking the smaller, the
  "double average" of Zhou et al., 2022; `"blend"` takes mean_j - critic_pessimism * |Q1 - Q2| / 2, between
  the two, as Moskovitz et al.'s "Tactical Optimism and Pessimism", 2021);
* actor:  sum_a pi(a|s) [alpha log pi(a|s) - min_j Q_j(s, a)];
* temperature:  sum_a pi(a|s) [-alpha (log pi(a|s) + target_entropy)], which raises alpha when the policy's
  entropy falls below `target_entropy = target_entropy_scale * log(num_actions)`.

The defaults are the paper's Atari settings (Adam lr 3e-4 for all three, batch 64, a 1M buffer, 20k random
steps first, one update every 4 steps, a hard target copy every 8000 updates, target entropy 0.98 of the
maximum, gamma 0.99), on the MinAtar network and MinAtar's 5M-frame budget. Evaluation plays the most
probable action.

Read top to bottom: `Config` and `PRESETS`; the three losses (`critic_loss`, `actor_loss`, `alpha_loss`);
the learner (SAC's part of the training state); `make_program`, which gives the off-policy skeleton
(`off_policy.py`) SAC's own pieces: initial networks, sampling from the policy, the update and what to log;
`make_train`.

    python -m maxatar_agents.sac --env maxatar/Breakout-v0 --preset minatar --seeds 4 --out runs/breakout-sac
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from maxatar.prng import uniform_to_int
from maxatar_agents.algorithms import off_policy, program
from maxatar_agents.algorithms.config import env_from_config
from maxatar_agents.algorithms.fields import ConfigError, knob
from maxatar_agents.algorithms.networks import make_network
from maxatar_agents.algorithms.off_policy import Transition
from maxatar_agents.algorithms.program import Program

ALGORITHM = "sac"
TITLE = "SAC (discrete)"  # its docs page's title
DEFAULT_PRESET = "minatar"  # the MinAtar games


@dataclasses.dataclass(frozen=True)
class Config(off_policy.OffPolicyConfig):
    """Every knob of a run: the skeleton's (`off_policy.OffPolicyConfig`: environment, frames, replay, update
    schedule, network, evaluation) and SAC's own. Defaults: Christodoulou (2019), Table 1, except the
    environment, frame budget and network (MinAtar's)."""

    buffer_size: int = 1_000_000
    learning_starts: int = 20_000
    batch_size: int = 64
    train_every: int = 4
    target_update_every: int = 8_000
    actor_lr: float = knob(3e-4, "Adam step size of the policy")
    critic_lr: float = knob(3e-4, "Adam step size of the two critics")
    alpha_lr: float = knob(3e-4, "Adam step size of the temperature (log alpha)")
    adam_eps: float = knob(1e-4, "larger than Adam's 1e-8, which is unstable for the temperature")
    initial_alpha: float = knob(1.0, "the temperature before the first update")
    target_entropy_scale: float = knob(0.98, "target entropy as a fraction of the maximum, log(num_actions)")
    n_step: int = knob(1, "n-step returns for the critics (1: the paper's one-step target); episode ends cut them")
    critic_target: str = knob("min", "the target critics' value: 'min' (clipped double Q), 'mean' (average) or 'blend'")
    critic_pessimism: float = knob(
        0.5,
        "With critic_target='blend': the target critics' mean minus this many times half their gap, 1 being "
        "their minimum and 0 their mean (above 1 more pessimistic than the minimum, below 0 optimistic); `grid` "
        "sweeps it.",
    )
    critic_entropy: bool = knob(
        True,
        "The entropy bonus in the critics' target (soft Q-learning). It pays for every step survived, so where "
        "staying alive is safe and rewards are sparse (Seaquest's surface) the soft value favours hiding; False has "
        "the critics learn the policy's plain expected Q, the actor's entropy term kept (decoupled, as "
        "'Dissecting Discrete Soft Actor-Critic', 2025, proposes).",
    )

    def __post_init__(self):
        """The skeleton's checks, then SAC's."""
        super().__post_init__()
        if self.buffer_size // self.num_envs < self.n_step + 1:
            raise ValueError("buffer_size must hold at least n_step + 1 transitions per environment")
        if self.critic_target != "blend" and self.critic_pessimism != Config.critic_pessimism:
            raise ConfigError("critic_pessimism", only_with_blend(self.critic_target))


def only_with_blend(critic_target: str) -> str:
    return f"critic_pessimism is used only with critic_target='blend', not {critic_target!r}"


# Fields that mean something only beside another field's value: given at all (even at their default, which a
# config cannot tell from not given), `configs.make_config` refuses them otherwise.
ONLY_WITH = {"critic_pessimism": ("critic_target", "blend", only_with_blend)}


# A preset's settings go on a few lines by theme (run, replay and updates, targets, step sizes, network).
# fmt: off
PRESETS: dict[str, dict[str, Any]] = {
    # The paper's algorithm at MinAtar's scale: MinAtar's 100k buffer and 5k random frames; the lower target
    # entropy that CleanRL found more robust on Atari (0.89 of the maximum).
    "minatar": dict(buffer_size=100_000, learning_starts=5_000, target_entropy_scale=0.89),
    # Sized for wall-clock time as DQN's `fast`: 16 environments per seed and one update of 128 samples per
    # vector step (8 samples per frame instead of 16), soft target updates after every update, 2M frames; with
    # 3-step returns (as DQN's `fast`) and a low target entropy (0.1 of the maximum): the 0.89 of CleanRL's
    # Atari runs holds the policy near uniform on MinAtar (alpha in the hundreds, Q in the thousands), and with
    # one-step returns a low target reached a last-100 return of 5 on Breakout at 1M frames, with 3-step returns
    # 15.8 at 0.84M; and critics without the entropy bonus in their target, which otherwise rewards survival
    # (Seaquest's agent learned never to dive: 0.5 at 0.5M frames, 6.2 without it; Breakout 12.5 at 0.5M
    # without it, 10.6 with it). benchmarks/results/agents/sac-nstep/. And the mean of the two target critics
    # (Zhou et al.'s "double average") rather than the smaller: the smaller underestimated so much on Asterix that
    # one seed in five learned the game (8.5 at 2M frames over 5 seeds), the mean 42.6 with all 10 seeds past
    # MinAtar DQN's 17; no visible cost on Breakout, Freeway and SpaceInvaders, but on Seaquest none of 17 seeds
    # left the plateau near 7 (with `min`, 9 of 15 passed MinAtar DQN's 20). Each value misses one game of five;
    # the mean has the higher IQM over the five. Between them (critic_target="blend"), first probes flip both games
    # between pessimism 0.5 and 0.75, in opposite directions. benchmarks/results/agents/sac-critic-target/.
    "fast": dict(
        total_steps=2_000_000, num_envs=16,
        buffer_size=100_000, learning_starts=5_000, batch_size=128, train_every=1,
        target_update_every=1, tau=0.01, target_entropy_scale=0.1, n_step=3, critic_entropy=False,
        critic_target="mean",
    ),
    # Solves CartPole-v1 (deterministic return 500).
    "cartpole": dict(
        env_id="maxatar/CartPole-v1", total_steps=100_000, num_envs=4, log_points=50,
        buffer_size=50_000, learning_starts=2_000, batch_size=128, train_every=1,
        target_update_every=1, tau=0.01,
        actor_lr=5e-4, critic_lr=5e-4, alpha_lr=5e-4, target_entropy_scale=0.7,
        hidden=(128, 128),
    ),
    # Doors: 8 environments, an update of 64 samples per vector step, soft target updates, and a lower
    # target entropy (the grid has one best move in most cells).
    "doors": dict(
        env_id="maxatar/Doors-v0", total_steps=200_000, num_envs=8, log_points=20,
        buffer_size=50_000, learning_starts=2_000, batch_size=64, train_every=1,
        target_update_every=1, tau=0.01,
        actor_lr=5e-4, critic_lr=5e-4, alpha_lr=5e-4, target_entropy_scale=0.5,
    ),
}
# fmt: on

# What `python -m maxatar_agents.sweep` searches by default (`sweep.load_space`).
SEARCH_SPACE: dict[str, dict[str, Any]] = {
    "actor_lr": {"low": 1e-4, "high": 3e-3, "log": True},
    "critic_lr": {"low": 1e-4, "high": 3e-3, "log": True},
    "gamma": {"low": 0.95, "high": 0.999},
    "tau": {"low": 0.001, "high": 0.05, "log": True},
    "target_entropy_scale": {"low": 0.3, "high": 0.9},
}


def policy(logits: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The actor's distribution over actions, as probabilities and log-probabilities (both exact, so the
    losses below sum over actions instead of sampling)."""
    return jax.nn.softmax(logits), jax.nn.log_softmax(logits)


def critic_loss(
    critic_params: Any,
    target_critic_params: Any,
    actor_params: Any,
    alpha: jax.Array,
    sequence: Transition,
    *,
    critics: Callable,
    logits: Callable,
    gamma: float,
    critic_target: str = "min",
    critic_pessimism: float | jax.Array = 0.5,
    critic_entropy: bool = True,
) -> tuple[jax.Array, jax.Array]:
    """Soft Bellman error of both critics on sampled runs of n + 1 steps (fields shaped (batch, n + 1)), and
    their mean Q(s_0, a_0) (to log).

    The target is the n-step return bootstrapped from V(s_n) = sum_a' pi(a'|s_n) [Qtarget(s_n, a') - alpha
    log pi(a'|s_n)] (`off_policy.n_step_target`: cut at an episode end, no bootstrap past a termination),
    where Qtarget is the smaller of the two target critics ("min", which curbs overestimation), their mean
    ("mean"), or their mean less `critic_pessimism` times half their gap ("blend"); without `critic_entropy`,
    V(s_n) = sum_a' pi(a'|s_n) Qtarget(s_n, a'). Runs cut by a time limit count for nothing (their stored
    successor is the next episode's first observation; see `off_policy.Transition`). `critics(params, obs)`
    gives both critics' Q-values stacked on a leading axis of 2, `logits(params, obs)` the actor's."""
    last_obs = sequence.obs[:, -1]
    next_probs, next_log_probs = policy(logits(actor_params, last_obs))
    both = critics(target_critic_params, last_obs)
    if critic_target == "min":
        next_q = both.min(axis=0)
    elif critic_target == "mean":
        next_q = both.mean(axis=0)
    else:
        next_q = both.mean(axis=0) - critic_pessimism * jnp.abs(both[0] - both[1]) / 2
    bonus = alpha * next_log_probs if critic_entropy else 0.0
    next_v = jnp.sum(next_probs * (next_q - bonus), axis=-1)
    target, usable = off_policy.n_step_target(sequence, next_v, gamma)
    target = jax.lax.stop_gradient(target)
    q = critics(critic_params, sequence.obs[:, 0])  # (2, batch, actions)
    q_taken = jnp.take_along_axis(q, sequence.action[None, :, 0, None], axis=-1)[..., 0]
    valid = usable.astype(jnp.float32)
    errors = jnp.sum(valid * (q_taken - target) ** 2, axis=-1) / jnp.maximum(valid.sum(), 1)
    return jnp.sum(errors), q_taken.mean()


def actor_loss(
    actor_params: Any, critic_params: Any, alpha: jax.Array, obs: jax.Array, *, critics: Callable, logits: Callable
) -> tuple[jax.Array, tuple[jax.Array, jax.Array, jax.Array]]:
    """sum_a pi(a|s) [alpha log pi(a|s) - min_j Q_j(s, a)]: the policy moves towards the actions the critics
    value, while alpha keeps its entropy up. Returns the loss and (probs, log_probs, entropy), which the
    temperature's loss and the logs reuse."""
    probs, log_probs = policy(logits(actor_params, obs))
    q = jax.lax.stop_gradient(critics(critic_params, obs).min(axis=0))
    loss = jnp.sum(probs * (alpha * log_probs - q), axis=-1).mean()
    entropy = -jnp.sum(probs * log_probs, axis=-1).mean()
    return loss, (probs, log_probs, entropy)


def alpha_loss(log_alpha: jax.Array, probs: jax.Array, log_probs: jax.Array, target_entropy: float) -> jax.Array:
    """sum_a pi(a|s) [-alpha (log pi(a|s) + target_entropy)]: its gradient raises alpha when the policy's
    entropy is below `target_entropy` and lowers it above. Learning log alpha keeps alpha positive."""
    return jnp.sum(probs * (-jnp.exp(log_alpha) * (log_probs + target_entropy)), axis=-1).mean()


class Learner(NamedTuple):
    """SAC's part of the training state (`program.TrainState.learner`): what an update changes."""

    actor_params: Any
    critic_params: Any  # both critics, stacked on a leading axis of 2
    target_critic_params: Any
    log_alpha: jax.Array
    actor_opt: Any
    critic_opt: Any
    alpha_opt: Any


@functools.lru_cache(maxsize=16)
def make_program(config: Config) -> Program:
    """SAC's pieces in the off-policy skeleton; cached so runs of one config share compiled code."""
    env, env_params = env_from_config(config)
    actor = make_network(env, config.hidden, config.conv_features)  # logits
    critic = make_network(env, config.hidden, config.conv_features)  # Q-values
    critics = jax.vmap(critic.apply, in_axes=(0, None))  # both critics at once: (2, ..., actions)
    actor_opt = optax.adam(config.actor_lr, eps=config.adam_eps)
    critic_opt = optax.adam(config.critic_lr, eps=config.adam_eps)
    alpha_opt = optax.adam(config.alpha_lr, eps=config.adam_eps)
    target_entropy = config.target_entropy_scale * math.log(env.num_actions)
    start = off_policy.first_update_step(config)
    networks = dict(critics=critics, logits=actor.apply)
    critic_fields = ("gamma", "critic_target", "critic_pessimism", "critic_entropy")
    critic_loss_fn = program.bind_config(critic_loss, config, *critic_fields, **networks)
    actor_loss_fn = functools.partial(actor_loss, **networks)

    def init(keys: list[jax.Array], obs: jax.Array) -> Learner:
        """An actor, two independently initialised critics with target copies, and the temperature."""
        actor_key, critic_key = keys
        actor_params = actor.init(actor_key, obs)
        critic_params = jax.vmap(critic.init, in_axes=(0, None))(jax.random.split(critic_key), obs)
        log_alpha = jnp.log(jnp.float32(config.initial_alpha))
        return Learner(
            actor_params=actor_params,
            critic_params=critic_params,
            target_critic_params=critic_params,
            log_alpha=log_alpha,
            actor_opt=actor_opt.init(actor_params),
            critic_opt=critic_opt.init(critic_params),
            alpha_opt=alpha_opt.init(log_alpha),
        )

    def explore(learner: Learner, obs: jax.Array, uniforms: jax.Array, t: jax.Array):
        """Sample from the policy by inverting its CDF with the first uniform; uniformly random (the second)
        before learning starts."""
        probs, _ = policy(actor.apply(learner.actor_params, obs))
        sampled = jnp.sum(uniforms[:, :1] > jnp.cumsum(probs, axis=-1)[:, :-1], axis=-1)
        random_action = uniform_to_int(uniforms[:, 1], 0, env.num_actions)
        return jnp.where(t < start, random_action, sampled).astype(jnp.int32), ()

    def update(learner: Learner, sequence: Transition, number: jax.Array):
        """One step for critics, actor and temperature on one uniform sample of runs of n_step + 1 steps,
        then the target update."""
        alpha = jnp.exp(learner.log_alpha)

        step = program.gradient_update
        critic_args = (learner.target_critic_params, learner.actor_params, alpha, sequence)
        (c_loss, q_mean), critic_params, c_opt = step(
            critic_loss_fn, critic_opt, learner.critic_params, learner.critic_opt, *critic_args
        )
        (a_loss, (probs, log_probs, entropy)), actor_params, a_opt = step(
            actor_loss_fn, actor_opt, learner.actor_params, learner.actor_opt, critic_params, alpha, sequence.obs[:, 0]
        )
        probs, log_probs = jax.lax.stop_gradient((probs, log_probs))
        _, log_alpha, t_opt = step(
            alpha_loss, alpha_opt, learner.log_alpha, learner.alpha_opt, probs, log_probs, target_entropy, has_aux=False
        )

        target_params = off_policy.update_target(critic_params, learner.target_critic_params, number, config)
        learner = Learner(actor_params, critic_params, target_params, log_alpha, a_opt, c_opt, t_opt)
        return learner, jnp.stack([c_loss, a_loss, q_mean, entropy, alpha])

    def report(learner: Learner, mean_logs: jax.Array, t_end: jax.Array) -> dict[str, jax.Array]:
        """The interval's mean losses, Q and entropy, and the temperature now."""
        return {
            "critic_loss": mean_logs[0],
            "actor_loss": mean_logs[1],
            "q_mean": mean_logs[2],
            "entropy": mean_logs[3],
            "alpha": jnp.exp(learner.log_alpha),
        }

    def act(actor_params, obs: jax.Array) -> jax.Array:
        """The deterministic policy: the most probable action (any leading batch axes)."""
        return actor.apply(actor_params, obs).argmax(axis=-1).astype(jnp.int32)

    def sample(actor_params, obs: jax.Array, key: jax.Array) -> jax.Array:
        """An action drawn from the policy (any leading batch axes): the sampled evaluation."""
        return jax.random.categorical(key, actor.apply(actor_params, obs)).astype(jnp.int32)

    agent = program.Agent(
        init=init,
        explore=explore,
        learn=off_policy.Learning(config.n_step + 1, update),
        report=report,
        act=act,
        policy_field="actor_params",
        num_init_keys=2,
        sample=sample,
    )
    return off_policy.assemble(config, env, env_params, agent)


make_train = program.make_train_for(make_program)
