"""PPO (Schulman et al. 2017): GAE and the clipped losses by hand, known-answer probes, learning.

Probes (tests/probe_envs.py): a one-step value of 1; the best of two actions (discrete and
continuous); the time-limit twin (reward 1 forever, gamma 0.9, truncated every 5 steps: V = 10
by bootstrapping at the limit, the Monte Carlo value 2.63 with a true terminal at step 5).
Calibration of the learning test: docs/agents/ppo.md.
"""

import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import PPO
from ajax.agents.PPO.core import approx_kl, clipped_surrogate_loss, generalized_advantages, value_loss
from ajax.agents.PPO.PPO import checked_initializers
from ajax.agents.PPO.train_PPO import ProximalActorCritic, make_networks
from ajax.modules.pid_actor import PIDPolicy
from ajax.networks.memory import MemoryConfig
from tests.conftest import first_seed, last_returns
from tests.probe_envs import BestAction, EndlessReward, OneStepReward, TerminalTwin

OBS = jnp.ones((1, 1))
SMALL = ("32", "relu", "32", "relu")
TWIN_MC_VALUE = np.mean([sum(0.9**k for k in range(n)) for n in range(5, 0, -1)])  # 2.63


def test_gae_with_a_truncation_and_a_termination_inside_the_rollout():
    # gamma = lambda = 0.5. Step 1 ends at a time limit (its next value is the final
    # observation's, 10); step 3 is a true terminal (its next value 7 must be ignored).
    rewards = jnp.array([1.0, 2.0, 3.0, 4.0])[:, None]
    values = jnp.array([0.5, 1.0, 1.5, 2.0])[:, None]
    next_values = jnp.array([1.0, 10.0, 2.0, 7.0])[:, None]
    terminated = jnp.array([0, 0, 0, 1], bool)[:, None]
    truncated = jnp.array([0, 1, 0, 0], bool)[:, None]
    # deltas: 1 + .5*1 - .5 = 1 | 2 + .5*10 - 1 = 6 | 3 + .5*2 - 1.5 = 2.5 | 4 - 2 = 2
    # A3 = 2; A2 = 2.5 + .25*2 = 3; A1 = 6 (episode ended); A0 = 1 + .25*6 = 2.5
    advantages, targets = generalized_advantages(rewards, values, next_values, terminated, truncated, 0.5, 0.5)
    np.testing.assert_allclose(advantages[:, 0], [2.5, 6.0, 3.0, 2.0], rtol=1e-6)
    np.testing.assert_allclose(targets[:, 0], [3.0, 7.0, 4.5, 4.0], rtol=1e-6)


def test_gae_treating_the_time_limit_as_terminal_would_differ():
    # The same rollout with step 1 a true terminal loses the bootstrap 0.5 * 10.
    args = (jnp.array([[2.0]]), jnp.array([[1.0]]), jnp.array([[10.0]]))
    truncated, _ = generalized_advantages(*args, jnp.array([[False]]), jnp.array([[True]]), 0.5, 0.5)
    terminal, _ = generalized_advantages(*args, jnp.array([[True]]), jnp.array([[False]]), 0.5, 0.5)
    assert float(truncated[0, 0]) == pytest.approx(6.0)
    assert float(terminal[0, 0]) == pytest.approx(1.0)


def test_clipped_surrogate_and_value_loss():
    # ratios e^0.5 = 1.6487 (clipped to 1.2 for A = +1) and e^-0.5 = 0.6065 (clipped to 0.8 for A = -1:
    # min(-0.6065, -0.8) = -0.8). Loss = -mean(1.2, -0.8) = -0.2.
    log_ratio = jnp.array([0.5, -0.5])
    assert float(clipped_surrogate_loss(log_ratio, jnp.array([1.0, -1.0]), 0.2)) == pytest.approx(-0.2, abs=1e-6)
    # An unclipped ratio of 1 gives -mean(A).
    assert float(clipped_surrogate_loss(jnp.zeros(2), jnp.array([2.0, 4.0]), 0.2)) == pytest.approx(-3.0)
    assert float(value_loss(jnp.array([1.0, 3.0]), jnp.array([0.0, 0.0]))) == pytest.approx(5.0)
    assert float(approx_kl(jnp.zeros(3))) == pytest.approx(0.0)


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


# About 20 s: PPO's learning test in the default suite is the Zoo preset's (tests/test_zoo.py).
@pytest.mark.slow
def test_ppo_learns_cartpole():
    tanh64 = ("64", "tanh", "64", "tanh")
    agent = PPO(
        "CartPole-v1",
        n_envs=4,
        n_steps=128,
        batch_size=128,
        n_epochs=4,
        actor_architecture=tanh64,
        critic_architecture=tanh64,
    )
    scores = last_returns(agent, 30_000, 2_500)
    assert scores.mean() >= 250 and scores.min() >= 100, scores


def test_batch_size_that_does_not_divide_the_rollout():
    with pytest.raises(ValueError, match=r"batch_size=100 does not divide .* = 256 transitions"):
        PPO("CartPole-v1", n_envs=2, n_steps=128, batch_size=100)


TINY = ("8", "tanh", "8", "tanh")
HIDDEN_KERNELS = {f"{net}/MLP_0/Dense_{i}/kernel" for net in ("actor", "critic") for i in (0, 1)}
# What each initialiser keyword starts, as network/module/parameter: the rest keep their defaults.
REACHES = {
    "encoder_kernel_init": HIDDEN_KERNELS,
    "actor_bias_init": {"actor/Dense_0/bias"},
    "critic_bias_init": {"critic/Dense_0/bias"},
    "mean_kernel_init": {"actor/Dense_0/kernel"},
}


@functools.cache
def fresh_params(agent_class, env, **initializers) -> dict:
    """The fresh actor's and critic's parameters of a tiny agent (seed 0), by network/module/parameter."""
    agent = agent_class(env, actor_architecture=TINY, critic_architecture=TINY, n_steps=64, **initializers)
    args = (agent.env_args, agent.network_args, agent.optimizer_args["actor"], agent.optimizer_args["critic"])
    state = ProximalActorCritic(*args, agent.agent_config, agent.extensions).init(jax.random.PRNGKey(0))
    networks = {"actor": state.actor_state.params["params"], "critic": state.critic_state.params["params"]}
    return {
        f"{net}/{jax.tree_util.keystr(path, simple=True, separator='/')}": np.asarray(leaf)
        for net, params in networks.items()
        for path, leaf in jax.tree.leaves_with_path(params)
    }


def initialised_leaves(agent_class, env: str, keyword: str, **settings) -> set[str]:
    """The parameters `keyword=constant(0.125)` changes; each must then hold 0.125 throughout."""
    default = fresh_params(agent_class, env, **settings)
    given = fresh_params(agent_class, env, **settings, **{keyword: nn.initializers.constant(0.125)})
    changed = {path for path in default if not np.array_equal(default[path], given[path])}
    assert all(np.all(given[path] == 0.125) for path in changed), keyword
    return changed


@pytest.mark.parametrize(
    ("env", "keyword"),
    [("Pendulum-v1", keyword) for keyword in REACHES]
    + [("CartPole-v1", keyword) for keyword in REACHES if keyword != "mean_kernel_init"],
)
def test_each_initializer_reaches_exactly_the_parameters_it_names(env, keyword):
    assert initialised_leaves(PPO, env, keyword) == REACHES[keyword]


def test_with_memory_the_encoder_kernels_are_the_encoders_before_the_memory():
    memory = MemoryConfig("gru", 8)
    encoders = {f"{net}/encoder/Dense_{i}/kernel" for net in ("actor", "critic") for i in (0, 1)}
    assert initialised_leaves(PPO, "CartPole-v1", "encoder_kernel_init", memory=memory) == encoders
    assert initialised_leaves(PPO, "CartPole-v1", "actor_bias_init", memory=memory) == {"actor/head/Dense_0/bias"}


def test_an_initializer_that_nothing_would_take_is_refused():
    with pytest.raises(TypeError, match="encoder_kernel_init takes a flax initialiser.* got 'orthogonal'"):
        PPO("CartPole-v1", encoder_kernel_init="orthogonal")
    with pytest.raises(ValueError, match="mean_kernel_init starts a Gaussian actor's mean, and CartPole-v1's"):
        PPO("CartPole-v1", mean_kernel_init=nn.initializers.zeros)
    env_args = PPO("Pendulum-v1").env_args
    with pytest.raises(ValueError, match="A PID actor starts from its gains .*, not from actor_bias_init"):
        checked_initializers(env_args, PIDPolicy(), actor_bias_init=nn.initializers.zeros)
