"""ASAC (Adamczyk et al. 2025): the differential soft target and the reward-rate rule by hand,
a probe with a known reward rate, the best action, bad input; slow: learning Pendulum.

Calibration of the learning test: docs/agents/asac.md.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax.agents.ASAC import ASAC
from ajax.agents.ASAC.core import differential_soft_target, reward_rate_update
from ajax.networks.actor_critic import SquashedGaussianActor
from tests.conftest import last_returns
from tests.probe_envs import BestAction, EndlessReward

OBS = jnp.ones((1, 1))
SMALL = ("32", "relu", "32", "relu")


def test_differential_soft_target_by_hand():
    # y = r - theta + (1 - d)(min Q' - alpha log pi) = 1 - 0.5 + (3 - 0.1 * -2) = 3.7; a terminal keeps r - theta.
    target = differential_soft_target(
        jnp.array([1.0, 1.0]),
        jnp.array([False, True]),
        jnp.array([3.0, 3.0]),
        jnp.array([-2.0, -2.0]),
        jnp.array(0.1),
        jnp.array(0.5),
    )
    np.testing.assert_allclose(target, [3.7, 0.5], rtol=1e-6)


def test_reward_rate_moves_by_the_mean_differential_td_error():
    # theta + eta * mean(y - Q) = 0.5 + 0.1 * mean([3.7 - 2.7, 0.5 - 1.5]) = 0.5 + 0.1 * 0 = 0.5
    assert float(reward_rate_update(jnp.array(0.5), jnp.array([3.7, 0.5]), jnp.array([2.7, 1.5]), 0.1)) == 0.5
    # ... and 0.5 + 0.1 * mean([2, 1]) = 0.65
    np.testing.assert_allclose(
        reward_rate_update(jnp.array(0.5), jnp.array([3.0, 2.0]), jnp.array([1.0, 1.0]), 0.1), 0.65, rtol=1e-6
    )


def asac(env, **kwargs):
    defaults = dict(
        n_envs=4,
        learning_starts=256,
        batch_size=64,
        buffer_size=5000,
        actor_architecture=SMALL,
        critic_architecture=SMALL,
        alpha_init=1e-3,
        learn_alpha=False,
    )
    return ASAC(env, **{**defaults, **kwargs})


def test_reward_rate_probe():
    """Reward 2 at every step of a task that never ends (a time limit every 5 steps): rho = 2.

    A discounted agent would report no rate at all; one that took the time limit for a
    terminal would still find 2 here, so the probe checks the estimate, and the time-limit
    twins in test_probes check the bootstrap.
    """
    agent = asac(EndlessReward(continuous=True, episode_steps=5, scale=2.0))
    state, _ = agent.train(seed=[0, 1], n_timesteps=3000)
    np.testing.assert_allclose(state.theta, [2.0, 2.0], atol=0.05)


def test_best_action():
    agent = asac(BestAction(continuous=True))
    state, _ = agent.train(seed=0, n_timesteps=3000)
    actor = SquashedGaussianActor(agent.network_args.actor_architecture, 1)
    pi = actor.apply(jax.tree.map(lambda x: x[0], state.actor_state.params), OBS)
    assert float(pi.mode()[0, 0]) == pytest.approx(0.5, abs=0.1)


@pytest.mark.slow
def test_asac_learns_pendulum():
    relu64 = ("64", "relu", "64", "relu")
    agent = ASAC("Pendulum-v1", learning_starts=1_000, actor_architecture=relu64, critic_architecture=relu64)
    scores = last_returns(agent, 8_000, 1_000)
    assert scores.mean() >= -700 and np.median(scores) >= -400, scores


def test_bad_input():
    with pytest.raises(ValueError, match="ASAC acts in continuous"):
        ASAC("CartPole-v1")
    with pytest.raises(ValueError, match="theta_learning_rate must lie in"):
        ASAC("Pendulum-v1", theta_learning_rate=0.0)
    with pytest.raises(TypeError, match="gamma"):
        ASAC("Pendulum-v1", gamma=0.99)  # no discount in the average-reward criterion
