"""REDQ (Chen et al. 2021): Algorithm 1's subset-min target and fresh minibatches by hand,
known-answer probes, bad input; slow: learning Pendulum, and learning it at least as well as SAC.

Calibration of the learning tests: docs/agents/redq.md.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import SAC
from ajax.agents.REDQ import REDQ
from ajax.agents.REDQ.core import ensemble_mean_q, random_subset, subset_min_target, subset_parameters
from ajax.agents.REDQ.train_REDQ import sample_minibatches
from ajax.buffers import ReplayBuffer
from ajax.buffers.replay import add_items
from ajax.environments.interaction import Transition
from ajax.networks.actor_critic import QEnsemble, SquashedGaussianActor
from tests.conftest import last_returns
from tests.probe_envs import BestAction, EndlessReward, OneStepReward

OBS = jnp.ones((1, 1))
SMALL = ("32", "relu", "32", "relu")


def test_subset_min_target_by_hand():
    # Three of the ensemble's target critics' values at (s', a') for two transitions.
    subset_q = jnp.array([[4.0, 2.0], [3.0, 6.0]])
    # y = r + gamma (1 - d) (min_M Q' - alpha log pi): 1 + 0.5 * (3 - 0.1 * -2) = 2.6; a terminal keeps r.
    target = subset_min_target(
        jnp.array([1.0, 1.0]), jnp.array([False, True]), subset_q, jnp.array([-2.0, -2.0]), jnp.array(0.1), 0.5
    )
    np.testing.assert_allclose(target, [2.6, 1.0], rtol=1e-6)
    assert float(ensemble_mean_q(jnp.array([1.0, 2.0, 6.0]))) == 3.0


def test_random_subset_is_m_distinct_critics_and_gathers_their_parameters():
    subsets = np.asarray(jax.vmap(lambda key: random_subset(key, 10, 2))(jax.random.split(jax.random.PRNGKey(0), 200)))
    assert subsets.shape == (200, 2) and np.all(subsets[:, 0] != subsets[:, 1]) and subsets.min() >= 0
    assert subsets.max() <= 9 and len({tuple(sorted(pair)) for pair in subsets}) > 30  # uniform over 45 pairs

    ensemble, pair = QEnsemble(SMALL, n=10), QEnsemble(SMALL, n=2)
    params = ensemble.init(jax.random.PRNGKey(0), OBS, OBS)
    all_q = ensemble.apply(params, OBS, OBS)
    indices = jnp.array([7, 2])
    np.testing.assert_allclose(pair.apply(subset_parameters(params, indices), OBS, OBS), all_q[indices], rtol=1e-6)


def test_each_critic_update_draws_a_fresh_minibatch():
    buffer = ReplayBuffer(capacity=1000, batch_size=8)
    example = Transition(
        obs=jnp.zeros(1), action=jnp.zeros(1), reward=jnp.zeros(()), next_obs=jnp.zeros(1),
        terminated=jnp.zeros((), bool), truncated=jnp.zeros((), bool),
    )  # fmt: skip
    state = buffer._items.init(example)
    items = jnp.arange(1000.0)
    state = add_items(
        state,
        Transition(
            obs=items[:, None],
            action=items[:, None],
            reward=items,
            next_obs=items[:, None],
            terminated=jnp.zeros(1000, bool),
            truncated=jnp.zeros(1000, bool),
        ),  # fmt: skip
    )
    batches = sample_minibatches(buffer, state, jax.random.PRNGKey(0), 20)
    assert batches.reward.shape == (20, 8)
    assert len({tuple(np.asarray(row)) for row in batches.reward}) == 20


def redq(env, **kwargs):
    defaults = dict(
        n_envs=4,
        learning_starts=256,
        batch_size=64,
        buffer_size=5000,
        utd_ratio=2,
        n_critics=3,
        actor_architecture=SMALL,
        critic_architecture=SMALL,
    )
    return REDQ(env, **{**defaults, **kwargs})


def q_values(agent, state):
    """Every critic's Q(s, pi's mode): with almost no entropy the policy settles on one action,
    the only one the critics keep learning about, so the values are read there."""
    state = jax.tree.map(lambda x: x[0], state)
    actor = SquashedGaussianActor(agent.network_args.actor_architecture, 1)
    critic = QEnsemble(agent.network_args.critic_architecture, n=agent.agent_config.n_critics)
    action = actor.apply(state.actor_state.params, OBS).mode()
    return np.asarray(critic.apply(state.critic_state.params, OBS, action))[:, 0]


FIXED_TEMPERATURE = dict(alpha_init=1e-3, learn_alpha=False)


def test_one_step_value():
    agent = redq(OneStepReward(continuous=True), **FIXED_TEMPERATURE)
    state, _ = agent.train(seed=0, n_timesteps=2000)
    np.testing.assert_allclose(q_values(agent, state), 1.0, atol=0.1)


def test_best_action():
    agent = redq(BestAction(continuous=True), **FIXED_TEMPERATURE)
    state, _ = agent.train(seed=0, n_timesteps=3000)
    actor = SquashedGaussianActor(agent.network_args.actor_architecture, 1)
    pi = actor.apply(jax.tree.map(lambda x: x[0], state.actor_state.params), OBS)
    assert float(pi.mode()[0, 0]) == pytest.approx(0.5, abs=0.1)


def test_time_limit_bootstrap():
    # Reward 1 forever, truncated every 5 steps, gamma 0.9: bootstrapping gives 10 (at most 5 if not).
    agent = redq(EndlessReward(continuous=True, episode_steps=5), gamma=0.9, tau=0.05, **FIXED_TEMPERATURE)
    state, _ = agent.train(seed=0, n_timesteps=3000)
    np.testing.assert_allclose(q_values(agent, state), 10.0, atol=1.0)


RELU64 = ("64", "relu", "64", "relu")


@pytest.mark.slow
def test_redq_learns_pendulum():
    agent = REDQ(
        "Pendulum-v1", learning_starts=500, batch_size=64, actor_architecture=RELU64, critic_architecture=RELU64
    )
    scores = last_returns(agent, 2_500, 500)
    assert scores.mean() >= -400 and scores.min() >= -700, scores


@pytest.mark.slow
def test_redq_learns_pendulum_at_least_as_well_as_sac():
    kwargs = dict(learning_starts=1_000, actor_architecture=RELU64, critic_architecture=RELU64)
    redq_scores = last_returns(REDQ("Pendulum-v1", **kwargs), 5_000, 1_000)
    sac_scores = last_returns(SAC("Pendulum-v1", **kwargs), 5_000, 1_000)
    assert redq_scores.mean() >= sac_scores.mean(), (redq_scores, sac_scores)


def test_bad_input():
    with pytest.raises(ValueError, match="REDQ acts in continuous"):
        REDQ("CartPole-v1")
    with pytest.raises(ValueError, match="subset_size=11 must lie between 1 and n_critics=10"):
        REDQ("Pendulum-v1", subset_size=11)
    with pytest.raises(ValueError, match="utd_ratio must be a positive integer"):
        REDQ("Pendulum-v1", utd_ratio=0)
