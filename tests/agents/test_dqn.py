"""DQN (Mnih et al. 2015): the Q-learning target and Huber loss by hand, epsilon-greedy,
known-answer probes, learning.

Probes (tests/probe_envs.py): Q = [1, 1] on a one-step env; Q = [0, 1] for the two actions;
the time-limit twin with rewards scaled by 0.1 so every error stays in the Huber loss's
quadratic zone (V = 1.0 by bootstrapping at the limit, 0.357 with a true terminal).
Calibration of the learning test: docs/agents/dqn.md.
"""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import DQN
from ajax.agents.DQN.core import (
    double_q_learning_target,
    q_learning_target,
    refresh_crossings,
    refreshed_target,
    td_loss,
)
from ajax.agents.loop import RunSettings
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


def seeds_mean_q(agent, state):
    network = DiscreteQNetwork(agent.network_args.critic_architecture, 2)
    return np.asarray(jax.vmap(lambda params: network.apply(params, OBS)[0])(state.critic_state.params)).mean(axis=0)


def test_dqn_bootstraps_at_time_limits_not_terminals():
    # Each target refresh adds one discounted step to the value: refresh often enough to settle.
    # One seed's Q scatters by about 0.04 around the fixed point (seeds 0-3 gave 0.33 to 0.41
    # on the twin); the mean of two seeds is held to the same tolerance.
    settings = dict(gamma=0.9, target_update_interval=100)
    endless = dqn(EndlessReward(episode_steps=5, scale=0.1), **settings)
    twin = dqn(TerminalTwin(episode_steps=5, scale=0.1), **settings)
    q_endless = seeds_mean_q(endless, endless.train(seed=[0, 1], n_timesteps=8000)[0])
    q_twin = seeds_mean_q(twin, twin.train(seed=[0, 1], n_timesteps=8000)[0])
    np.testing.assert_allclose(q_endless, [1.0, 1.0], atol=0.1)
    np.testing.assert_allclose(q_twin, [0.1 * TWIN_TD_VALUE] * 2, atol=0.05)


def test_double_q_target_picks_with_the_online_network_and_values_with_the_target():
    next_q_online = jnp.array([[1.0, 3.0], [2.0, 0.0]])
    next_q_target = jnp.array([[10.0, 20.0], [30.0, 40.0]])
    target = double_q_learning_target(
        jnp.array([1.0, 1.0]), jnp.array([False, True]), next_q_online, next_q_target, 0.9
    )
    # argmax online: actions 1 and 0; the target values them 20 and 30; the second is terminal.
    np.testing.assert_allclose(target, [1.0 + 0.9 * 20.0, 1.0], rtol=1e-6)


def test_a_refresh_copies_at_tau_one_and_averages_once_per_crossing_below_it():
    params, target = {"w": jnp.array([1.0])}, {"w": jnp.array([0.0])}
    assert float(refreshed_target(params, target, 1.0, jnp.array(1))["w"][0]) == 1.0
    assert float(refreshed_target(params, target, 1.0, jnp.array(0))["w"][0]) == 0.0
    assert float(refreshed_target(params, target, 0.5, jnp.array(2))["w"][0]) == pytest.approx(0.75)
    # SB3's count: a round of 256 ticks with a refresh every 10 crosses 25 or 26 refresh points.
    assert [int(refresh_crossings(jnp.array(t), 256, 10)) for t in (256, 512, 768)] == [25, 26, 25]


def test_the_dueling_head_splits_q_into_a_value_and_centred_advantages():
    network = DiscreteQNetwork(SMALL, 3, dueling=True)
    params = network.init(jax.random.PRNGKey(0), OBS)
    q = network.apply(params, OBS)
    # With the advantages' head at zero every action is worth the state's value.
    flat = jax.tree.map(jnp.zeros_like, params["params"]["Dense_1"])
    same = network.apply({"params": {**params["params"], "Dense_1": flat}}, OBS)
    np.testing.assert_allclose(same, jnp.broadcast_to(same[:, :1], same.shape))
    # ...and the mean over actions is the value whatever the advantages.
    np.testing.assert_allclose(q.mean(axis=-1), same[:, 0], rtol=1e-5, atol=1e-6)


def test_a_round_collects_train_freq_steps_per_env_then_makes_gradient_steps_updates():
    for gradient_steps, per_round in ((4, 4), (-1, 16)):
        agent = dqn(OneStepReward(), n_envs=2, learning_starts=0, train_freq=8, gradient_steps=gradient_steps)
        state, _ = agent.train(seed=0, n_timesteps=200)
        assert int(state.collector_state.timestep[0]) == 192  # 12 whole rounds of 2 * 8 steps
        assert int(state.n_updates[0]) == 12 * per_round


def test_the_updates_of_a_round_are_one_scan_not_unrolled():
    def program(gradient_steps):
        agent = dqn(OneStepReward(), learning_starts=0, train_freq=4, gradient_steps=gradient_steps)
        run = RunSettings(0, 64, 64)
        one_seed = agent.get_make_train()(run=run)
        program = str(jax.make_jaxpr(lambda key: one_seed(key, None))(jax.random.PRNGKey(0)))
        return re.sub(r"length=\d+", "length=N", program)

    assert program(64) == program(2)  # the same program but for the scan's length


@pytest.mark.slow  # 15-37 s; the default suite's DQN learning test is the Zoo preset's (test_zoo.py)
def test_dqn_learns_cartpole():
    scores = last_returns(DQN("CartPole-v1", n_envs=4), 30_000, 2_500)
    assert scores.mean() >= 60 and scores.min() >= 40, scores
