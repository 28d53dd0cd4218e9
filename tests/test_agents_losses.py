"""The agents' losses on numbers worked out by hand. The "networks" are lookup tables (observation s picks
row s), so every Q-value and logit below is written out in the test."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from maxatar_agents.algorithms import bc, cql, dqn, off_policy, on_policy, ppo, pqn, sac
from maxatar_agents.algorithms.off_policy import Transition
from maxatar_agents.algorithms.offline import Transitions
from maxatar_agents.algorithms.on_policy import Rollout


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


def pairs(first: Transition, second: Transition) -> Transition:
    """One-step runs (fields (batch, 2)) from their first and second steps."""
    return jax.tree.map(lambda a, b: jnp.stack([a, b], axis=1), first, second)


def critic_loss(alpha, sequence, gamma, **kwargs):
    return sac.critic_loss(
        CRITICS,
        TARGET_CRITICS,
        UNIFORM_LOGITS,
        alpha,
        sequence,
        critics=both_tables,
        logits=table,
        gamma=gamma,
        **kwargs,
    )


def test_critic_loss_soft_bellman_target_with_the_smaller_critic():
    no, yes = [False, False], [False, True]
    first = transitions(obs=[0, 0], action=[1, 0], reward=[1.0, 7.0], terminated=no, truncated=yes)
    second = transitions(obs=[1, 1], action=[0, 0], reward=[0.0, 0.0], terminated=no, truncated=no)
    alpha, gamma = 0.5, 0.9
    loss, q_mean = critic_loss(alpha, pairs(first, second), gamma)
    # min over the target critics in state 1: (2, 1); V(s') = 1/2 (2 + alpha ln 2) + 1/2 (1 + alpha ln 2).
    target = 1.0 + gamma * (1.5 + alpha * LOG2)
    # The second transition was cut by a time limit: left out. Critic Q(s_0, a=1): 1 and 2.
    assert float(loss) == pytest.approx((1.0 - target) ** 2 + (2.0 - target) ** 2, rel=1e-6)
    assert float(q_mean) == pytest.approx((1.0 + 2.0 + 1.0 + 5.0) / 4)


def test_critic_loss_mean_target_averages_the_target_critics():
    first = transitions(obs=[0], action=[1], reward=[1.0], terminated=[False], truncated=[False])
    second = transitions(obs=[1], action=[0], reward=[0.0], terminated=[False], truncated=[False])
    alpha, gamma = 0.5, 0.9
    loss, _ = critic_loss(alpha, pairs(first, second), gamma, critic_target="mean")
    # mean of the target critics in state 1: (2.5, 2.5); V(s') = 2.5 + alpha ln 2.
    target = 1.0 + gamma * (2.5 + alpha * LOG2)
    assert float(loss) == pytest.approx((1.0 - target) ** 2 + (2.0 - target) ** 2, rel=1e-6)


@pytest.mark.parametrize("pessimism, next_q", [(1.0, (2.0, 1.0)), (0.0, (2.5, 2.5)), (0.5, (2.25, 1.75))])
def test_critic_loss_blend_target_moves_from_the_mean_towards_the_smaller_critic(pessimism, next_q):
    first = transitions(obs=[0], action=[1], reward=[1.0], terminated=[False], truncated=[False])
    second = transitions(obs=[1], action=[0], reward=[0.0], terminated=[False], truncated=[False])
    alpha, gamma = 0.5, 0.9
    loss, _ = critic_loss(alpha, pairs(first, second), gamma, critic_target="blend", critic_pessimism=pessimism)
    # Target critics in state 1: (2, 4) and (3, 1), mean (2.5, 2.5), half gap (0.5, 1.5); 1 is the smaller
    # critic, 0 their mean.
    target = 1.0 + gamma * (sum(next_q) / 2 + alpha * LOG2)
    assert float(loss) == pytest.approx((1.0 - target) ** 2 + (2.0 - target) ** 2, rel=1e-6)


def test_critic_loss_without_the_entropy_bonus_bootstraps_the_expected_q():
    first = transitions(obs=[0], action=[1], reward=[1.0], terminated=[False], truncated=[False])
    second = transitions(obs=[1], action=[0], reward=[0.0], terminated=[False], truncated=[False])
    loss, _ = critic_loss(0.5, pairs(first, second), 0.9, critic_entropy=False)
    target = 1.0 + 0.9 * 1.5  # V(s') = 1/2 * 2 + 1/2 * 1 (min over the target critics), no alpha ln 2
    assert float(loss) == pytest.approx((1.0 - target) ** 2 + (2.0 - target) ** 2, rel=1e-6)


def test_critic_loss_n_step_return_bootstraps_from_the_nth_state():
    # Runs of 3 steps from state 0: rewards 1 then 2, then V(s_2) in state 1 (min critics (2, 1)).
    # Run 1 goes on: 1 + 0.9 * 2 + 0.81 * V. Run 2 terminates at its first step: its target is 3.
    alpha, gamma = 0.5, 0.9
    runs = transitions(
        obs=[[0, 0, 1], [0, 1, 1]],
        action=[[1, 0, 0], [0, 0, 0]],
        reward=[[1.0, 2.0, 0.0], [3.0, 5.0, 0.0]],
        terminated=[[False, False, False], [True, False, False]],
        truncated=[[False, False, False], [False, False, False]],
    )
    loss, _ = critic_loss(alpha, runs, gamma)
    v = 1.5 + alpha * LOG2
    first = 1.0 + gamma * 2.0 + gamma**2 * v  # Q(s_0, 1): 1 (critic 1) and 2 (critic 2)
    second = 3.0  # Q(s_0, 0): 1 and 5
    expected = ((1.0 - first) ** 2 + (1.0 - second) ** 2) / 2 + ((2.0 - first) ** 2 + (5.0 - second) ** 2) / 2
    assert float(loss) == pytest.approx(expected, rel=1e-6)


def test_critic_loss_does_not_bootstrap_at_termination():
    first = transitions(obs=[0], action=[0], reward=[3.0], terminated=[True], truncated=[False])
    second = transitions(obs=[1], action=[0], reward=[0.0], terminated=[False], truncated=[False])
    loss, _ = critic_loss(0.5, pairs(first, second), 0.9)
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


# --- the on-policy agents: one environment, three steps (T = 3, N = 1) ---


def rollout(reward, terminated, truncated=(False, False, False)) -> Rollout:
    column = lambda values, dtype: jnp.asarray(values, dtype)[:, None]
    zeros = jnp.zeros((3, 1), jnp.int32)
    ends = column(terminated, bool), column(truncated, bool)
    return Rollout(zeros, zeros, column(reward, jnp.float32), *ends, extras=None)


def test_gae_by_hand():
    gamma, lam = 0.5, 0.5
    values = jnp.array([[1.0], [2.0], [4.0]])
    # Step 1 terminates: the advantage of step 1 does not look past it, nor does step 0's recursion.
    steps = rollout(reward=[1.0, 2.0, 3.0], terminated=[False, True, False])
    advantages, targets = ppo.gae(steps, values, jnp.array([8.0]), gamma, lam)
    a2 = 3.0 + 0.5 * 8.0 - 4.0  # 3
    a1 = 2.0 - 2.0  # 0, no bootstrap
    a0 = (1.0 + 0.5 * 2.0 - 1.0) + 0.25 * a1  # 1
    np.testing.assert_allclose(advantages[:, 0], [a0, a1, a2])
    np.testing.assert_allclose(targets[:, 0], [a0 + 1.0, a1 + 2.0, a2 + 4.0])
    # A time limit cuts the same way (no bootstrap past it; see on_policy).
    truncated = rollout(reward=[1.0, 2.0, 3.0], terminated=[False, False, False], truncated=[False, True, False])
    np.testing.assert_allclose(ppo.gae(truncated, values, jnp.array([8.0]), gamma, lam)[0], advantages)
    # lambda = 1 without episode ends: the discounted return to the end plus gamma^k V(last) minus V.
    through = ppo.gae(rollout([1.0, 2.0, 3.0], [False] * 3), values, jnp.array([8.0]), gamma, 1.0)[1]
    np.testing.assert_allclose(through[0, 0], 1.0 + 0.5 * 2.0 + 0.25 * 3.0 + 0.125 * 8.0)


PPO_LOGITS = jnp.log(jnp.array([[0.5, 0.5], [0.8, 0.2]]))  # state 0: (1/2, 1/2), state 1: (0.8, 0.2)
PPO_VALUES = jnp.array([1.0, -1.0])


def actor_critic_table(params, obs):
    return params["logits"][obs], params["values"][obs]


def ppo_samples(old_prob, advantage, old_value, target):
    return ppo.Samples(
        obs=jnp.array([0, 1]),
        action=jnp.array([0, 1]),
        log_prob=jnp.log(jnp.asarray(old_prob)),
        value=jnp.asarray(old_value),
        advantage=jnp.asarray(advantage),
        target=jnp.asarray(target),
    )


def test_ppo_loss_clips_the_ratio_and_the_value_by_hand():
    params = {"logits": PPO_LOGITS, "values": PPO_VALUES}
    # New probabilities of the taken actions: 0.5 and 0.2. Old: 0.25 and 0.4, so ratios 2.0 and 0.5.
    # Advantages (1, -1) normalise to (1, -1) (population std 1).
    samples = ppo_samples([0.25, 0.4], [3.0, 1.0], old_value=[0.0, 0.0], target=[2.0, 0.0])
    loss = lambda **k: ppo.ppo_loss(params, samples, apply=actor_critic_table, **k)
    total, (policy, value, entropy, approx_kl) = loss(clip_eps=0.2, clip_value=False, vf_coef=0.5, ent_coef=0.1)
    # min(2 * 1, 1.2 * 1) = 1.2 and min(0.5 * -1, 0.8 * -1) = -0.8: policy loss -(1.2 - 0.8) / 2.
    np.testing.assert_allclose(policy, -0.2, rtol=1e-6)
    np.testing.assert_allclose(value, 0.5 * ((1.0 - 2.0) ** 2 + (-1.0 - 0.0) ** 2) / 2, rtol=1e-6)
    h = lambda p: -sum(x * math.log(x) for x in p)
    np.testing.assert_allclose(entropy, (h([0.5, 0.5]) + h([0.8, 0.2])) / 2, rtol=1e-6)
    np.testing.assert_allclose(approx_kl, ((1.0 - math.log(2.0)) + (-0.5 + math.log(2.0))) / 2, rtol=1e-6)
    np.testing.assert_allclose(total, policy + 0.5 * value - 0.1 * entropy, rtol=1e-6)
    # Value clipping: V_old + clip(V - V_old) = (0.2, -0.2); the larger squared error counts per sample:
    # sample 0: max((1 - 2)^2, (0.2 - 2)^2) = 3.24, sample 1: max((-1)^2, (-0.2)^2) = 1.
    _, (_, clipped, _, _) = loss(clip_eps=0.2, clip_value=True, vf_coef=0.5, ent_coef=0.1)
    np.testing.assert_allclose(clipped, 0.5 * (3.24 + 1.0) / 2, rtol=1e-6)


def test_ppo_loss_gradient_stops_where_the_ratio_is_clipped():
    params = {"logits": PPO_LOGITS, "values": PPO_VALUES}
    # Sample 0's ratio (2.0) is clipped with a positive advantage: no policy gradient through state 0.
    # Sample 1's ratio is 1, inside the clip range: its gradient flows.
    samples = ppo_samples([0.25, 0.2], [3.0, 1.0], old_value=[1.0, -1.0], target=[1.0, -1.0])
    loss = lambda p: ppo.ppo_loss(p, samples, apply=actor_critic_table, clip_eps=0.2, clip_value=False,
                                  vf_coef=0.5, ent_coef=0.0)[0]  # fmt: skip
    grads = jax.grad(loss)(params)
    np.testing.assert_array_equal(grads["logits"][0], 0.0)
    assert np.all(np.asarray(grads["logits"][1]) != 0.0)
    np.testing.assert_array_equal(grads["values"], 0.0)  # the values already equal their targets


def test_sample_categorical_inverts_the_cdf():
    logits = jnp.log(jnp.array([0.2, 0.5, 0.3]))
    u = jnp.array([0.0, 0.19, 0.21, 0.69, 0.71, 0.999999])
    np.testing.assert_array_equal(on_policy.sample_categorical(jnp.broadcast_to(logits, (6, 3)), u), [0, 0, 1, 1, 2, 2])


def test_q_lambda_returns_by_hand():
    gamma, lam = 0.5, 0.5
    next_max_q = jnp.array([[2.0], [4.0], [8.0]])  # max Q of the observation after each step
    steps = rollout(reward=[1.0, 2.0, 3.0], terminated=[False, True, False])
    returns = pqn.q_lambda_returns(steps, next_max_q, gamma, lam, reward_scale=1.0)
    g2 = 3.0 + 0.5 * 8.0  # the last step bootstraps fully: 7
    g1 = 2.0  # terminated
    g0 = 1.0 + 0.5 * (0.5 * 2.0 + 0.5 * g1)  # 2
    np.testing.assert_allclose(returns[:, 0], [g0, g1, g2])
    # lambda = 0 is one-step Q-learning; reward_scale scales the rewards only.
    one_step = pqn.q_lambda_returns(steps, next_max_q, gamma, 0.0, reward_scale=0.1)
    np.testing.assert_allclose(one_step[:, 0], [0.1 + 0.5 * 2.0, 0.2, 0.3 + 0.5 * 8.0], rtol=1e-6)


def test_q_loss_regresses_the_taken_action_only():
    samples = pqn.Samples(obs=jnp.array([0, 1]), action=jnp.array([1, 0]), target=jnp.array([4.0, 0.0]))
    loss, q_mean = pqn.q_loss(ONLINE, samples, q_values=table)
    np.testing.assert_allclose(loss, 0.5 * ((2.0 - 4.0) ** 2 + 0.5**2) / 2)
    np.testing.assert_allclose(q_mean, (2.0 + 0.5) / 2)
    grads = jax.grad(lambda p: pqn.q_loss(p, samples, q_values=table)[0])(ONLINE)
    np.testing.assert_allclose(grads, [[0.0, (2.0 - 4.0) / 2], [0.5 / 2, 0.0]])


# --- behaviour cloning and CQL (offline) ---

# Two dataset steps: s_0 -a1-> s_1 (reward 1, bootstraps) and s_1 -a0-> s_0 (reward 2, terminates), the first
# cut by a time limit, which bootstraps from its next observation all the same.
STEPS = Transitions(
    observation=jnp.array([0, 1]),
    action=jnp.array([1, 0]),
    reward=jnp.array([1.0, 2.0]),
    next_observation=jnp.array([1, 0]),
    terminated=jnp.array([False, True]),
    truncated=jnp.array([True, False]),
)


def test_bc_cross_entropy_of_the_datasets_actions_and_accuracy():
    logits = jnp.array([[0.0, math.log(3.0)], [math.log(3.0), 0.0]])  # the dataset's action at 3/4 in both states
    loss, accuracy = bc.cross_entropy_loss(logits, STEPS, logits=table)
    assert float(loss) == pytest.approx(-math.log(0.75), rel=1e-6)
    assert float(accuracy) == 1.0
    _, accuracy = bc.cross_entropy_loss(logits[::-1], STEPS, logits=table)
    assert float(accuracy) == 0.0


def test_cql_td_loss_plus_alpha_times_logsumexp_less_the_datasets_q():
    # Q(s_0) = (1, 2), Q(s_1) = (0.5, 3); target Q(s_1) = (4, 1), so the targets are 1 + 0.5 * 4 = 3 (truncated:
    # bootstrapped) and 2 (terminated); Q of the dataset's actions: 2 and 0.5.
    td = (0.5 * (3.0 - 2.0) ** 2 + (abs(2.0 - 0.5) - 0.5)) / 2  # Huber: quadratic below 1, linear above
    penalty = ((math.log(math.e + math.e**2) - 2.0) + (math.log(math.e**0.5 + math.e**3) - 0.5)) / 2
    for alpha in (0.0, 2.0):
        loss, (logged_penalty, q_data) = cql.cql_loss(ONLINE, TARGET, STEPS, q_values=table, gamma=0.5, alpha=alpha)
        assert float(loss) == pytest.approx(td + alpha * penalty, rel=1e-6)
        assert float(logged_penalty) == pytest.approx(penalty, rel=1e-6)
        assert float(q_data) == pytest.approx(1.25)
