"""AVG (Vasan et al. 2024): the running statistics, the TD scale and the scaled loss by hand,
known-answer probes, no replay and no target, bad input; slow: learning Pendulum over 300k steps.

Calibration of the learning test: docs/agents/avg.md.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax.agents.AVG import AVG
from ajax.agents.AVG.core import scaled_td_loss, td_scale
from ajax.agents.AVG.state import RunningMoments
from ajax.logging.wandb_logging import LoggingConfig
from ajax.networks.actor_critic import QCritic, SquashedGaussianActor
from ajax.networks.mlp import MLP
from tests.probe_envs import BestAction, EndlessReward, OneStepReward

OBS = jnp.ones((1, 1))
SMALL = ("32", "leaky_relu", "32", "leaky_relu")


def test_running_moments_match_the_whole_stream():
    stream = jax.random.normal(jax.random.PRNGKey(0), (30, 3)) * jnp.array([1.0, 2.0, 5.0]) + 4.0
    moments = RunningMoments.create((3,))
    for batch in jnp.split(stream, [1, 5, 17]):  # uneven batches, the first of one sample
        moments = moments.update(batch)
    np.testing.assert_allclose(moments.mean, stream.mean(0), rtol=1e-3)
    np.testing.assert_allclose(moments.var, stream.var(0), rtol=1e-3)
    np.testing.assert_allclose(moments.normalize(stream).std(0), 1.0, rtol=1e-3)


def test_td_scale_and_scaled_loss_by_hand():
    # Var[R] = 4, Var[gamma_t] = 0.25, E[G^2] = 12: sigma = sqrt(4 + 0.25 * 12) = sqrt(7).
    rewards = RunningMoments(jnp.array(1.0), jnp.array(4.0), jnp.array(10.0))
    discounts = RunningMoments(jnp.array(0.5), jnp.array(0.25), jnp.array(10.0))
    squared_returns = RunningMoments(jnp.array(12.0), jnp.array(3.0), jnp.array(10.0))
    sigma = td_scale(rewards, discounts, squared_returns)
    np.testing.assert_allclose(sigma, np.sqrt(7.0), rtol=1e-6)
    # Before two samples the scale is 1.
    assert float(td_scale(RunningMoments.create(), discounts, squared_returns)) == 1.0
    # (1/2) mean(((y - Q) / sigma)^2) with y - Q = [2, -4], sigma = 2: (1/2) * (1 + 4) / 2 = 1.25
    assert float(scaled_td_loss(jnp.array([3.0, -1.0]), jnp.array([1.0, 3.0]), jnp.array(2.0))) == 1.25


def test_penultimate_features_have_unit_norm():
    mlp = MLP(SMALL, normalize_features=True)
    x = jax.random.normal(jax.random.PRNGKey(1), (5, 4)) * 100.0
    features = mlp.apply(mlp.init(jax.random.PRNGKey(0), x), x)
    np.testing.assert_allclose(jnp.linalg.norm(features, axis=-1), 1.0, rtol=1e-5)


def avg(env, **kwargs):
    return AVG(env, **{"actor_architecture": SMALL, "critic_architecture": SMALL, "alpha": 1e-3, **kwargs})


def test_state_holds_no_replay_and_no_target():
    state, _ = avg("Pendulum-v1").train(seed=0, n_timesteps=0)
    assert state.collector_state.buffer_state is None and state.critic_state.target_params is None
    np.testing.assert_allclose(jnp.exp(state.alpha.params["log_alpha"]), 1e-3, rtol=1e-6)


def value_of_the_policy(agent, state):
    """Q(s, pi's mode): with almost no entropy the policy settles on one action, the only one
    the critic keeps learning about, so the value is read there."""
    state = jax.tree.map(lambda x: x[0], state)
    obs = state.obs_moments.normalize(OBS)
    actor = SquashedGaussianActor(agent.network_args.actor_architecture, 1, normalize_features=True)
    critic = QCritic(agent.network_args.critic_architecture, normalize_features=True)
    action = actor.apply(state.actor_state.params, obs).mode()
    return float(critic.apply(state.critic_state.params, obs, action)[0])


def test_one_step_value():
    agent = avg(OneStepReward(continuous=True))
    state, _ = agent.train(seed=0, n_timesteps=2000)
    assert value_of_the_policy(agent, state) == pytest.approx(1.0, abs=0.1)


def test_best_action():
    agent = avg(BestAction(continuous=True))
    state, _ = agent.train(seed=0, n_timesteps=3000)
    state = jax.tree.map(lambda x: x[0], state)
    actor = SquashedGaussianActor(agent.network_args.actor_architecture, 1, normalize_features=True)
    pi = actor.apply(state.actor_state.params, state.obs_moments.normalize(OBS))
    assert float(pi.mode()[0, 0]) == pytest.approx(0.5, abs=0.1)


def test_time_limit_bootstrap():
    # Reward 1 forever, truncated every 5 steps, gamma 0.9: bootstrapping gives 10 (at most 5 if not).
    agent = avg(EndlessReward(continuous=True, episode_steps=5), gamma=0.9)
    state, _ = agent.train(seed=0, n_timesteps=3000)
    assert value_of_the_policy(agent, state) == pytest.approx(10.0, abs=1.0)


@pytest.mark.slow
def test_avg_learns_pendulum():
    _, evaluations = AVG("Pendulum-v1").train(
        seed=[0, 1, 2, 3, 4, 5], n_timesteps=300_000, logging_config=LoggingConfig(log_frequency=30_000)
    )
    returns = np.asarray(evaluations["Eval/episodic mean reward"])
    assert returns[:, -5:].mean() >= -1050, returns.round()


def test_bad_input():
    with pytest.raises(ValueError, match="AVG acts in continuous"):
        AVG("CartPole-v1")
    with pytest.raises(ValueError, match=r"alpha must lie in \[0, inf\), got -0.1"):
        AVG("Pendulum-v1", alpha=-0.1)
    with pytest.raises(NotImplementedError, match="memory"):
        AVG("Pendulum-v1", memory={"kind": "gru"})
