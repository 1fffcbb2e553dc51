"""DQN (Mnih et al. 2015): the Q-learning target and Huber loss by hand, epsilon-greedy,
known-answer probes, learning.

Probes (tests/probe_envs.py): Q = [1, 1] on a one-step env; Q = [0, 1] for the two actions;
the time-limit twin with rewards scaled by 0.1 so every error stays in the Huber loss's
quadratic zone (V = 1.0 by bootstrapping at the limit, 0.357 with a true terminal).
Calibration of the learning test: docs/agents.md.
"""

import jax.numpy as jnp
import numpy as np
import pytest

from ajax import DQN
from ajax.agents.DQN.core import q_learning_target, td_loss
from ajax.networks.actor_critic import DiscreteQNetwork
from tests.conftest import first_seed, last_returns
from tests.probe_envs import BestAction, EndlessReward, OneStepReward, TerminalTwin

OBS = jnp.ones((1, 1))
SMALL = ("32", "relu", "32", "relu")
TWIN_TD_VALUE = 1.0 / (1.0 - 0.9 * 4 / 5)  # 3.57


def test_q_learning_target_and_huber_loss():
    next_q = jnp.array([[2.0, 5.0], [2.0, 5.0]])
    target = q_learning_target(jnp.array([1.0, 1.0]), jnp.array([False, True]), next_q, 0.9)
    np.testing.assert_allclose(target, [5.5, 1.0], rtol=1e-6)
    q = jnp.array([[0.0, 3.0], [0.0, 0.5]])
    # errors: 3 - 5.5 = -2.5 (Huber 2.0), 0.5 - 1 = -0.5 (Huber 0.125)
    assert float(td_loss(q, jnp.array([1, 1]), target)) == pytest.approx((2.0 + 0.125) / 2)


def dqn(env, **kwargs):
    defaults = dict(n_envs=4, learning_starts=256, batch_size=64, buffer_size=5000, architecture=SMALL)
    return DQN(env, **{**defaults, **kwargs})


def dqn_q(agent, state):
    network = DiscreteQNetwork(agent.network_args.critic_architecture, 2)
    return np.asarray(network.apply(first_seed(state).critic_state.params, OBS)[0])


def test_dqn_one_step_value():
    agent = dqn(OneStepReward())
    q = dqn_q(agent, agent.train(seed=0, n_timesteps=2048)[0])
    np.testing.assert_allclose(q, [1.0, 1.0], atol=0.1)


def test_dqn_best_action():
    agent = dqn(BestAction())
    q = dqn_q(agent, agent.train(seed=0, n_timesteps=2048)[0])
    np.testing.assert_allclose(q, [0.0, 1.0], atol=0.1)


def test_dqn_bootstraps_at_time_limits_not_terminals():
    # Each target refresh adds one discounted step to the value: refresh often enough to settle.
    settings = dict(gamma=0.9, target_update_interval=100)
    endless = dqn(EndlessReward(episode_steps=5, scale=0.1), **settings)
    twin = dqn(TerminalTwin(episode_steps=5, scale=0.1), **settings)
    q_endless = dqn_q(endless, endless.train(seed=0, n_timesteps=8000)[0])
    q_twin = dqn_q(twin, twin.train(seed=0, n_timesteps=8000)[0])
    np.testing.assert_allclose(q_endless, [1.0, 1.0], atol=0.1)
    np.testing.assert_allclose(q_twin, [0.1 * TWIN_TD_VALUE] * 2, atol=0.05)


@pytest.mark.learning
def test_dqn_learns_cartpole():
    scores = last_returns(DQN("CartPole-v1", n_envs=4), 30_000, 2_500)
    assert scores.mean() >= 60 and scores.min() >= 40, scores
