"""DreamerV3's pure losses and targets against values worked out by hand."""

import jax
import jax.numpy as jnp
import numpy as np

from ajax.agents.DreamerV3.core import (
    advantages,
    continue_target,
    kl_balance,
    lambda_returns,
    policy_loss,
    trajectory_weight,
)

# KL[(0.9, 0.1) || (0.5, 0.5)] = 0.9 log 1.8 + 0.1 log 0.2 = 0.52901 - 0.16094 = 0.36806
SMALL_KL = 0.9 * np.log(1.8) + 0.1 * np.log(0.2)
# KL[(0.99, 0.01) || (0.01, 0.99)] = 0.99 log 99 + 0.01 log(1 / 99) = 0.98 log 99 = 4.50322
LARGE_KL = 0.98 * np.log(99.0)


def test_kl_is_summed_over_the_latents_then_floored():
    uniform, peaked = jnp.log(jnp.array([0.5, 0.5])), jnp.log(jnp.array([0.9, 0.1]))
    # Shape (batch 2, stoch 3, classes 2). Element 0: one group off by SMALL_KL, total 0.368 < 1.
    # Element 1: all three groups, total 3 * 0.368 = 1.104 > 1, although each group is below 1.
    post = jnp.stack([jnp.stack([peaked, uniform, uniform]), jnp.stack([peaked, peaked, peaked])])
    prior = jnp.broadcast_to(uniform, post.shape)
    dyn, rep = kl_balance(post, prior)
    np.testing.assert_allclose(dyn, [1.0, 3 * SMALL_KL], rtol=1e-5)
    np.testing.assert_allclose(rep, [1.0, 3 * SMALL_KL], rtol=1e-5)
    dyn, _ = kl_balance(post, prior, free_nats=0.0)
    np.testing.assert_allclose(dyn, [SMALL_KL, 3 * SMALL_KL], rtol=1e-5)


def test_dyn_trains_only_the_prior_and_rep_only_the_posterior():
    post = jnp.log(jnp.array([[0.99, 0.01], [0.99, 0.01]]))  # (stoch 2, classes 2)
    prior = jnp.log(jnp.array([[0.01, 0.99], [0.01, 0.99]]))
    dyn, rep = kl_balance(post, prior)
    np.testing.assert_allclose([dyn, rep], [2 * LARGE_KL, 2 * LARGE_KL], rtol=1e-5)  # 9.006 > 1
    dyn_post, dyn_prior = jax.grad(lambda a, b: kl_balance(a, b)[0], argnums=(0, 1))(post, prior)
    rep_post, rep_prior = jax.grad(lambda a, b: kl_balance(a, b)[1], argnums=(0, 1))(post, prior)
    np.testing.assert_array_equal(dyn_post, np.zeros((2, 2)))
    np.testing.assert_array_equal(rep_prior, np.zeros((2, 2)))
    # d KL[p || q] / d q_logits = softmax(q) - p = [0.01 - 0.99, 0.99 - 0.01] in each group.
    np.testing.assert_allclose(dyn_prior, [[-0.98, 0.98], [-0.98, 0.98]], rtol=1e-5)
    assert np.abs(rep_post).sum() > 0.1
    # Below the floor neither loss trains anything.
    flat = jnp.zeros((2, 2))
    grads = jax.grad(lambda a, b: sum(kl_balance(a, b)), argnums=(0, 1))(flat, flat)
    np.testing.assert_array_equal(np.stack(grads), np.zeros((2, 2, 2)))


def test_continue_target_carries_the_horizon_discount():
    np.testing.assert_allclose(continue_target(jnp.array([False, True])), [1 - 1 / 333, 0.0], rtol=1e-6)
    np.testing.assert_allclose(continue_target(jnp.array([0.0]), horizon=10.0), [0.9], rtol=1e-6)


def test_lambda_returns_of_a_three_step_trajectory_with_a_terminal():
    # States s_0 .. s_3 (T = 3), batch of 2 along axis 1. Trajectory 0: the step into s_2 is
    # terminal (c_2 = 0); r_0 and c_0 are not used, so they are set to nonsense.
    rewards = jnp.array([[100.0, 0.0], [1.0, 0.0], [2.0, 0.0], [3.0, 0.0]])
    continues = jnp.array([[-7.0, 1.0], [0.8, 1.0], [0.0, 1.0], [1.0, 1.0]])
    values = jnp.array([[10.0, 1.0], [20.0, 1.0], [30.0, 1.0], [40.0, 1.0]])
    returns = lambda_returns(rewards, continues, values, lam=0.5, discount=0.9)
    # Trajectory 0, R_3 = v_3 = 40:
    #   R_2 = r_3 + 0.9 c_3 (0.5 v_3 + 0.5 R_3) = 3 + 0.9 * 40 = 39
    #   R_1 = r_2 + 0.9 c_2 (...) = 2 + 0 = 2                       (the terminal ends the sum)
    #   R_0 = r_1 + 0.9 c_1 (0.5 v_1 + 0.5 R_1) = 1 + 0.72 * (10 + 1) = 8.92
    # Trajectory 1, no rewards, values 1, R_3 = 1:
    #   R_2 = 0.9 (0.5 + 0.5) = 0.9, R_1 = 0.9 (0.5 + 0.45) = 0.855, R_0 = 0.9 (0.5 + 0.4275) = 0.83475
    np.testing.assert_allclose(returns, [[8.92, 0.83475], [2.0, 0.855], [39.0, 0.9]], rtol=1e-5)


def test_lambda_returns_in_replay_stop_at_an_episodes_last_step():
    # T = 2, discount 0.5, lam 0.95; s_1 is its episode's last step (not terminal), and the
    # values are the bootstraps from each replayed state.
    rewards, continues = jnp.array([0.0, 1.0, 2.0]), jnp.ones(3)
    values, lasts = jnp.array([5.0, 6.0, 7.0]), jnp.array([False, True, False])
    returns = lambda_returns(rewards, continues, values, lam=0.95, discount=0.5, lasts=lasts)
    # R_2 = 7; R_1 = 2 + 0.5 (0.05 * 7 + 0.95 * 7) = 5.5;
    # at s_1 lam_1 = 0.95 (1 - 1) = 0: R_0 = 1 + 0.5 (1 * 6 + 0 * R_1) = 4.
    np.testing.assert_allclose(returns, [4.0, 5.5], rtol=1e-6)


def test_trajectory_weight_is_a_discounted_cumulative_product_and_a_constant():
    continues = jnp.array([0.9, 0.8, 0.0, 1.0])
    # [0.9, 0.9 * 0.8, 0, 0]
    np.testing.assert_allclose(trajectory_weight(continues), [0.9, 0.72, 0.0, 0.0], rtol=1e-6)
    # cumprod(0.5 c) / 0.5 = [0.45, 0.18, 0, 0] / 0.5
    np.testing.assert_allclose(trajectory_weight(continues, discount=0.5), [0.9, 0.36, 0.0, 0.0], rtol=1e-6)
    np.testing.assert_array_equal(jax.grad(lambda c: trajectory_weight(c).sum())(continues), np.zeros(4))


def test_advantages_and_the_policy_loss_by_hand():
    # (R - v) / S = ([3, 5] - [1, 1]) / 2
    adv = advantages(jnp.array([3.0, 5.0]), jnp.array([1.0, 1.0]), jnp.array(2.0))
    np.testing.assert_allclose(adv, [1.0, 2.0])
    log_probs, entropies, weights = jnp.array([-1.0, -2.0]), jnp.array([0.5, 1.0]), jnp.array([1.0, 0.5])
    # -w (log pi A + 0.1 H) = -[1 (-1 + 0.05), 0.5 (-4 + 0.1)] = [0.95, 1.95]
    loss = policy_loss(log_probs, entropies, adv, weights, entropy_scale=0.1)
    np.testing.assert_allclose(loss, [0.95, 1.95], rtol=1e-6)
    grads = jax.grad(lambda *a: policy_loss(*a, entropy_scale=0.1).sum(), argnums=(0, 1, 2, 3))(
        log_probs, entropies, adv, weights
    )
    # d/dlog pi = -w A = [-1, -1], d/dH = -0.1 w = [-0.1, -0.05]; advantages and weights are constants.
    np.testing.assert_allclose(grads[0], [-1.0, -1.0], rtol=1e-6)
    np.testing.assert_allclose(grads[1], [-0.1, -0.05], rtol=1e-6)
    np.testing.assert_array_equal(np.stack(grads[2:]), np.zeros((2, 2)))
