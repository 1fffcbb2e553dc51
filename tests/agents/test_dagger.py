"""DAgger (Ross, Gordon & Bagnell 2011): the mixture, beta, the losses, the labels, probes, learning.

Calibration of the learning tests (the swing-up expert's and CartPole's): docs/agents/dagger.md.
"""

from dataclasses import dataclass
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax.agents.DAgger import DAgger
from ajax.agents.DAgger.core import (
    classification_loss,
    expert_acts,
    expert_label,
    mixing_coefficient,
    mixture_action,
    regression_loss,
)
from ajax.agents.DAgger.state import DAggerConfig
from ajax.agents.DAgger.train_DAgger import mixture_pipeline
from ajax.environments.create import prepare_env
from ajax.environments.utils import ExpertInAgentUnits, StatefulExpert
from ajax.extensions import LOOP_PHASES, Extension
from ajax.logging.wandb_logging import LoggingConfig
from ajax.networks.actor_critic import CategoricalActor, DeterministicActor
from tests.conftest import cartpole_expert, last_returns
from tests.probe_envs import BestAction

# Programs' floats compared bit for bit with the same arithmetic run otherwise (conftest.py).
pytestmark = pytest.mark.exact

SMALL = ("16", "relu")


def swing_up_expert(obs):
    """Pendulum-v1 in env units ([-2, 2]): pump energy until near the top, then hold with a PD law.

    With theta from upright, gymnax's pendulum follows theta'' = 15 sin(theta) + 3 u, so
    E = theta'^2 / 2 + 15 cos(theta) grows at rate 3 u theta' and is 15 at the top, at rest.
    """
    cos, sin, velocity = obs[..., 0], obs[..., 1], obs[..., 2]
    theta = jnp.arctan2(sin, cos)
    pump = 0.5 * (15.0 - (0.5 * velocity**2 + 15.0 * cos)) * velocity
    hold = -(10.0 * theta + 2.0 * velocity)
    return jnp.clip(jnp.where(cos > 0.85, hold, pump), -2.0, 2.0)[..., None]


def torque_expert(obs):
    """A continuous expert in Pendulum's env units: 3 sin(theta), beyond the [-2, 2] box at times."""
    return 3.0 * obs[..., 1:2]


# The maths ---------------------------------------------------------------------------------
def test_beta_schedule():
    # beta_i = p^(i-1): beta_1 = 1, then halving with p = 0.5 (Section 3).
    np.testing.assert_allclose([mixing_coefficient(i, 0.5) for i in (1, 2, 3, 5)], [1.0, 0.5, 0.25, 1 / 16])
    # p = 0 is the paper's beta_i = 1{i = 1}; p = 1 follows the expert throughout.
    np.testing.assert_allclose([mixing_coefficient(i, 0.0) for i in (1, 2, 7)], [1.0, 0.0, 0.0])
    np.testing.assert_allclose([mixing_coefficient(i, 1.0) for i in (1, 9)], [1.0, 1.0])
    np.testing.assert_allclose(mixing_coefficient(3, 0.3), 0.09, rtol=1e-6)


def test_the_mixture_picks_the_expert_with_probability_beta_per_copy():
    n = 200_000
    picks = expert_acts(jax.random.PRNGKey(0), 0.3, n)
    # Each copy on its own: the share is 0.3 within 5 standard errors (sqrt(0.21 / n) = 0.001).
    assert abs(float(picks.mean()) - 0.3) < 0.005
    # Copies and steps draw apart: another step's picks agree with these only by chance.
    again = expert_acts(jax.random.PRNGKey(1), 0.3, n)
    assert abs(float((picks & again).mean()) - 0.09) < 0.005
    assert bool(expert_acts(jax.random.PRNGKey(2), 1.0, n).all())
    assert not bool(expert_acts(jax.random.PRNGKey(3), 0.0, n).any())

    # The action follows the flags copy by copy, discrete and continuous alike.
    flags = jnp.array([True, False, True])
    np.testing.assert_array_equal(mixture_action(flags, jnp.array([1, 1, 1]), jnp.array([0, 0, 0])), [1, 0, 1])
    expert, learner = jnp.array([[0.5, 0.5]] * 3), jnp.array([[-0.2, 0.1]] * 3)
    np.testing.assert_allclose(mixture_action(flags, expert, learner), [[0.5, 0.5], [-0.2, 0.1], [0.5, 0.5]])


def test_the_losses_against_hand_computed_values():
    # MSE over every element: ((0.5)^2 + (0.5)^2 + 0 + 1^2) / 4.
    action, label = jnp.array([[0.5, -0.5], [1.0, 0.0]]), jnp.array([[0.0, 0.0], [1.0, 1.0]])
    np.testing.assert_allclose(regression_loss(action, label), 0.375, rtol=1e-6)
    # Cross-entropy: logits (0, ln 3) give probabilities (1/4, 3/4); (0, 0) gives (1/2, 1/2).
    logits = jnp.array([[0.0, np.log(3.0)], [0.0, 0.0]])
    np.testing.assert_allclose(
        classification_loss(logits, jnp.array([1, 0])), (-np.log(0.75) + np.log(2)) / 2, rtol=1e-6
    )
    np.testing.assert_allclose(classification_loss(logits, jnp.array([0, 1])), (np.log(4.0) + np.log(2)) / 2, rtol=1e-6)
    # The continuous label is clipped to the executed [-1, 1]; a discrete one is the index.
    np.testing.assert_allclose(expert_label(jnp.array([[1.5], [-0.3], [-2.0]]), True), [[1.0], [-0.3], [-1.0]])
    assert expert_label(jnp.array([1.0, 0.0]), False).dtype == jnp.int32


@pytest.mark.parametrize("continuous", [False, True])
def test_the_labels_are_the_experts_actions_even_where_the_learner_acted(continuous):
    n = 4_000
    env_args = prepare_env("Pendulum-v1" if continuous else "CartPole-v1", n_envs=n)
    raw_expert = torque_expert if continuous else cartpole_expert
    config = DAggerConfig(
        expert=ExpertInAgentUnits.for_env(raw_expert, env_args),
        n_steps=1,
        n_gradient_steps=1,
        batch_size=1,
        buffer_size=n,
        beta_decay=0.5,
    )
    learner = -0.7 * jnp.ones((n, 1)) if continuous else jnp.zeros(n, jnp.int32)
    act = mixture_pipeline(config, env_args, lambda params, obs: learner)
    obs = jax.random.uniform(jax.random.PRNGKey(0), (n, env_args.observation_dim), minval=-1.0, maxval=1.0)
    # The expert in agent units: Pendulum's box is [-2, 2], so 3 sin(theta) / 2, clipped to the box.
    expert = jnp.clip(1.5 * obs[:, 1:2], -1.0, 1.0) if continuous else cartpole_expert(obs)

    # Iteration 4 (three updates done): beta_4 = 1/8.
    state = SimpleNamespace(n_updates=jnp.asarray(3), actor_state=SimpleNamespace(params=None))
    action, extras = act(state, obs, jax.random.PRNGKey(1))
    acted = np.asarray(extras.expert_acted)
    assert abs(acted.mean() - 0.125) < 0.03
    np.testing.assert_allclose(extras.label, expert)  # every copy, the learner's included
    np.testing.assert_allclose(action[acted], expert[acted])
    np.testing.assert_allclose(action[~acted], learner[~acted])
    assert np.any(np.asarray(extras.label)[~acted] != np.asarray(learner)[~acted])  # the labels are not what ran

    # Iteration 1: beta_1 = 1, the expert drives every copy.
    first = SimpleNamespace(n_updates=jnp.asarray(0), actor_state=SimpleNamespace(params=None))
    action, extras = act(first, obs, jax.random.PRNGKey(2))
    assert bool(extras.expert_acted.all())
    np.testing.assert_allclose(action, expert)


# Determinism and the resume contract -------------------------------------------------------
TOTAL, LOG = 512, 128
PER_ITERATION = 2 * 32


def small_dagger(continuous: bool, **kwargs) -> DAgger:
    return DAgger(
        "Pendulum-v1" if continuous else "CartPole-v1",
        expert_policy=swing_up_expert if continuous else cartpole_expert,
        n_envs=2,
        n_steps=32,
        n_gradient_steps=4,
        batch_size=32,
        buffer_size=1_000,
        architecture=SMALL,
        **kwargs,
    )


@pytest.fixture(scope="module", params=[False, True], ids=["discrete", "continuous"])
def full_run(request):
    agent = small_dagger(request.param)
    state, evaluations = agent.train(seed=[0, 1], n_timesteps=TOTAL, logging_config=LoggingConfig(log_frequency=LOG))
    return request.param, agent, state, evaluations


def test_the_logged_mixture_and_the_experts_return(full_run):
    # Determinism and the resume contract: tests/agents/test_resume_contract.py.
    continuous, agent, state, evaluations = full_run
    assert state.critic_state is None and np.all(np.isnan(evaluations["Eval/mean bias"]))  # no critic
    # The expert's own return beside the learner's, and the learner's lead over it.
    expert_return = evaluations["Eval/episodic mean expert reward"]
    np.testing.assert_allclose(
        evaluations["Eval/expert bias"], evaluations["Eval/episodic mean reward"] - expert_return, rtol=1e-5
    )
    # The evaluation after iteration i logs beta_i = 0.5^(i-1), i = timestep / steps per iteration.
    filled = evaluations["timestep"][0] >= 0
    iteration = evaluations["timestep"][0][filled] // PER_ITERATION
    np.testing.assert_allclose(evaluations["mixture/beta"][:, filled], np.tile(0.5 ** (iteration - 1), (2, 1)))


def test_the_aggregate_holds_every_visited_state_labelled_by_the_expert(full_run):
    continuous, agent, state, _ = full_run
    dataset = state.dataset
    # 512 steps make 9 iterations of 64 (the loop's extra rollout at the horizon): 576 rows, none dropped.
    assert int(dataset.current_index[0]) == 9 * PER_ITERATION and not bool(dataset.is_full[0])
    rows = dataset.experience  # (seeds, 1, buffer_size, ...): flashbax's item buffer keeps one row axis
    obs, label = rows.obs[:, 0, : 9 * PER_ITERATION], rows.label[:, 0, : 9 * PER_ITERATION]
    expert = agent.agent_config.expert
    expected = jnp.clip(expert(obs), -1.0, 1.0) if continuous else expert(obs)
    np.testing.assert_allclose(label, expected, rtol=1e-6)
    # The observations are the run's own: distinct states, not a constant.
    assert np.unique(np.asarray(obs[0, :, 0])).size > 100
    assert np.all(np.asarray(rows.obs[:, 0, 9 * PER_ITERATION :]) == 0.0)  # and nothing beyond them


# Extensions --------------------------------------------------------------------------------
@dataclass(frozen=True)
class ActorLossProbe(Extension):
    """Adds nothing to the loss but reports the labels' mean: its metric shows the fold ran on D's batches."""

    def actor_loss(self, ctx, agent_state, ext_state, batch, actor_params):
        return jnp.zeros(()), {"probe/label_mean": jnp.mean(batch.label.astype(jnp.float32))}


@dataclass(frozen=True)
class OverridesEveryAction(Extension):
    def action(self, ctx, agent_state, ext_state, obs, action):
        return action


def test_the_actor_step_folds_the_extensions_actor_loss():
    assert DAgger.supported_extension_phases == LOOP_PHASES | {"actor_loss"}
    agent = DAgger(
        BestAction(),
        expert_policy=lambda obs: jnp.ones(obs.shape[0], jnp.int32),
        n_envs=2,
        n_steps=8,
        n_gradient_steps=2,
        batch_size=8,
        buffer_size=256,
        architecture=SMALL,
        extensions=(ActorLossProbe(),),
    )
    _, evaluations = agent.train(seed=0, n_timesteps=64, logging_config=LoggingConfig(log_frequency=32))
    np.testing.assert_allclose(evaluations["probe/label_mean"][0], 1.0)  # every label is the expert's 1
    with pytest.raises(ValueError, match="action, which DAgger never folds"):
        DAgger("CartPole-v1", expert_policy=cartpole_expert, extensions=(OverridesEveryAction(),))


# Probes --------------------------------------------------------------------------------------
def test_probe_the_learner_takes_the_experts_best_action():
    # One step then a terminal. Discrete: action 1 pays 1. Continuous: 1 - (a - 0.5)^2, best 0.5 (env
    # units on a [-1, 1] box, so 0.5 in agent units too). The expert answers the best action.
    for continuous, expert in (
        (False, lambda obs: jnp.ones(obs.shape[0], jnp.int32)),
        (True, lambda obs: jnp.full((obs.shape[0], 1), 0.5)),
    ):
        agent = DAgger(
            BestAction(continuous=continuous),
            expert_policy=expert,
            n_envs=2,
            n_steps=16,
            n_gradient_steps=25,
            batch_size=32,
            buffer_size=512,
            learning_rate=3e-3,
            architecture=SMALL,
        )
        state, evaluations = agent.train(seed=0, n_timesteps=256, logging_config=LoggingConfig(log_frequency=256))
        params = jax.tree.map(lambda x: x[0], state.actor_state.params)
        if continuous:
            action = DeterministicActor(SMALL, 1).apply(params, jnp.ones((1, 1)))
            assert float(action[0, 0]) == pytest.approx(0.5, abs=0.05)
            assert float(evaluations["Eval/episodic mean reward"][0, -1]) > 0.997
        else:
            pi = CategoricalActor(SMALL, 2).apply(params, jnp.ones((1, 1)))
            assert int(jnp.argmax(pi.logits[0])) == 1 and float(pi.probs[0, 1]) > 0.9
            np.testing.assert_allclose(evaluations["Eval/episodic mean reward"][0, -1], 1.0)


# Learning (calibration: docs/agents/dagger.md) ---------------------------------------------------
@pytest.mark.slow
def test_dagger_reaches_the_experts_return_on_cartpole():
    scores = last_returns(DAgger("CartPole-v1", expert_policy=cartpole_expert), 4_000, 1_000)
    assert scores.min() >= 475, scores


@pytest.mark.slow
def test_dagger_reaches_the_swing_up_experts_return_on_pendulum():
    agent = DAgger("Pendulum-v1", expert_policy=swing_up_expert)
    scores = last_returns(agent, 8_000, 2_000, num_episode_test=20)
    assert scores.mean() >= -220 and scores.min() >= -300, scores


# Bad input ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class IntegratingExpert(StatefulExpert):
    def init_state(self):
        return jnp.zeros(())

    def __call__(self, obs, state):
        return jnp.zeros((1,)), state + obs[0]


def test_bad_input_is_refused_at_construction():
    with pytest.raises(ValueError, match="DAgger imitates an expert: pass expert_policy="):
        DAgger("CartPole-v1")
    with pytest.raises(TypeError, match="An expert is a function from raw observations to actions, got int"):
        DAgger("CartPole-v1", expert_policy=1)
    with pytest.raises(TypeError, match="DAgger calls its expert.*IntegratingExpert is a stateful expert"):
        DAgger("Pendulum-v1", expert_policy=IntegratingExpert())
    with pytest.raises(ValueError, match="buffer_size=100 must hold one iteration's .* = 1000 labelled states"):
        DAgger("CartPole-v1", expert_policy=cartpole_expert, buffer_size=100)
    with pytest.raises(ValueError, match=r"beta_decay must lie in \[0, 1\]"):
        DAgger("CartPole-v1", expert_policy=cartpole_expert, beta_decay=1.5)
    with pytest.raises(ValueError, match="n_gradient_steps must be a positive integer"):
        DAgger("CartPole-v1", expert_policy=cartpole_expert, n_gradient_steps=0)
    with pytest.raises(NotImplementedError, match="DAgger has no recurrent memory"):
        DAgger("CartPole-v1", expert_policy=cartpole_expert, memory={"kind": "gru"})
