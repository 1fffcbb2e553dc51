"""Known-answer probes: tiny environments with an analytic value or best action.

Each agent is trained briefly on each probe (observation always [1.0]):
- OneStepReward: reward 1 then a terminal, so V(s) = Q(s, a) = 1.
- BestAction: one step; discrete action 1 pays 1, action 0 pays 0; continuous reward
  1 - (a - 0.5)^2, best a = 0.5.
- EndlessReward (gamma 0.9): reward 1 forever, truncated every 5 steps. Bootstrapping at
  the time limit gives V = 1 / (1 - 0.9) = 10.
- TerminalTwin: the same rewards, but a true terminal at step 5. The observation hides
  the step, so the Monte Carlo value (PPO with lambda = 1) is the average return-to-go,
  (4.10 + 3.44 + 2.71 + 1.90 + 1.00) / 5 = 2.63, while the one-step TD fixed point (SAC,
  DQN) solves Q = 1 + 0.9 * (4/5) Q: Q = 1 / 0.28 = 3.57. Either is far below 10.
  DQN's Huber loss is an absolute loss for errors above 1, which pulls an aliased state
  towards the median target instead of the mean: its probe scales the rewards by 0.1 so
  every error stays in the quadratic zone (V = 1.0 against 0.357).
The endless/terminal pair is the end-to-end check that termination and truncation are
kept apart in PPO's GAE and in SAC's and DQN's targets.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import DQN, PPO, SAC
from ajax.agents.PPO.train_PPO import make_networks
from ajax.networks.actor_critic import DiscreteQNetwork, QEnsemble, SquashedGaussianActor
from tests.probe_envs import BestAction, EndlessReward, OneStepReward, TerminalTwin

OBS = jnp.ones((1, 1))
SMALL = ("32", "relu", "32", "relu")
TWIN_MC_VALUE = np.mean([sum(0.9**k for k in range(n)) for n in range(5, 0, -1)])  # 2.63
TWIN_TD_VALUE = 1.0 / (1.0 - 0.9 * 4 / 5)  # 3.57


def first_seed(tree):
    return jax.tree.map(lambda x: x[0], tree)


# --- PPO ---------------------------------------------------------------------------


def ppo(env, **kwargs):
    agent = PPO(
        env,
        n_envs=4,
        n_steps=32,
        batch_size=32,
        n_epochs=4,
        actor_learning_rate=3e-3,
        critic_learning_rate=3e-3,
        actor_architecture=SMALL,
        critic_architecture=SMALL,
        **kwargs,
    )
    return agent


def ppo_value_and_policy(agent, state):
    actor, critic = make_networks(agent.env_args, agent.network_args)
    state = first_seed(state)
    return float(critic.apply(state.critic_state.params, OBS)[0]), actor.apply(state.actor_state.params, OBS)


def test_ppo_one_step_value():
    agent = ppo(OneStepReward())
    state, _ = agent.train(seed=0, n_timesteps=4096)
    value, _ = ppo_value_and_policy(agent, state)
    assert value == pytest.approx(1.0, abs=0.1)


@pytest.mark.parametrize("continuous", [False, True])
def test_ppo_best_action(continuous):
    agent = ppo(BestAction(continuous=continuous), ent_coef=0.0)
    state, _ = agent.train(seed=0, n_timesteps=8192)
    _, pi = ppo_value_and_policy(agent, state)
    if continuous:
        assert float(pi.mode()[0, 0]) == pytest.approx(0.5, abs=0.15)
    else:
        assert float(pi.probs[0, 1]) > 0.9


def test_ppo_bootstraps_at_time_limits_not_terminals():
    settings = dict(gamma=0.9, gae_lambda=1.0)
    endless, twin = ppo(EndlessReward(episode_steps=5), **settings), ppo(TerminalTwin(episode_steps=5), **settings)
    value_endless, _ = ppo_value_and_policy(endless, endless.train(seed=0, n_timesteps=8192)[0])
    value_twin, _ = ppo_value_and_policy(twin, twin.train(seed=0, n_timesteps=8192)[0])
    assert value_endless == pytest.approx(10.0, abs=1.0)
    assert value_twin == pytest.approx(TWIN_MC_VALUE, abs=0.5)


# --- SAC ---------------------------------------------------------------------------


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


# --- DQN ---------------------------------------------------------------------------


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
