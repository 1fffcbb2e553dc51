"""Exact maths against hand-computed values: GAE, the SAC and DQN targets, the losses."""

import distrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax.agents.DQN.core import q_learning_target, td_loss
from ajax.agents.PPO.core import approx_kl, clipped_surrogate_loss, generalized_advantages, value_loss
from ajax.agents.SAC.core import polyak, soft_policy_loss, soft_q_target, temperature_loss
from ajax.environments.utils import agent_action_to_env, env_action_to_agent
from ajax.evaluate import discounted_returns
from ajax.networks.distributions import Squash
from ajax.schedule import at, linear


def test_gae_with_a_truncation_and_a_termination_inside_the_rollout():
    # gamma = lambda = 0.5. Step 1 ends at a time limit (its next value is the final
    # observation's, 10); step 3 is a true terminal (its next value 7 must be ignored).
    rewards = jnp.array([1.0, 2.0, 3.0, 4.0])[:, None]
    values = jnp.array([0.5, 1.0, 1.5, 2.0])[:, None]
    next_values = jnp.array([1.0, 10.0, 2.0, 7.0])[:, None]
    terminated = jnp.array([0, 0, 0, 1], bool)[:, None]
    truncated = jnp.array([0, 1, 0, 0], bool)[:, None]
    # deltas: 1 + .5*1 - .5 = 1 | 2 + .5*10 - 1 = 6 | 3 + .5*2 - 1.5 = 2.5 | 4 - 2 = 2
    # A3 = 2; A2 = 2.5 + .25*2 = 3; A1 = 6 (episode ended); A0 = 1 + .25*6 = 2.5
    advantages, targets = generalized_advantages(rewards, values, next_values, terminated, truncated, 0.5, 0.5)
    np.testing.assert_allclose(advantages[:, 0], [2.5, 6.0, 3.0, 2.0], rtol=1e-6)
    np.testing.assert_allclose(targets[:, 0], [3.0, 7.0, 4.5, 4.0], rtol=1e-6)


def test_gae_treating_the_time_limit_as_terminal_would_differ():
    # The same rollout with step 1 a true terminal loses the bootstrap 0.5 * 10.
    args = (jnp.array([[2.0]]), jnp.array([[1.0]]), jnp.array([[10.0]]))
    truncated, _ = generalized_advantages(*args, jnp.array([[False]]), jnp.array([[True]]), 0.5, 0.5)
    terminal, _ = generalized_advantages(*args, jnp.array([[True]]), jnp.array([[False]]), 0.5, 0.5)
    assert float(truncated[0, 0]) == pytest.approx(6.0)
    assert float(terminal[0, 0]) == pytest.approx(1.0)


def test_clipped_surrogate_and_value_loss():
    # ratios e^0.5 = 1.6487 (clipped to 1.2 for A = +1) and e^-0.5 = 0.6065 (clipped to 0.8 for A = -1:
    # min(-0.6065, -0.8) = -0.8). Loss = -mean(1.2, -0.8) = -0.2.
    log_ratio = jnp.array([0.5, -0.5])
    assert float(clipped_surrogate_loss(log_ratio, jnp.array([1.0, -1.0]), 0.2)) == pytest.approx(-0.2, abs=1e-6)
    # An unclipped ratio of 1 gives -mean(A).
    assert float(clipped_surrogate_loss(jnp.zeros(2), jnp.array([2.0, 4.0]), 0.2)) == pytest.approx(-3.0)
    assert float(value_loss(jnp.array([1.0, 3.0]), jnp.array([0.0, 0.0]))) == pytest.approx(5.0)
    assert float(approx_kl(jnp.zeros(3))) == pytest.approx(0.0)


def test_soft_q_target_bootstraps_at_a_time_limit_and_stops_at_a_terminal():
    # y = 1 + 0.9 * (10 - 0.5 * -1) = 10.45; a terminal leaves the reward alone.
    reward, next_q, next_log_prob, alpha = jnp.array([1.0, 1.0]), jnp.array([10.0, 10.0]), jnp.array([-1.0, -1.0]), 0.5
    # Replay stores a truncated transition with terminated=False and its final observation.
    terminated = jnp.array([False, True])
    target = soft_q_target(reward, terminated, next_q, next_log_prob, alpha, 0.9)
    np.testing.assert_allclose(target, [10.45, 1.0], rtol=1e-6)


def test_soft_policy_and_temperature_losses():
    assert float(soft_policy_loss(0.5, jnp.array([-1.0, -3.0]), jnp.array([2.0, 4.0]))) == pytest.approx(-4.0)
    # J = -log_alpha * mean(log_prob + target) = -2 * mean(0 - 1, -2 - 1) = -2 * -2 = 4
    loss = temperature_loss(jnp.asarray(2.0), jnp.array([0.0, -2.0]), -1.0)
    assert float(loss) == pytest.approx(4.0)
    grad = jax.grad(temperature_loss)(jnp.asarray(0.0), jnp.array([-3.0]), -1.0)
    assert float(grad) == pytest.approx(4.0)  # entropy 3 above target 1: alpha must fall


def test_polyak():
    out = polyak({"w": jnp.array(0.0)}, {"w": jnp.array(1.0)}, 0.005)
    assert float(out["w"]) == pytest.approx(0.005)


def test_q_learning_target_and_huber_loss():
    next_q = jnp.array([[2.0, 5.0], [2.0, 5.0]])
    target = q_learning_target(jnp.array([1.0, 1.0]), jnp.array([False, True]), next_q, 0.9)
    np.testing.assert_allclose(target, [5.5, 1.0], rtol=1e-6)
    q = jnp.array([[0.0, 3.0], [0.0, 0.5]])
    # errors: 3 - 5.5 = -2.5 (Huber 2.0), 0.5 - 1 = -0.5 (Huber 0.125)
    assert float(td_loss(q, jnp.array([1, 1]), target)) == pytest.approx((2.0 + 0.125) / 2)


def test_action_map_reaches_the_whole_box_and_inverts():
    low, high = jnp.array([-2.0, 0.0]), jnp.array([2.0, 10.0])
    np.testing.assert_allclose(agent_action_to_env(jnp.array([1.0, -1.0]), low, high), [2.0, 0.0])
    np.testing.assert_allclose(agent_action_to_env(jnp.array([5.0, 0.0]), low, high), [2.0, 5.0])  # clipped
    np.testing.assert_allclose(env_action_to_agent(jnp.array([1.0, 7.5]), low, high), [0.5, 0.5])
    np.testing.assert_allclose(env_action_to_agent(jnp.array([4.0, 5.0]), low, high), [2.0, 0.0])  # unclipped


def test_squash_log_prob_matches_change_of_variables():
    base = distrax.Normal(jnp.array([0.3, -0.2]), jnp.array([0.5, 1.5]))
    squash = Squash(base)
    x = jnp.array([0.4, -1.0])
    expected = jnp.sum(base.log_prob(x) - jnp.log(1.0 - jnp.tanh(x) ** 2))
    assert float(squash.log_prob(jnp.tanh(x))) == pytest.approx(float(expected), rel=1e-5)
    sample = squash.sample(seed=jax.random.PRNGKey(0), sample_shape=(1000,))
    assert sample.shape == (1000, 2) and float(jnp.max(jnp.abs(sample))) < 1.0
    np.testing.assert_allclose(squash.mode(), jnp.tanh(jnp.array([0.3, -0.2])), rtol=1e-6)


def test_discounted_returns_restart_at_episode_ends():
    reward = jnp.array([1.0, 1.0, 1.0, 1.0])[:, None]
    done = jnp.array([0, 1, 0, 1], bool)[:, None]
    np.testing.assert_allclose(discounted_returns(reward, done, 0.5)[:, 0], [1.5, 1.0, 1.5, 1.0])


def test_linear_schedule():
    ramp = linear(1.0, 0.0, 100)
    np.testing.assert_allclose([at(ramp, t) for t in (0, 50, 100, 200)], [1.0, 0.5, 0.0, 0.0], atol=1e-6)
    assert float(at(0.3, 7)) == pytest.approx(0.3)
    assert hash(linear(1.0, 0.0, 100)) == hash(ramp)


def test_epsilon_greedy_and_gaussian_exploration():
    from ajax.environments.interaction import epsilon_greedy, gaussian_exploration

    q = jnp.tile(jnp.array([0.0, 1.0, 0.5]), (2000, 1))
    key = jax.random.PRNGKey(0)
    greedy = epsilon_greedy(0.0)(q, key, jnp.asarray(0))
    assert np.all(greedy == 1)
    # Epsilon 1 at step 0, falling to 0 by step 10: uniform at first (each action ~1/3).
    ramp = linear(1.0, 0.0, 10)
    counts = np.bincount(np.asarray(epsilon_greedy(ramp)(q, key, jnp.asarray(0))), minlength=3) / 2000
    np.testing.assert_allclose(counts, [1 / 3] * 3, atol=0.05)
    assert np.all(epsilon_greedy(ramp)(q, key, jnp.asarray(10)) == 1)

    action = jnp.full((5000, 1), 0.9)
    noisy = gaussian_exploration(0.1)(action, key, jnp.asarray(0))
    assert float(jnp.max(noisy)) <= 1.0  # clipped to the agent's box
    assert float(jnp.std(noisy)) == pytest.approx(0.1 * 0.84, abs=0.02)  # clipping trims the upper tail
    np.testing.assert_array_equal(gaussian_exploration(0.0)(action, key, jnp.asarray(0)), action)
