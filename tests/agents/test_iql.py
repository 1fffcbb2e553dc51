"""IQL (Kostrikov et al. 2021): the maths by hand, budgets, known-answer probes, learning, bad input.

Calibration of the learning test (and why it learns from a swing-up expert, not the PD
expert): docs/agents/iql.md.
"""

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax.agents.IQL import IQL
from ajax.agents.IQL.core import awr_policy_loss, awr_weight, expectile_loss, q_loss, value_loss, value_target
from ajax.agents.IQL.networks import TanhMeanGaussianActor
from ajax.buffers.dataset import Dataset, collect_dataset
from ajax.environments.controllers import pendulum_swing_up
from ajax.extensions import Extension
from ajax.logging.wandb_logging import LoggingConfig
from ajax.networks.actor_critic import QEnsemble, ValueCritic
from tests.conftest import last_returns, pd_expert
from tests.probe_envs import BestAction, EndlessReward, LitSideContinuous

SMALL = ("16", "relu")


# The maths by hand --------------------------------------------------------------------------


def test_expectile_loss_weights_positive_residuals_by_tau_and_negative_ones_by_one_minus_tau():
    # u = 2: 0.7 * 4 = 2.8; u = -2: 0.3 * 4 = 1.2; u = 0: 0.
    np.testing.assert_allclose(expectile_loss(jnp.array([2.0, -2.0, 0.0]), 0.7), [2.8, 1.2, 0.0], rtol=1e-6)
    # V regresses onto the min of the two target critics: min = [2, 1], V = [1, 2], u = [1, -1],
    # losses [0.7, 0.3], mean 0.5.
    target_q = jnp.array([[3.0, 1.0], [2.0, 5.0]])
    assert float(value_loss(target_q, jnp.array([1.0, 2.0]), 0.7)) == pytest.approx(0.5)
    # tau = 0.5 is half the squared error.
    assert float(value_loss(target_q, jnp.array([1.0, 2.0]), 0.5)) == pytest.approx(0.5)
    assert float(value_loss(target_q, jnp.array([0.0, 0.0]), 0.9)) == pytest.approx(0.9 * (4 + 1) / 2)


def test_value_target_bootstraps_at_a_time_limit_and_stops_at_a_terminal():
    # Transitions: an ordinary step, a true terminal, a time limit (stored terminated=False,
    # truncated=True, next_obs the final observation). y = 1 + 0.5 * 10 = 6 unless terminated.
    reward, next_v = jnp.ones(3), jnp.full(3, 10.0)
    terminated = jnp.array([False, True, False])
    np.testing.assert_allclose(value_target(reward, terminated, next_v, 0.5), [6.0, 1.0, 6.0])
    # L_Q sums the critics' mean squared errors: (0 + 1) / 2 + (4 + 9) / 2 = 7.
    assert float(q_loss(jnp.array([[1.0, 2.0], [3.0, 4.0]]), jnp.ones(2))) == pytest.approx(7.0)


def test_awr_weight_reads_the_min_critic_and_clips_and_the_loss_treats_it_as_a_constant():
    target_q = jnp.array([[1.0, 3.0], [0.5, 4.0]])  # min: [0.5, 3.0]
    v = jnp.array([0.0, 1.0])  # advantages [0.5, 2.0]; beta 2: exp(1), exp(4) = 54.6
    np.testing.assert_allclose(awr_weight(target_q, v, 2.0, 100.0), [np.e, np.exp(4.0)], rtol=1e-6)
    np.testing.assert_allclose(awr_weight(target_q, v, 2.0, 10.0), [np.e, 10.0], rtol=1e-6)
    # The paper's clip at 100: exp(3 * 2) = 403 becomes 100.
    assert float(awr_weight(jnp.array([[2.0]]), jnp.array([0.0]), 3.0, 100.0)[0]) == 100.0
    # -mean(w log pi) = -mean([1 * -1, 3 * -2]) = 3.5; no gradient reaches the weight.
    weight, log_prob = jnp.array([1.0, 3.0]), jnp.array([-1.0, -2.0])
    assert float(awr_policy_loss(weight, log_prob)) == pytest.approx(3.5)
    np.testing.assert_array_equal(jax.grad(awr_policy_loss)(weight, log_prob), [0.0, 0.0])
    np.testing.assert_allclose(jax.grad(awr_policy_loss, argnums=1)(weight, log_prob), [-0.5, -1.5])


# Budgets and evaluations -----------------------------------------------

TOTAL, LOG = 64, 16


@pytest.fixture(scope="module")
def tiny_dataset():
    return collect_dataset("Pendulum-v1", pendulum_swing_up, 256, seed=0)


def tiny_iql(dataset, **kwargs):
    return IQL(
        "Pendulum-v1", dataset=dataset, actor_architecture=SMALL, critic_architecture=SMALL, batch_size=32, **kwargs
    )


@pytest.fixture(scope="module")
def full_run(tiny_dataset):
    return tiny_iql(tiny_dataset).train(
        seed=[0, 1], n_timesteps=TOTAL, num_episode_test=2, logging_config=LoggingConfig(log_frequency=LOG)
    )


def test_timesteps_count_gradient_steps_and_evaluations_run_on_the_env(full_run, tiny_dataset):
    # Determinism and the resume contract: tests/agents/test_resume_contract.py.
    state, evaluations = full_run
    # n_timesteps counts gradient steps: one evaluation every LOG of them.
    np.testing.assert_array_equal(state.collector_state.timestep, [TOTAL, TOTAL])
    np.testing.assert_array_equal(state.n_updates, [TOTAL, TOTAL])
    np.testing.assert_array_equal(evaluations["timestep"][0], [16, 32, 48, 64])
    for key in (
        "Eval/episodic mean reward",
        "Eval/mean episodic length",
        "Eval/mean bias",
        "value/critic_loss",
        "value/value_loss",
        "policy/policy_loss",
        "policy/advantage_weight",
    ):
        assert np.all(np.isfinite(evaluations[key])), key
    np.testing.assert_array_equal(evaluations["Eval/mean episodic length"], 200.0)
    assert np.all(np.isnan(evaluations["Train/episodic mean reward"]))  # no training episodes offline
    # `ajax eval`'s path: the trained state evaluated alone.
    assert np.all(np.isfinite(tiny_iql(tiny_dataset).evaluate(state, num_episode_test=2)["Eval/episodic mean reward"]))


def test_the_untrained_state_holds_the_dataset_in_every_seed(tiny_dataset):
    # n_timesteps=0: the untrained state, every seed holding the dataset.
    untrained, _ = tiny_iql(tiny_dataset).train(seed=[0, 1], n_timesteps=0)
    np.testing.assert_array_equal(untrained.collector_state.timestep, [0, 0])
    np.testing.assert_array_equal(untrained.collector_state.buffer_state.obs[1], tiny_dataset.obs)


@dataclass(frozen=True)
class SeesEveryLoss(Extension):
    """Adds nothing; reports that the critic and actor steps folded it."""

    def on_target(self, ctx, agent_state, ext_state, batch, target):
        return target, {"ext/on_target": jnp.ones(())}

    def critic_loss(self, ctx, agent_state, ext_state, batch, critic_params):
        return jnp.zeros(()), {"ext/critic_loss": jnp.ones(())}

    def actor_loss(self, ctx, agent_state, ext_state, batch, actor_params):
        return jnp.zeros(()), {"ext/actor_loss": jnp.ones(())}


def test_the_critic_and_actor_steps_fold_the_extensions(tiny_dataset):
    agent = tiny_iql(tiny_dataset, extensions=(SeesEveryLoss(),))
    _, evaluations = agent.train(
        seed=0, n_timesteps=4, num_episode_test=1, logging_config=LoggingConfig(log_frequency=4)
    )
    for name in ("ext/on_target", "ext/critic_loss", "ext/actor_loss"):
        assert evaluations[name][0, 0] == 1.0, name


# Known-answer probes ------------------------------------------------------------------------


def empirical_expectile(values: np.ndarray, tau: float) -> float:
    """The m with tau E[(x - m)+] = (1 - tau) E[(m - x)+]: the minimiser of E[L_2^tau(x - m)]."""
    low, high = float(values.min()), float(values.max())
    for _ in range(60):
        m = (low + high) / 2
        gradient = tau * np.mean(np.maximum(values - m, 0)) - (1 - tau) * np.mean(np.maximum(m - values, 0))
        low, high = (m, high) if gradient > 0 else (low, m)
    return (low + high) / 2


def test_one_step_probe_value_is_the_expectile_and_the_policy_the_advantage_weighted_action():
    """One step then a terminal, reward 1 - (a - 0.5)^2, actions uniform over [-1, 1]:
    Q(s, a) = r(a), V(s) = the 0.7-expectile of the rewards, and AWR's Gaussian mean is the
    weighted mean of the actions, weights exp(beta (r(a) - V)) (beta 10: about 0.49)."""
    n = 2048
    action = np.asarray(jax.random.uniform(jax.random.PRNGKey(0), (n, 1), minval=-1.0, maxval=1.0))
    reward = 1.0 - (action[:, 0] - 0.5) ** 2
    dataset = Dataset(
        obs=np.ones((n, 1)),
        action=action,
        reward=reward,
        next_obs=np.ones((n, 1)),
        terminated=np.ones(n, bool),
        truncated=np.zeros(n, bool),
    )
    arch = ("32", "relu", "32", "relu")
    agent = IQL(
        BestAction(continuous=True),
        dataset=dataset,
        actor_architecture=arch,
        critic_architecture=arch,
        actor_learning_rate=1e-3,
        critic_learning_rate=1e-3,
        value_learning_rate=1e-3,
        beta=10.0,
        tau=0.05,
    )
    state, _ = agent.train(seed=0, n_timesteps=3000)
    one = jax.tree.map(lambda x: x[0], state)
    obs = jnp.ones((1, 1))
    expectile = empirical_expectile(reward, 0.7)
    v = float(ValueCritic(arch).apply(one.value_state.params, obs)[0])
    assert v == pytest.approx(expectile, abs=0.03)
    for a in (-0.5, 0.0, 0.5):
        q = QEnsemble(arch, n=2).apply(one.critic_state.params, obs, jnp.full((1, 1), a))[:, 0]
        np.testing.assert_allclose(q, 1.0 - (a - 0.5) ** 2, atol=0.05)
    weight = np.exp(10.0 * (reward - expectile))
    expected_mean = float(np.sum(weight * action[:, 0]) / np.sum(weight))
    mean = float(TanhMeanGaussianActor(arch, 1).apply(one.actor_state.params, obs).mode()[0, 0])
    assert mean == pytest.approx(expected_mean, abs=0.05)
    assert expected_mean == pytest.approx(0.5, abs=0.03)


def test_time_limit_probe_bootstraps_through_truncations():
    """Reward 1 forever, truncated every 5 steps, gamma 0.9: V = 10 when the target bootstraps
    at the limit (at most 5 if it stopped there), learnt from a dataset collect_dataset flags."""
    env = EndlessReward(continuous=True, episode_steps=5)
    dataset = collect_dataset(env, lambda obs: jnp.zeros((obs.shape[0], 1)), 500, seed=0)
    arch = ("16", "relu")
    agent = IQL(
        env,
        dataset=dataset,
        actor_architecture=arch,
        critic_architecture=arch,
        batch_size=64,
        gamma=0.9,
        tau=0.05,
        critic_learning_rate=3e-3,
        value_learning_rate=3e-3,
    )
    state, _ = agent.train(seed=0, n_timesteps=3000)
    one = jax.tree.map(lambda x: x[0], state)
    v = float(ValueCritic(arch).apply(one.value_state.params, jnp.ones((1, 1)))[0])
    assert v == pytest.approx(10.0, abs=0.5)


# Learning -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_iql_learns_pendulum_close_to_the_expert():
    dataset = collect_dataset("Pendulum-v1", pendulum_swing_up, 20_000, seed=0)
    relu64 = ("64", "relu", "64", "relu")
    agent = IQL("Pendulum-v1", dataset=dataset, actor_architecture=relu64, critic_architecture=relu64)
    scores = last_returns(agent, 10_000, 2_000)
    assert scores.mean() >= -300 and scores.min() >= -500, scores


# Bad input ----------------------------------------------------------------------------------


def test_bad_input(tiny_dataset):
    with pytest.raises(ValueError, match="IQL acts in continuous.*CartPole.*discrete"):
        IQL("CartPole-v1", dataset=tiny_dataset)
    with pytest.raises(ValueError, match="IQL learns offline from a dataset"):
        IQL("Pendulum-v1")
    with pytest.raises(TypeError, match="IQL learns offline from a Dataset"):
        IQL("Pendulum-v1", dataset={"obs": tiny_dataset.obs})
    with pytest.raises(ValueError, match=r"does not fit .*obs has shape \(256, 3\), expected \(256, 1\)"):
        IQL(BestAction(continuous=True), dataset=tiny_dataset)
    with pytest.raises(ValueError, match=r"action has shape \(256, 2\), expected \(256, 1\)"):
        IQL("Pendulum-v1", dataset=tiny_dataset.replace(action=jnp.zeros((256, 2))))
    with pytest.raises(ValueError, match=r"reward has shape \(255,\)"):
        IQL("Pendulum-v1", dataset=tiny_dataset.replace(reward=tiny_dataset.reward[1:]))
    with pytest.raises(ValueError, match="outside \\[-1, 1\\]: actions must be in the agent's units"):
        IQL("Pendulum-v1", dataset=tiny_dataset.replace(action=jnp.full((256, 1), 2.0)))
    with pytest.raises(NotImplementedError, match="IQL has no recurrent memory"):
        IQL("Pendulum-v1", dataset=tiny_dataset, memory={"kind": "gru"})
    with pytest.raises(ValueError, match="expectile must lie in"):
        IQL("Pendulum-v1", dataset=tiny_dataset, expectile=1.0)
    with pytest.raises(ValueError, match="beta must be a finite number above 0, got 0.0"):
        IQL("Pendulum-v1", dataset=tiny_dataset, beta=0.0)
    with pytest.raises(ValueError, match="n_steps must be a positive multiple of n_envs=2"):
        collect_dataset("Pendulum-v1", pd_expert, 5, n_envs=2)
    with pytest.raises(ValueError, match="noise is a standard deviation"):
        collect_dataset("Pendulum-v1", pd_expert, 4, noise=-1.0)


def test_a_dataset_holding_a_nan_or_an_infinity_is_refused_naming_the_field_and_the_first_row(tiny_dataset):
    reward = tiny_dataset.reward.at[200].set(jnp.nan).at[201].set(jnp.inf)
    with pytest.raises(ValueError, match=r"IQL's dataset holds a NaN in reward at index 200 \(of 256\): clean"):
        IQL("Pendulum-v1", dataset=tiny_dataset.replace(reward=reward))
    next_obs = tiny_dataset.next_obs.at[7, 1].set(-jnp.inf)
    with pytest.raises(ValueError, match=r"an infinity \(-inf\) in next_obs at index 7 \(of 256\)"):
        IQL("Pendulum-v1", dataset=tiny_dataset.replace(next_obs=next_obs))


def lit_side_expert(obs):
    """LitSideContinuous's best action from a batch of frames as stored: the lit column's half."""
    column = jnp.argmax(obs.reshape(-1, 6, 6).max(axis=1), axis=-1)
    return jnp.where(column >= 3, 0.5, -0.5)[:, None]


@pytest.fixture(scope="module")
def frames_dataset():
    return collect_dataset(LitSideContinuous(), lit_side_expert, 2_000, seed=0, keep_observations=True)


def test_a_dataset_of_frames_keeps_them_uint8_and_an_encoder_reads_them(frames_dataset):
    assert frames_dataset.obs.shape == (2_000, 6, 6, 1) and frames_dataset.obs.dtype == jnp.uint8
    np.testing.assert_allclose(frames_dataset.reward, 1.0)  # the expert reads the frames as stored
    agent = IQL(LitSideContinuous(), dataset=frames_dataset, encoder="minatar_cnn")
    assert agent.dataset.obs.dtype == jnp.uint8
    with pytest.raises(ValueError, match=r"obs has shape \(2000, 36\), expected \(2000, 6, 6, 1\)"):
        flat = collect_dataset(LitSideContinuous(), lit_side_expert, 2_000, seed=0)
        IQL(LitSideContinuous(), dataset=flat, encoder="minatar_cnn")


@pytest.mark.slow
@pytest.mark.learning
def test_iql_learns_from_frames_through_an_image_encoder(frames_dataset):
    """Calibrated on seeds 0-2 (2026-12-03): greedy returns 1.0, 1.0, 1.0 after 3,000 updates on
    the expert's 2,000 frames (blind to the frame: 0.9375)."""
    layers = {"actor_architecture": ("64", "relu"), "critic_architecture": ("64", "relu")}
    agent = IQL(LitSideContinuous(), dataset=frames_dataset, encoder="minatar_cnn", **layers)
    _, evaluations = agent.train(
        seed=[0, 1, 2], n_timesteps=3_000, logging_config=LoggingConfig(log_frequency=3_000), num_episode_test=20
    )
    returns = np.asarray(evaluations["Eval/episodic mean reward"])[:, -1]
    assert (returns >= 0.99).all(), returns
