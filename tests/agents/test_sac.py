"""SAC (Haarnoja et al. 2018): the soft target and losses by hand, known-answer probes, learning.

Probes (tests/probe_envs.py): Q = 1 on a one-step env; the best continuous action 0.5; the
time-limit twin (reward 1 forever, gamma 0.9, truncated every 5 steps: Q = 10 by bootstrapping
at the limit, the one-step TD fixed point 3.57 with a true terminal at step 5).
Calibration of the learning test: docs/agents/sac.md.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import SAC
from ajax.agents.SAC.core import polyak, soft_policy_loss, soft_q_target, temperature_loss
from ajax.agents.SAC.train_SAC import SoftActorCritic
from ajax.networks.actor_critic import QEnsemble, SquashedGaussianActor, StateDependentNoiseActor
from tests.conftest import agent_parts, first_seed, last_returns
from tests.probe_envs import BestAction, EndlessReward, OneStepReward, TerminalTwin

OBS = jnp.ones((1, 1))
SMALL = ("32", "relu", "32", "relu")
TWIN_TD_VALUE = 1.0 / (1.0 - 0.9 * 4 / 5)  # 3.57


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


def sac(env, **kwargs):
    defaults = dict(
        n_envs=4,
        learning_starts=256,
        batch_size=64,
        buffer_size=5000,
        actor_architecture=SMALL,
        critic_architecture=SMALL,
        actor_learning_rate=1e-3,
        critic_learning_rate=1e-3,
    )
    return SAC(env, **{**defaults, **kwargs})


def sac_q(agent, state, action):
    critic = QEnsemble(agent.network_args.critic_architecture, n=2)
    params = first_seed(state).critic_state.params
    return float(jnp.min(critic.apply(params, OBS, jnp.full((1, 1), action)), axis=0)[0])


def test_sac_one_step_value():
    agent = sac(OneStepReward(continuous=True))
    state, _ = agent.train(seed=0, n_timesteps=4096)
    for action in (-0.9, 0.0, 0.9):
        assert sac_q(agent, state, action) == pytest.approx(1.0, abs=0.1)


def test_sac_best_action():
    agent = sac(BestAction(continuous=True))
    state, _ = agent.train(seed=0, n_timesteps=4096)
    actor = SquashedGaussianActor(agent.network_args.actor_architecture, 1)
    mode = float(actor.apply(first_seed(state).actor_state.params, OBS).mode()[0, 0])
    assert mode == pytest.approx(0.5, abs=0.15)


def test_sac_bootstraps_at_time_limits_not_terminals():
    # A fixed, tiny temperature makes the soft value the plain discounted one; a faster
    # target (tau 0.05) lets the bootstrapped value settle within the probe's budget.
    settings = dict(gamma=0.9, alpha_init=1e-3, learn_alpha=False, tau=0.05)
    endless, twin = (
        sac(EndlessReward(continuous=True, episode_steps=5), **settings),
        sac(TerminalTwin(continuous=True, episode_steps=5), **settings),
    )
    q_endless = sac_q(endless, endless.train(seed=0, n_timesteps=6000)[0], 0.0)
    q_twin = sac_q(twin, twin.train(seed=0, n_timesteps=6000)[0], 0.0)
    assert q_endless == pytest.approx(10.0, abs=1.0)
    assert q_twin == pytest.approx(TWIN_TD_VALUE, abs=0.5)


def soft_actor_critic(agent: SAC) -> SoftActorCritic:
    return agent_parts(SoftActorCritic, agent)


def test_gsde_holds_its_noise_for_a_round_and_redraws_it_before_the_updates():
    """gSDE (use_sde=True): within a round the action is a function of the state; a redraw changes it."""
    parts = soft_actor_critic(sac("Pendulum-v1", n_envs=2, learning_starts=0, use_sde=True, log_std_init=-1.0))
    state = parts.init(jax.random.PRNGKey(0))
    assert state.exploration_noise.shape == (2, 32, 1)  # one draw per env copy: features x actions
    obs = state.collector_state.last_obs
    first, _ = parts.pipeline(state, obs, jax.random.PRNGKey(1))
    again, _ = parts.pipeline(state, obs, jax.random.PRNGKey(2))
    np.testing.assert_array_equal(first, again)
    pi = parts.policy(state, obs)
    np.testing.assert_allclose(first, pi.explore(state.exploration_noise), rtol=1e-6)
    redrawn, _ = parts.pipeline(parts.redraw_noise(state), obs, jax.random.PRNGKey(1))
    assert not np.allclose(first, redrawn)


def test_an_initial_log_std_without_gsde_is_refused():
    with pytest.raises(ValueError, match="log_std_init sets gSDE's initial noise scale: pass use_sde=True"):
        SAC("Pendulum-v1", log_std_init=-2.0)


def test_sac_with_gsde_finds_the_best_action():
    """A fixed small temperature: the soft-optimal mode is then the best action itself.
    Seed 2 is the one a hard clip of the mean (Stable-Baselines3's) froze at tanh(2)."""
    agent = sac(BestAction(continuous=True), use_sde=True, alpha_init=0.01, learn_alpha=False)
    state, _ = agent.train(seed=2, n_timesteps=4096)
    actor = StateDependentNoiseActor(agent.network_args.actor_architecture, 1)
    mode = float(actor.apply(first_seed(state).actor_state.params, OBS).mode()[0, 0])
    assert mode == pytest.approx(0.5, abs=0.15)


@pytest.mark.slow
def test_sac_learns_pendulum():
    relu64 = ("64", "relu", "64", "relu")
    agent = SAC("Pendulum-v1", learning_starts=1_000, actor_architecture=relu64, critic_architecture=relu64)
    scores = last_returns(agent, 8_000, 1_000)
    assert scores.mean() >= -400 and scores.min() >= -700, scores
