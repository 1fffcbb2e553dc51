"""APO (Ma et al. 2021, arXiv:2106.03442): its maths by hand, known reward rates, learning.

Equations checked: the differential TD error and average-reward GAE (PPO's GAE on
r - rho with gamma = 1), bootstrapping at a time limit and not at a terminal; the
reward-rate update rho_k = rho_{k-1} + beta_k (mean r - rho_{k-1}); the Average Value
Constraint's penalty nu (E[V])^2 on the critic. Calibration of the learning test: docs/agents/apo.md.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax.agents.APO import APO
from ajax.agents.APO.core import (
    average_value_penalty,
    differential_advantages,
    differential_value_loss,
    reward_rate_update,
)
from ajax.networks.actor_critic import CategoricalActor, ValueCritic
from tests.agents.test_ppo import REACHES, initialised_leaves
from tests.conftest import last_returns
from tests.probe_envs import EndlessReward

OBS = jnp.ones((1, 1))
SMALL = ("16", "tanh")


def test_differential_advantages_with_a_truncation_and_a_termination():
    # rho = 1, lambda = 0.5, no discount: delta_t = r_t - 1 + V(s'_t) - V(s_t).
    rewards, rho = jnp.array([1.0, 2.0, 3.0])[:, None], jnp.asarray(1.0)
    values, next_values = jnp.array([1.0, 2.0, 3.0])[:, None], jnp.array([4.0, 8.0, 6.0])[:, None]
    no = jnp.zeros((3, 1), bool)
    ends_at_1 = no.at[1].set(True)
    # A time limit at step 1 bootstraps from its final observation: deltas 3, 7, 5;
    # A2 = 5 (the rollout's last step), A1 = 7 (the episode ended), A0 = 3 + .5 * 7 = 6.5.
    advantages, targets = differential_advantages(rewards, rho, values, next_values, no, ends_at_1, 0.5)
    np.testing.assert_allclose(advantages[:, 0], [6.5, 7.0, 5.0])
    np.testing.assert_allclose(targets[:, 0], [7.5, 9.0, 8.0])
    # A true terminal at step 1 drops V(s'_1): delta_1 = 1 - 2 = -1, A0 = 3 + .5 * -1 = 2.5.
    advantages, targets = differential_advantages(rewards, rho, values, next_values, ends_at_1, no, 0.5)
    np.testing.assert_allclose(advantages[:, 0], [2.5, -1.0, 5.0])
    np.testing.assert_allclose(targets[:, 0], [3.5, 1.0, 8.0])
    # lambda = 1 without ends: the undiscounted sum of the deltas, 3 + 7 + 5 from step 0.
    advantages, _ = differential_advantages(rewards, rho, values, next_values, no, no, 1.0)
    np.testing.assert_allclose(advantages[:, 0], [15.0, 12.0, 5.0])


def test_reward_rate_update_averages_the_rollout_means():
    first, second = jnp.array([[2.0, 4.0]]), jnp.array([[1.0, 1.0]])  # rollout means 3 and 1
    # k = 1: beta_1 = 1, the first rollout's mean whatever rho_0 was.
    rho = reward_rate_update(jnp.asarray(5.0), first, 0.1, n_rollouts=1)
    assert float(rho) == pytest.approx(3.0)
    # k = 2: beta_2 = .1 / (1 - .9^2); the means weighted .9 * .1 and .1, normalised.
    rho = reward_rate_update(rho, second, 0.1, n_rollouts=2)
    assert float(rho) == pytest.approx((0.09 * 3.0 + 0.1 * 1.0) / 0.19, rel=1e-6)
    # Long after the start beta_k = alpha; alpha = 1 takes each rollout's mean as it is.
    assert float(reward_rate_update(jnp.asarray(2.0), second, 0.1, n_rollouts=1000)) == pytest.approx(1.9)
    assert float(reward_rate_update(jnp.asarray(2.0), second, 1.0, n_rollouts=7)) == pytest.approx(1.0)


def test_average_value_penalty_pulls_the_level_of_the_value():
    values, targets = jnp.array([1.0, -3.0, 5.0]), jnp.array([0.0, -3.0, 3.0])
    assert float(average_value_penalty(values, 0.1)) == pytest.approx(0.1)  # 0.1 * mean(V)^2, mean 1
    # The squared error (1 + 0 + 4) / 3 plus the penalty.
    assert float(differential_value_loss(values, targets, 0.1)) == pytest.approx(5.0 / 3.0 + 0.1)
    # Its gradient, 2 nu E[V] / n, is the same for every value: it moves the level only.
    np.testing.assert_allclose(jax.grad(average_value_penalty)(values, 0.1), [2 * 0.1 * 1.0 / 3] * 3, rtol=1e-6)
    assert float(average_value_penalty(values, 0.0)) == 0.0


def small_apo(env, **kwargs):
    defaults = dict(
        n_envs=2, n_steps=16, batch_size=16, n_epochs=2, actor_architecture=SMALL, critic_architecture=SMALL
    )
    return APO(env, **{**defaults, **kwargs})


def values_at_the_probe_observation(state):
    return np.asarray(jax.vmap(lambda params: ValueCritic(SMALL).apply(params, OBS)[0])(state.critic_state.params))


class RewardingAction(EndlessReward):
    """Never terminates, truncated every `episode_steps` steps; action 1 pays 1, action 0 pays 0."""

    def reward(self, action):
        return jnp.asarray(action == 1, jnp.float32)


def test_the_optimal_reward_rate_and_a_value_held_at_zero():
    # The optimal reward rate is 1 (a uniform policy's is 0.5). The observation never
    # changes, so once the policy is optimal every TD error r - rho + V(s') - V(s) is 0 and
    # only the Average Value Constraint moves the critic: the value that drifted while rho
    # trailed the improving policy goes back to 0 (with nu = 0 it stays where it drifted, near 6).
    agent = small_apo(RewardingAction(episode_steps=5), actor_learning_rate=1e-2, critic_learning_rate=1e-2)
    state, _ = agent.train(seed=[0, 1], n_timesteps=4096)
    np.testing.assert_allclose(state.average_reward, [1.0, 1.0], atol=1e-3)
    probabilities = jax.vmap(lambda params: CategoricalActor(SMALL, 2).apply(params, OBS).probs[0, 1])
    assert np.all(probabilities(state.actor_state.params) >= 0.99)
    np.testing.assert_allclose(values_at_the_probe_observation(state), [0.0, 0.0], atol=0.01)


TOTAL, HALF = 256, 128  # 4 rollouts of 2 envs x 32 steps, split after two


@pytest.fixture(scope="module")
def tiny():
    return small_apo("Pendulum-v1", n_steps=32, batch_size=32)


@pytest.fixture(scope="module")
def one_call(tiny):
    state, _ = tiny.train(seed=[0, 1], n_timesteps=TOTAL)
    return state


def test_one_reward_rate_per_seed_and_the_same_seed_the_same_run(tiny, one_call):
    assert one_call.average_reward.shape == (2,)
    assert one_call.average_reward[0] != one_call.average_reward[1]
    again, _ = tiny.train(seed=[0, 1], n_timesteps=TOTAL)
    for a, b in zip(jax.tree.leaves(one_call), jax.tree.leaves(again), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow  # about 20 s on 2 cores, held out of the default suite's 10 minutes; the probes stay
def test_apo_learns_pendulum():
    tanh64 = ("64", "tanh", "64", "tanh")
    agent = APO(
        "Pendulum-v1",
        n_envs=4,
        n_steps=256,
        actor_learning_rate=1e-3,
        critic_learning_rate=1e-3,
        actor_architecture=tanh64,
        critic_architecture=tanh64,
    )
    scores = last_returns(agent, 40_960, 8_192)
    assert scores.mean() >= -400 and scores.min() >= -700, scores


def test_bad_input():
    with pytest.raises(ValueError, match=r"batch_size=100 does not divide .* = 256 transitions"):
        APO("CartPole-v1", n_envs=2, n_steps=128, batch_size=100)
    with pytest.raises(ValueError, match="n_epochs must be a positive integer, got 0"):
        APO("CartPole-v1", n_epochs=0)
    with pytest.raises(ValueError, match=r"average_reward_step must lie in \(0, 1\]"):
        APO("CartPole-v1", average_reward_step=-0.1)
    with pytest.raises(ValueError, match=r"nu must lie in \[0, inf\), got -0.1"):
        APO("CartPole-v1", nu=-0.1)
    with pytest.raises(ValueError, match="clip_range must be >= 0"):
        APO("CartPole-v1", clip_range=-0.2)
    with pytest.raises(ValueError, match="gae_lambda must lie in"):
        APO("Pendulum-v1", gae_lambda=1.5)
    with pytest.raises(ValueError, match="actor_learning_rate must be a finite number above 0"):
        APO("Pendulum-v1", actor_learning_rate=-1e-3)
    with pytest.raises(NotImplementedError, match="APO has no recurrent memory"):
        APO("CartPole-v1", memory={"kind": "gru"})


@pytest.mark.parametrize("keyword", ["encoder_kernel_init", "actor_bias_init", "critic_bias_init"])
def test_each_initializer_reaches_exactly_the_parameters_it_names(keyword):
    assert initialised_leaves(APO, "Pendulum-v1", keyword) == REACHES[keyword]


def test_the_means_weights_keep_ppos_default():
    with pytest.raises(TypeError, match="mean_kernel_init"):
        APO("Pendulum-v1", mean_kernel_init=jax.nn.initializers.zeros)
