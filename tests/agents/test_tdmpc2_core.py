"""TD-MPC2's maths against hand-computed values (agents/TDMPC2/core.py, planner.py, networks.py).

Each value below is worked out on paper from the reference's definitions
(nicklashansen/tdmpc2: `common/math.py`, `common/scale.py`, `common/layers.py`, `tdmpc2.py`).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from ajax.agents.TDMPC2.core import (
    consistency_loss,
    default_seed_steps,
    discount_from_episode_length,
    pair_of,
    policy_loss,
    predict,
    reward_loss,
    soft_cross_entropy,
    soft_update,
    squashed_gaussian,
    td_target,
    termination_loss,
    value_bins,
    value_loss,
    window_valid,
)
from ajax.agents.TDMPC2.networks import simnorm
from ajax.agents.TDMPC2.planner import LatentModel, PlannerConfig, plan, refit
from ajax.distributional import symexp
from ajax.normalizers import RunningScale, update_running

BINS = value_bins()
LOG_101 = math.log(101)


def test_simnorm_is_a_softmax_within_each_group():
    x = jnp.array([0.0, math.log(3.0), 1.0, 1.0])
    np.testing.assert_allclose(simnorm(x, group=2), [0.25, 0.75, 0.5, 0.5], rtol=1e-6)
    z = simnorm(jax.random.normal(jax.random.key(0), (3, 16)), group=8)
    np.testing.assert_allclose(z.reshape(3, 2, 8).sum(-1), 1.0, rtol=1e-6)


def test_the_bins_are_101_steps_of_0_2_over_minus_10_to_10_in_symlog_space():
    assert BINS.shape == (101,)
    np.testing.assert_allclose(BINS[np.array([0, 50, 51, 100])], [-10.0, 0.0, 0.2, 10.0], atol=1e-6)


def test_soft_cross_entropy_against_the_two_hot_of_symlog_target():
    uniform = jnp.zeros(101)
    # A uniform prediction: log 101 whatever the target; its decoded value is 0.
    np.testing.assert_allclose(soft_cross_entropy(uniform, jnp.asarray(3.7), BINS), LOG_101, rtol=1e-6)
    assert float(predict(uniform, BINS)) == 0.0
    # symlog(target) = 0.3 lies halfway between bins 0.2 (index 51) and 0.4 (index 52).
    target = symexp(jnp.asarray(0.3))
    logits = jnp.full(101, -1e9).at[np.array([0, 51, 52])].set(jnp.log(jnp.array([0.2, 0.2, 0.6])))
    expected = -(0.5 * math.log(0.2) + 0.5 * math.log(0.6))
    np.testing.assert_allclose(soft_cross_entropy(logits, target, BINS), expected, rtol=1e-4)
    # Beyond vmax the target clamps to the last bin.
    confident = jnp.full(101, -1e9).at[100].set(0.0)
    np.testing.assert_allclose(soft_cross_entropy(confident, jnp.asarray(1e6), BINS), 0.0, atol=1e-5)


def test_td_target_stops_at_each_steps_own_termination():
    reward, next_q = jnp.array([1.0, 1.0, 2.0]), jnp.array([10.0, 10.0, 10.0])
    terminated = jnp.array([0.0, 1.0, 0.0])
    np.testing.assert_allclose(td_target(reward, terminated, 0.9, next_q), [10.0, 1.0, 11.0], rtol=1e-6)


def test_the_random_pair_is_two_distinct_members_and_every_pair_occurs():
    q = jnp.arange(5.0)
    pairs = set()
    for seed in range(200):
        a, b = (int(x) for x in pair_of(q, jax.random.key(seed)))
        assert a != b
        pairs.add(frozenset((a, b)))
    assert len(pairs) == 10  # all of C(5, 2)
    # The TD target's min and the policy's mean of the pair, on a (num_q, batch) ensemble.
    values = jnp.array([[1.0, 5.0], [3.0, 2.0], [4.0, 0.0]])
    key = jax.random.key(7)
    chosen = np.asarray(jax.random.permutation(key, 3)[:2])
    np.testing.assert_allclose(jnp.min(pair_of(values, key), 0), values[chosen].min(0))


def test_the_three_model_losses_weight_step_t_by_rho_to_the_t():
    horizon, batch, rho = 2, 1, 0.5
    valid = jnp.ones((horizon, batch))
    predicted = jnp.array([[[1.0, 0.0]], [[0.0, 2.0]]])  # (H, B, latent)
    target = jnp.zeros_like(predicted)
    # MSE per step: 0.5 and 2.0; (1 * 0.5 + 0.5 * 2.0) / H.
    np.testing.assert_allclose(consistency_loss(predicted, target, valid, rho), (0.5 + 1.0) / 2, rtol=1e-6)
    # A masked second step contributes nothing.
    masked = jnp.array([[1.0], [0.0]])
    np.testing.assert_allclose(consistency_loss(predicted, target, masked, rho), 0.5 / 2, rtol=1e-6)
    # Uniform logits: every cross-entropy is log 101.
    logits = jnp.zeros((horizon, batch, 101))
    reward = jnp.array([[0.5], [-2.0]])
    np.testing.assert_allclose(reward_loss(logits, reward, valid, rho, BINS), 1.5 * LOG_101 / 2, rtol=1e-6)
    q_logits = jnp.zeros((2, horizon, batch, 101))  # num_q = 2
    np.testing.assert_allclose(value_loss(q_logits, reward, valid, rho, BINS), 1.5 * 2 * LOG_101 / 4, rtol=1e-6)


def test_the_value_loss_leaves_its_target_alone():
    grad = jax.grad(lambda t: value_loss(jnp.zeros((2, 1, 1, 101)), t, jnp.ones((1, 1)), 0.5, BINS))(jnp.ones((1, 1)))
    assert float(jnp.abs(grad).sum()) == 0.0


def test_termination_loss_is_the_binary_cross_entropy():
    logits, terminated = jnp.array([[2.0], [-1.0]]), jnp.array([[1.0], [0.0]])
    expected = optax.sigmoid_binary_cross_entropy(logits, terminated).mean()
    np.testing.assert_allclose(termination_loss(logits, terminated, jnp.ones((2, 1))), expected, rtol=1e-6)


def test_window_valid_keeps_the_transition_that_ends_an_episode_and_masks_what_follows():
    false, true = jnp.zeros((3, 1), bool), jnp.array([[False], [True], [False]])
    np.testing.assert_array_equal(window_valid(true, false)[:, 0], [1.0, 1.0, 0.0])
    np.testing.assert_array_equal(window_valid(false, true)[:, 0], [1.0, 1.0, 0.0])
    np.testing.assert_array_equal(window_valid(false, false)[:, 0], [1.0, 1.0, 1.0])


def test_the_running_scale_is_an_ema_of_the_floored_percentile_range():
    scale = RunningScale.create()
    assert float(scale.value) == 1.0
    # P5 = 5 and P95 = 95 over 0..100: the range 90 pulls the EMA 1% of the way from 1.
    np.testing.assert_allclose(update_running(scale, jnp.arange(101.0), 0.01).value, 1.0 + 0.01 * 89.0, rtol=1e-6)
    # A range under 1 is floored at 1: the scale stays.
    np.testing.assert_allclose(update_running(scale, jnp.linspace(0, 0.5, 11), 0.01).value, 1.0, rtol=1e-6)


def test_the_policy_loss_is_the_rho_weighted_mean_over_time_of_minus_scaled_q():
    q = jnp.array([[2.0], [4.0]])  # H + 1 = 2 latents, batch 1
    loss = policy_loss(q, jnp.zeros_like(q), jnp.asarray(2.0), jnp.ones_like(q), 0.5, 1e-4)
    np.testing.assert_allclose(loss, (-1.0 + 0.5 * -2.0) / 2, rtol=1e-6)
    # The entropy bonus enters with its coefficient.
    bonus = policy_loss(jnp.zeros_like(q), jnp.ones_like(q), jnp.asarray(1.0), jnp.ones_like(q), 0.5, 0.1)
    np.testing.assert_allclose(bonus, -(0.1 + 0.05) / 2, rtol=1e-6)


def test_the_squashed_gaussian_at_its_centre():
    # raw log-std atanh(2/3) maps to log-std 0 within [-10, 2]; eps = 0 draws the mean.
    raw = jnp.array([0.0, 0.0, math.atanh(2.0 / 3.0), math.atanh(2.0 / 3.0)])
    action, mean, log_prob, scaled = squashed_gaussian(raw, jnp.zeros(2), -10.0, 2.0)
    np.testing.assert_allclose(action, [0.0, 0.0], atol=1e-7)
    np.testing.assert_allclose(mean, [0.0, 0.0], atol=1e-7)
    expected = -2 * (0.5 * math.log(2 * math.pi) + math.log(1 + 1e-6))
    np.testing.assert_allclose(log_prob, expected, rtol=1e-5)
    np.testing.assert_allclose(scaled, -expected * 2, rtol=1e-5)
    # A masked dimension draws exactly 0 and the entropy scales by the unmasked count: minus the
    # pre-tanh Gaussian log-probability of eps = (1, 0 masked) at log-std 0, times 1.
    masked_action, _, _, masked_scaled = squashed_gaussian(raw, jnp.ones(2), -10.0, 2.0, jnp.array([1.0, 0.0]))
    assert float(masked_action[1]) == 0.0
    np.testing.assert_allclose(masked_scaled, (0.5 + math.log(2 * math.pi)) * 1, rtol=1e-6)


def test_polyak_averaging_moves_the_target_tau_of_the_way():
    np.testing.assert_allclose(soft_update({"w": jnp.array(1.0)}, {"w": jnp.array(3.0)}, 0.01)["w"], 1.02, rtol=1e-6)


@pytest.mark.parametrize(("length", "discount"), [(10, 0.95), (200, 0.975), (500, 0.99), (1000, 0.995)])
def test_the_discount_grows_with_the_episode_length(length, discount):
    assert discount_from_episode_length(length) == pytest.approx(discount)


def test_seed_steps_default_to_five_episodes_and_at_least_a_thousand():
    assert default_seed_steps(200) == 1000
    assert default_seed_steps(500) == 2500


def test_refit_weights_the_elites_by_their_exponentiated_values():
    config = PlannerConfig(num_elites=2, temperature=0.5)
    # Values 2 ln 3 and 0 (a third is not an elite): scores e^0 and e^(-ln 3), i.e. 3/4 and 1/4.
    values = jnp.array([2 * math.log(3.0), 0.0, -5.0])
    actions = jnp.array([1.0, -1.0, 0.3]).reshape(1, 3, 1)  # (H = 1, N, A = 1)
    mean, std, score, elites = refit(values, actions, config)
    np.testing.assert_allclose(score, [0.75, 0.25], rtol=1e-6)
    np.testing.assert_allclose(mean, [[0.5]], rtol=1e-6)
    np.testing.assert_allclose(std, [[math.sqrt(0.75)]], rtol=1e-6)
    np.testing.assert_allclose(elites[0, :, 0], [1.0, -1.0])
    # The std is clamped to [min_std, max_std].
    _, tight, _, _ = refit(jnp.array([1.0, 1.0]), jnp.array([0.2, 0.2]).reshape(1, 2, 1), config)
    np.testing.assert_allclose(tight, [[config.min_std]])


def bowl(best: float) -> LatentModel:
    """A landscape of known best action: reward -(a - best)^2 every step, the latent unchanged, value 0."""
    return LatentModel(
        next=lambda z, a: z,
        reward=lambda z, a: -jnp.sum(jnp.square(a - best), -1),
        pi=lambda z, key: jax.random.uniform(key, (z.shape[0], 2), minval=-1, maxval=1),
        value=lambda z, a, key: jnp.zeros(z.shape[0]),
        discount=0.9,
    )


def test_the_planner_moves_its_mean_to_the_best_sequence_of_a_known_landscape():
    z, previous = jnp.zeros(4), jnp.zeros((3, 2))
    decide = jax.jit(lambda key, first: plan(bowl(0.6), z, previous, first, key, PlannerConfig(), evaluating=True))
    action, mean = decide(jax.random.key(0), jnp.asarray(True))
    np.testing.assert_allclose(mean, 0.6, atol=0.05)
    np.testing.assert_allclose(action, 0.6, atol=0.1)
    # The executed action is one elite's first action, so it lies where the elites do.
    one_iteration = PlannerConfig(iterations=1)
    _, first_mean = jax.jit(lambda key: plan(bowl(0.6), z, previous, True, key, one_iteration, True))(jax.random.key(0))
    assert float(jnp.abs(first_mean - 0.6).max()) > float(jnp.abs(mean - 0.6).max())  # iterating refines it


def test_the_warm_start_is_the_previous_mean_shifted_by_one_step_unless_an_episode_starts():
    # One iteration with a tiny std and no policy samples: the plan stays at its warm start.
    config = PlannerConfig(iterations=1, num_pi_trajs=0, min_std=1e-6, max_std=1e-6)
    previous = jnp.array([[0.1], [0.2], [0.3]])
    model = LatentModel(
        next=lambda z, a: z,
        reward=lambda z, a: jnp.zeros(z.shape[0]),
        pi=lambda z, key: jnp.zeros((z.shape[0], 1)),
        value=lambda z, a, key: jnp.zeros(z.shape[0]),
        discount=0.9,
    )
    _, mean = plan(model, jnp.zeros(2), previous, jnp.asarray(False), jax.random.key(0), config, True)
    np.testing.assert_allclose(mean[:, 0], [0.2, 0.3, 0.0], atol=1e-5)
    _, fresh = plan(model, jnp.zeros(2), previous, jnp.asarray(True), jax.random.key(0), config, True)
    np.testing.assert_allclose(fresh[:, 0], [0.0, 0.0, 0.0], atol=1e-5)
