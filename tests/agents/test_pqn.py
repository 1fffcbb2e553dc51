"""PQN (Gallici et al. 2024): Q(lambda) returns by hand, known-answer probes, learning.

Calibration of the learning test: docs/agents/pqn.md.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import PQN
from ajax.agents.PQN.core import q_lambda_returns
from ajax.networks.actor_critic import DiscreteQNetwork
from tests.conftest import last_returns
from tests.probe_envs import BestAction, EndlessReward, OneStepReward

OBS = jnp.ones((1, 1))
SMALL = ("32", "relu", "32", "relu")


def test_q_lambda_returns_with_a_truncation_and_a_termination():
    # gamma = lambda = 0.5; bootstrap = max_a Q(s'_t, a). Step 1 ends at a time limit.
    rewards, bootstrap = jnp.array([1.0, 2.0, 3.0])[:, None], jnp.array([4.0, 8.0, 6.0])[:, None]
    no = jnp.zeros((3, 1), bool)
    truncated = no.at[1].set(True)
    # G2 = 3 + .5 * 6 = 6 (the rollout's last step); G1 = 2 + .5 * 8 = 6 (episode ended);
    # G0 = 1 + .5 * (.5 * 6 + .5 * 4) = 3.5
    returns = q_lambda_returns(rewards, bootstrap, no, truncated, 0.5, 0.5)
    np.testing.assert_allclose(returns[:, 0], [3.5, 6.0, 6.0])
    # A true terminal at step 1 drops its bootstrap: G1 = 2, G0 = 1 + .5 * (.5 * 2 + .5 * 4) = 2.5
    returns = q_lambda_returns(rewards, bootstrap, truncated, no, 0.5, 0.5)
    np.testing.assert_allclose(returns[:, 0], [2.5, 2.0, 6.0])
    # lambda = 0 is one-step Q-learning: r + gamma max Q(s')
    np.testing.assert_allclose(q_lambda_returns(rewards, bootstrap, no, no, 0.5, 0.0)[:, 0], [3.0, 6.0, 6.0])


def pqn(env, **kwargs):
    defaults = dict(n_envs=4, n_steps=16, n_minibatches=2, learning_rate=3e-3, architecture=SMALL)
    return PQN(env, **{**defaults, **kwargs})


def q_values(agent, state):
    network = DiscreteQNetwork(agent.network_args.critic_architecture, 2, layer_norm=True)
    return np.asarray(network.apply(jax.tree.map(lambda x: x[0], state.critic_state.params), OBS)[0])


def test_probes_one_step_value_best_action_and_time_limit_bootstrap():
    one_step = pqn(OneStepReward())
    np.testing.assert_allclose(q_values(one_step, one_step.train(seed=0, n_timesteps=4096)[0]), [1.0, 1.0], atol=0.1)
    best = pqn(BestAction())
    np.testing.assert_allclose(q_values(best, best.train(seed=0, n_timesteps=4096)[0]), [0.0, 1.0], atol=0.1)
    # Reward 1 forever, truncated every 5 steps, gamma 0.9: bootstrapping gives 10 (at most 5 if not).
    endless = pqn(EndlessReward(episode_steps=5), gamma=0.9)
    np.testing.assert_allclose(q_values(endless, endless.train(seed=0, n_timesteps=16_384)[0]), [10.0] * 2, atol=1.0)


@pytest.mark.slow  # about 20 s on 2 cores, held out of the default suite's 10 minutes; the probes stay
def test_pqn_learns_cartpole():
    scores = last_returns(PQN("CartPole-v1"), 100_000, 10_000)
    assert scores.mean() >= 70 and scores.min() >= 40, scores


def test_bad_input():
    with pytest.raises(ValueError, match="PQN acts in discrete"):
        PQN("Pendulum-v1")
    with pytest.raises(ValueError, match=r"n_minibatches=3 does not divide .* = 1024 transitions"):
        PQN("CartPole-v1", n_minibatches=3)
    with pytest.raises(NotImplementedError, match="PQN has no recurrent memory"):
        PQN("CartPole-v1", memory={"kind": "gru"})
