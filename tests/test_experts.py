"""Experts: read in agent units, evaluated beside the agent, filling SAC's replay and acting in its warm-up."""

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import APO, ASAC, AVG, REDQ, SAC, TD3
from ajax.environments.create import prepare_env
from ajax.environments.utils import ExpertInAgentUnits, StatefulExpert, require_stateless
from ajax.logging.wandb_logging import LoggingConfig
from tests.probe_envs import BestAction

TINY = ("8", "relu")


def pd_expert(obs):
    """The Why Ajax page's PD controller on Pendulum, in env units ([-2, 2])."""
    theta = jnp.arctan2(obs[..., 1], obs[..., 0])
    return jnp.clip(-(2.0 * theta + 0.5 * obs[..., 2]), -2.0, 2.0)[..., None]


def swing_up_expert(obs):
    """Energy pumping (E = theta_dot^2 / 2 + 15 cos theta, 15 upright at rest), a PD hold near the top.

    Scores -177 over 20 of gymnax Pendulum's episodes (the PD expert above: -1,256, a random policy's level).
    """
    cos, theta_dot = obs[..., 0], obs[..., 2]
    theta = jnp.arctan2(obs[..., 1], cos)
    energy = 0.5 * theta_dot**2 + 15.0 * cos
    pump = jnp.clip(0.5 * theta_dot * (15.0 - energy), -2.0, 2.0)
    hold = jnp.clip(-(10.0 * theta + 2.0 * theta_dot), -2.0, 2.0)
    return jnp.where(cos > 0.9, hold, pump)[..., None]


@dataclass(frozen=True)
class CountingExpert(StatefulExpert):
    """Answers `value` and counts its calls: a stand-in for a PID's integral."""

    value: float = 0.5

    def init_state(self):
        return jnp.zeros((), jnp.int32)

    def __call__(self, obs, state):
        return jnp.full((1,), self.value), state + 1


def test_an_expert_answers_in_env_units_and_is_read_in_agent_units():
    expert = ExpertInAgentUnits.for_env(lambda obs: obs, prepare_env("Pendulum-v1"))  # box [-2, 2]
    np.testing.assert_allclose(expert(jnp.array([[2.0], [1.0], [-0.5], [4.0]])), [[1.0], [0.5], [-0.25], [2.0]])
    discrete = ExpertInAgentUnits.for_env(lambda obs: jnp.ones(obs.shape[0], jnp.int32), prepare_env("CartPole-v1"))
    np.testing.assert_array_equal(discrete(jnp.zeros((3, 4))), [1, 1, 1])  # indices pass through


def test_a_stateful_expert_gets_its_state_back_and_is_refused_without_it():
    expert = ExpertInAgentUnits.for_env(CountingExpert(), prepare_env("Pendulum-v1"))
    state = expert.init_state(3)
    action, state = expert.act(jnp.zeros((3, 3)), state)
    action, state = expert.act(jnp.zeros((3, 3)), state)
    np.testing.assert_allclose(action, [[0.25]] * 3)
    np.testing.assert_array_equal(state, [2, 2, 2])
    with pytest.raises(TypeError, match="stateful expert"):
        expert(jnp.zeros((3, 3)))
    with pytest.raises(TypeError, match="ImitationLoss calls its expert.*CountingExpert"):
        require_stateless(CountingExpert(), "ImitationLoss")


@pytest.mark.parametrize("expert", [lambda obs: jnp.full((obs.shape[0], 1), 0.5), CountingExpert(0.5)])
def test_evaluations_report_the_experts_return_and_the_agents_lead(expert):
    # BestAction pays 1 - (a - 0.5)^2 in one step: an expert answering 0.5 earns exactly 1.
    agent = SAC(
        BestAction(continuous=True),
        learning_starts=64,
        batch_size=16,
        buffer_size=256,
        actor_architecture=TINY,
        critic_architecture=TINY,
        expert_policy=expert,
    )
    _, evaluations = agent.train(seed=[0, 1], n_timesteps=128, logging_config=LoggingConfig(log_frequency=64))
    np.testing.assert_allclose(evaluations["Eval/episodic mean expert reward"], 1.0, rtol=1e-6)
    np.testing.assert_allclose(
        evaluations["Eval/expert bias"], evaluations["Eval/episodic mean reward"] - 1.0, rtol=1e-5, atol=1e-6
    )


@pytest.fixture(scope="module")
def expert_sac_run():
    agent = SAC(
        "Pendulum-v1",
        n_envs=2,
        learning_starts=400,
        batch_size=16,
        buffer_size=2000,
        actor_architecture=TINY,
        critic_architecture=TINY,
        expert_policy=pd_expert,
        expert_buffer_n_steps=300,
    )
    with pytest.warns(UserWarning, match="never update"):
        state, _ = agent.train(seed=0, n_timesteps=400)  # the whole call is warm-up: no update
    return agent, state


def test_sac_fills_its_replay_with_expert_steps_and_lets_the_expert_act_in_the_warm_up(expert_sac_run):
    _, state = expert_sac_run
    buffer = state.collector_state.buffer_state
    stored = 300 + 400  # the expert's 300 steps (150 ticks of 2 envs), then the call's 400
    assert int(np.asarray(buffer.current_index)[0]) == stored
    experience = jax.tree.map(lambda x: np.asarray(x)[0, :stored], buffer.experience)
    # Every stored action is the expert's on its observation, in agent units (torque / 2).
    np.testing.assert_allclose(experience.action, np.asarray(pd_expert(experience.obs)) / 2.0, rtol=1e-5, atol=1e-6)


def test_expert_policy_is_taken_by_the_agents_the_page_names():
    for agent in (TD3, REDQ, AVG):
        agent("Pendulum-v1", expert_policy=pd_expert)
    APO("Pendulum-v1", expert_policy=pd_expert)
    with pytest.raises(TypeError, match="expert_policy"):
        ASAC("Pendulum-v1", expert_policy=pd_expert)


def test_bad_expert_settings_fail_at_construction():
    with pytest.raises(ValueError, match="needs expert_policy"):
        SAC("Pendulum-v1", expert_buffer_n_steps=100)
    with pytest.raises(TypeError, match="stateful expert"):
        SAC("Pendulum-v1", expert_policy=CountingExpert(), expert_buffer_n_steps=100)
    with pytest.raises(ValueError, match="exceeds buffer_size"):
        SAC("Pendulum-v1", expert_policy=pd_expert, expert_buffer_n_steps=100, buffer_size=50, batch_size=16)
    with pytest.raises(TypeError, match="function from raw observations"):
        SAC("Pendulum-v1", expert_policy="pd")


@pytest.mark.slow
def test_expert_guided_sac_beats_plain_sac_at_a_small_budget():
    """3,000 steps, seeds 0-2, learning from step 1,000; final evaluation (10 episodes).

    Calibration: plain SAC -1,082, -844, -933 (mean -953); guided (2,000 expert steps in the
    replay, the expert acting in the warm-up, ImitationLoss) -274, -374, -226 (mean -291).
    About 150 s on 2 cores.
    """
    from ajax.extensions.expert import ImitationLoss

    logging = LoggingConfig(log_frequency=1_000)
    guidance = dict(
        expert_policy=swing_up_expert, expert_buffer_n_steps=2_000, extensions=(ImitationLoss(swing_up_expert),)
    )
    final = {}
    for name, settings in (("plain", {}), ("guided", guidance)):
        _, evaluations = SAC("Pendulum-v1", learning_starts=1_000, **settings).train(
            seed=[0, 1, 2], n_timesteps=3_000, logging_config=logging
        )
        final[name] = np.asarray(evaluations["Eval/episodic mean reward"])[:, -1]
    assert final["guided"].mean() > final["plain"].mean() + 400, final
    assert final["guided"].min() > final["plain"].max(), final
