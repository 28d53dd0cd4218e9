"""The agents' losses on numbers worked out by hand. The "networks" are lookup tables (observation s picks
row s), so every Q-value and logit below is written out in the test."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from maxatar_agents import dqn, off_policy, sac
from maxatar_agents.off_policy import Transition


def table(params, obs):
    """Q-values or logits of state `obs`: row `obs` of `params` (any leading batch axes on `obs`)."""
    return params[obs]


def both_tables(params, obs):
    """Two critics stacked on a leading axis of 2, as `sac.critic_loss` expects."""
    return params[:, obs]


def transitions(**fields) -> Transition:
    return Transition(**{name: jnp.asarray(value) for name, value in fields.items()})


# --- DQN ---

ONLINE = jnp.array([[1.0, 2.0], [0.5, 3.0]])
TARGET = jnp.array([[0.0, 0.0], [4.0, 1.0]])
# Three one-step runs (obs s_0, s_1): one that bootstraps, one that terminates, one cut by a time limit.
RUNS = transitions(
    obs=[[0, 1], [1, 0], [0, 1]],
    action=[[1, 0], [0, 0], [0, 0]],
    reward=[[1.0, 0.0], [2.0, 0.0], [5.0, 0.0]],
    terminated=[[False, False], [True, False], [False, False]],
    truncated=[[False, False], [False, False], [True, False]],
)


def test_td_loss_huber_on_the_one_step_target():
    # Run 1: target 1 + 0.5 * max(4, 1) = 3, Q = 2, Huber(1) = 0.5. Run 2: target 2 (terminated), Q = 0.5,
    # Huber(1.5) = 1.5 - 0.5 = 1. Run 3 is left out. Mean over the two usable runs: 0.75.
    loss, q_mean = dqn.td_loss(ONLINE, TARGET, RUNS, q_values=table, gamma=0.5, double_q=False)
    assert float(loss) == pytest.approx(0.75)
    assert float(q_mean) == pytest.approx((2.0 + 0.5 + 1.0) / 3)  # every sampled Q(s_0, a_0)


def test_td_loss_double_q_lets_the_online_network_choose():
    # Run 1: the online network prefers action 1 in state 1 (3 > 0.5); the target network values it 1, so
    # the target is 1 + 0.5 * 1 = 1.5 and Huber(0.5) = 0.125. Run 2 is unchanged (1).
    loss, _ = dqn.td_loss(ONLINE, TARGET, RUNS, q_values=table, gamma=0.5, double_q=True)
    assert float(loss) == pytest.approx((0.125 + 1.0) / 2)


def test_td_loss_gradient_moves_only_the_taken_action():
    grads = jax.grad(lambda p: dqn.td_loss(p, TARGET, RUNS, q_values=table, gamma=0.5, double_q=False)[0])(ONLINE)
    # d Huber / dQ: Q - target = -1 (run 1, state 0 action 1) and clipped to -1 (run 2, state 1 action 0),
    # each divided by the two usable runs.
    np.testing.assert_allclose(np.asarray(grads), [[0.0, -0.5], [-0.5, 0.0]])


# --- SAC ---

LOG2 = math.log(2.0)
UNIFORM_LOGITS = jnp.zeros((2, 2))  # pi = (1/2, 1/2) in both states
CRITICS = jnp.array([[[1.0, 1.0], [9.0, 9.0]], [[5.0, 2.0], [9.0, 9.0]]])  # online: (critic, state, action)
TARGET_CRITICS = jnp.array([[[0.0, 0.0], [2.0, 4.0]], [[0.0, 0.0], [3.0, 1.0]]])


def test_critic_loss_soft_bellman_target_with_the_smaller_critic():
    no, yes = [False, False], [False, True]
    first = transitions(obs=[0, 0], action=[1, 0], reward=[1.0, 7.0], terminated=no, truncated=yes)
    second = transitions(obs=[1, 1], action=[0, 0], reward=[0.0, 0.0], terminated=no, truncated=no)
    alpha, gamma = 0.5, 0.9
    loss, q_mean = sac.critic_loss(
        CRITICS, TARGET_CRITICS, UNIFORM_LOGITS, alpha, first, second, critics=both_tables, logits=table, gamma=gamma
    )
    # min over the target critics in state 1: (2, 1); V(s') = 1/2 (2 + alpha ln 2) + 1/2 (1 + alpha ln 2).
    target = 1.0 + gamma * (1.5 + alpha * LOG2)
    # The second transition was cut by a time limit: left out. Critic Q(s_0, a=1): 1 and 2.
    assert float(loss) == pytest.approx((1.0 - target) ** 2 + (2.0 - target) ** 2, rel=1e-6)
    assert float(q_mean) == pytest.approx((1.0 + 2.0 + 1.0 + 5.0) / 4)


def test_critic_loss_does_not_bootstrap_at_termination():
    first = transitions(obs=[0], action=[0], reward=[3.0], terminated=[True], truncated=[False])
    second = transitions(obs=[1], action=[0], reward=[0.0], terminated=[False], truncated=[False])
    loss, _ = sac.critic_loss(
        CRITICS, TARGET_CRITICS, UNIFORM_LOGITS, 0.5, first, second, critics=both_tables, logits=table, gamma=0.9
    )
    assert float(loss) == pytest.approx((1.0 - 3.0) ** 2 + (5.0 - 3.0) ** 2)


def test_actor_loss_and_entropy():
    logits = jnp.array([[0.0, math.log(3.0)], [0.0, 0.0]])  # pi(.|s_0) = (1/4, 3/4)
    critics = jnp.array([[[1.0, 2.0]], [[3.0, 0.0]]])  # min over critics in state 0: (1, 0)
    alpha = 0.5
    loss, (probs, log_probs, entropy) = sac.actor_loss(
        logits, critics, alpha, jnp.array([0]), critics=both_tables, logits=table
    )
    expected = 0.25 * (alpha * math.log(0.25) - 1.0) + 0.75 * (alpha * math.log(0.75) - 0.0)
    assert float(loss) == pytest.approx(expected, rel=1e-6)
    np.testing.assert_allclose(np.asarray(probs), [[0.25, 0.75]], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(log_probs), np.log([[0.25, 0.75]]), rtol=1e-6)
    assert float(entropy) == pytest.approx(-(0.25 * math.log(0.25) + 0.75 * math.log(0.75)), rel=1e-6)


def test_alpha_loss_lowers_alpha_when_the_policy_is_more_random_than_the_target():
    probs = jnp.array([[0.25, 0.75]])
    log_probs = jnp.log(probs)
    entropy = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))  # about 0.56
    # alpha = 2, target entropy 0.5: sum_a pi (-2 (log pi + 0.5)) = 2 (H - 0.5).
    loss = sac.alpha_loss(jnp.float32(LOG2), probs, log_probs, 0.5)
    assert float(loss) == pytest.approx(2.0 * (entropy - 0.5), rel=1e-6)
    # d loss / d log alpha = alpha (H - target): positive here, so gradient descent lowers alpha.
    assert float(jax.grad(sac.alpha_loss)(jnp.float32(LOG2), probs, log_probs, 0.5)) > 0
    assert float(jax.grad(sac.alpha_loss)(jnp.float32(LOG2), probs, log_probs, 1.0)) < 0


# --- shared ---


def test_target_network_moves_every_kth_update_by_tau():
    class Every2:
        target_update_every = 2
        tau = 0.25

    online, target = jnp.float32(1.0), jnp.float32(0.0)
    assert float(off_policy.update_target(online, target, jnp.int32(1), Every2)) == 0.0
    assert float(off_policy.update_target(online, target, jnp.int32(2), Every2)) == pytest.approx(0.25)
