"""TD3 (Fujimoto et al. 2018): its target maths by hand, known-answer probes, learning.

Calibration of the learning test: docs/agents/td3.md.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import TD3
from ajax.agents.TD3.core import clipped_double_q_target, deterministic_policy_loss, smoothed_target_action
from ajax.logging.wandb_logging import LoggingConfig
from ajax.networks.actor_critic import DeterministicActor, QEnsemble
from tests.conftest import last_returns
from tests.probe_envs import BestAction, EndlessReward, OneStepReward

OBS = jnp.ones((1, 1))
SMALL = ("32", "relu", "32", "relu")


def test_smoothed_target_action_clips_noise_then_action():
    key = jax.random.PRNGKey(0)
    action = jnp.zeros((10_000, 1))
    smoothed = smoothed_target_action(action, key, noise=1.0, noise_clip=0.5)
    assert float(jnp.max(jnp.abs(smoothed))) == pytest.approx(0.5)  # |eps| <= c
    near_bound = smoothed_target_action(jnp.full((1000, 1), 0.9), key, noise=0.2, noise_clip=0.5)
    assert float(jnp.max(near_bound)) <= 1.0  # then clipped to the action box
    np.testing.assert_array_equal(smoothed_target_action(action, key, 0.0, 0.5), action)


def test_clipped_double_q_target_takes_the_min_and_stops_only_at_terminals():
    next_q = jnp.array([[3.0, 3.0], [5.0, 5.0]])  # two critics, two transitions
    # y = 1 + 0.5 * min(3, 5) = 2.5; a terminal keeps the reward alone. A truncated
    # transition is stored as terminated=False with its final observation: it bootstraps.
    target = clipped_double_q_target(jnp.array([1.0, 1.0]), jnp.array([False, True]), next_q, 0.5)
    np.testing.assert_allclose(target, [2.5, 1.0])
    assert float(deterministic_policy_loss(jnp.array([1.0, 3.0]))) == -2.0


def td3(env, **kwargs):
    defaults = dict(
        n_envs=4,
        learning_starts=256,
        batch_size=64,
        buffer_size=5000,
        actor_architecture=SMALL,
        critic_architecture=SMALL,
    )
    return TD3(env, **{**defaults, **kwargs})


def q_values(agent, state, action):
    params = jax.tree.map(lambda x: x[0], state.critic_state.params)
    return np.asarray(
        QEnsemble(agent.network_args.critic_architecture, n=2).apply(params, OBS, jnp.full((1, 1), action))
    )[:, 0]


def test_one_step_value_best_action_and_time_limit_bootstrap():
    one_step = td3(OneStepReward(continuous=True))
    state, _ = one_step.train(seed=0, n_timesteps=3000)
    np.testing.assert_allclose(q_values(one_step, state, 0.3), [1.0, 1.0], atol=0.1)

    best = td3(BestAction(continuous=True))
    state, _ = best.train(seed=0, n_timesteps=3000)
    actor = DeterministicActor(best.network_args.actor_architecture, 1)
    action = float(actor.apply(jax.tree.map(lambda x: x[0], state.actor_state.params), OBS)[0, 0])
    assert action == pytest.approx(0.5, abs=0.1)

    # Reward 1 forever, truncated every 5 steps, gamma 0.9: bootstrapping gives 10 (at most 5 if not).
    endless = td3(EndlessReward(continuous=True, episode_steps=5), gamma=0.9, tau=0.05)
    state, _ = endless.train(seed=0, n_timesteps=6000)
    np.testing.assert_allclose(q_values(endless, state, 0.0), [10.0, 10.0], atol=1.0)


def test_policy_delay_updates_the_actor_every_other_critic_update():
    agent = td3(OneStepReward(continuous=True), learning_starts=40)
    _, evaluations = agent.train(seed=0, n_timesteps=48, logging_config=LoggingConfig(log_frequency=4))
    loss = evaluations["policy/policy_loss"][0]
    # Updates at timesteps 40, 44, 48 are updates 0, 1, 2: the actor steps on 0 and 2 only.
    assert np.isfinite(loss[9]) and np.isnan(loss[10]) and np.isfinite(loss[11])
    assert np.all(np.isfinite(evaluations["value/critic_loss"][0][9:]))


@pytest.mark.slow  # about 20 s on 2 cores, held out of the default suite's 10 minutes; the probes stay
def test_td3_learns_pendulum():
    relu64 = ("64", "relu", "64", "relu")
    agent = TD3("Pendulum-v1", learning_starts=1_000, actor_architecture=relu64, critic_architecture=relu64)
    scores = last_returns(agent, 8_000, 1_000)
    assert scores.mean() >= -400 and scores.min() >= -700, scores


def test_bad_input():
    with pytest.raises(ValueError, match="TD3 acts in continuous"):
        TD3("CartPole-v1")
    with pytest.raises(ValueError, match="policy_delay must be a positive integer"):
        TD3("Pendulum-v1", policy_delay=0)
    with pytest.raises(ValueError, match=r"target_policy_noise must lie in \[0, inf\), got -0.1"):
        TD3("Pendulum-v1", target_policy_noise=-0.1)
    with pytest.raises(ValueError, match="exploration_noise must be >= 0"):
        TD3("Pendulum-v1", exploration_noise=-0.1)
