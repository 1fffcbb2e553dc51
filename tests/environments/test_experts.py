"""Experts (ajax.environments.utils): read in agent units, evaluated beside the agent, filling SAC's
replay and acting in its warm-up."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import APO, ASAC, AVG, REDQ, SAC, TD3
from ajax.agents.loop import RunSettings
from ajax.environments.create import prepare_env
from ajax.environments.utils import ExpertInAgentUnits, require_stateless
from ajax.logging.wandb_logging import LoggingConfig
from ajax.state import SEED_AXIS
from tests.conftest import CountingExpert, pd_expert, swing_up_expert
from tests.probe_envs import BestAction

TINY = ("8", "relu")


def test_an_expert_answers_in_env_units_and_is_read_in_agent_units():
    expert = ExpertInAgentUnits.for_env(lambda obs: obs[:, :1], prepare_env("Pendulum-v1"))  # box [-2, 2]
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


def best_action_sac(expert) -> SAC:
    # BestAction pays 1 - (a - 0.5)^2 in one step: an expert answering 0.5 earns exactly 1.
    return SAC(
        BestAction(continuous=True),
        learn_alpha=False,
        learning_starts=64,
        batch_size=16,
        buffer_size=256,
        actor_architecture=TINY,
        critic_architecture=TINY,
        expert_policy=expert,
    )


@pytest.mark.parametrize("expert", [lambda obs: jnp.full((obs.shape[0], 1), 0.5), CountingExpert(0.5)])
def test_evaluations_report_the_experts_return_and_the_agents_lead(expert):
    # The evaluation the logging gate runs, on two seeds' fresh states: no training program to compile
    # (the gate's own rows: the expert-replay test below).
    agent = best_action_sac(expert)
    one_seed = agent.get_make_train()(run=RunSettings(0, 0, 0))
    keys = jnp.stack([jax.random.PRNGKey(0), jax.random.PRNGKey(1)])
    evaluations = agent.evaluate(jax.jit(jax.vmap(one_seed.fresh_state, axis_name=SEED_AXIS))(keys))
    np.testing.assert_allclose(evaluations["Eval/episodic mean expert reward"], 1.0, rtol=1e-6)
    np.testing.assert_allclose(
        evaluations["Eval/expert bias"], evaluations["Eval/episodic mean reward"] - 1.0, rtol=1e-5, atol=1e-6
    )


def test_sac_fills_its_replay_with_expert_steps_and_lets_the_expert_act_in_the_warm_up():
    agent = SAC(
        "Pendulum-v1",
        n_envs=2,
        learn_alpha=False,
        learning_starts=400,
        batch_size=16,
        buffer_size=2000,
        actor_architecture=TINY,
        critic_architecture=TINY,
        expert_policy=pd_expert,
        expert_buffer_n_steps=300,
    )
    with pytest.warns(UserWarning, match="never update"):  # the whole call is warm-up: no update
        state, evaluations = agent.train(seed=0, n_timesteps=400, logging_config=LoggingConfig(log_frequency=400))
    buffer = state.collector_state.buffer_state
    stored = 300 + 400  # the expert's 300 steps (150 ticks of 2 envs), then the call's 400
    assert int(np.asarray(buffer.current_index)[0]) == stored
    experience = jax.tree.map(lambda x: np.asarray(x)[0, 0, :stored], buffer.experience)
    # Every stored action is the expert's on its observation, in agent units (torque / 2).
    np.testing.assert_allclose(experience.action, np.asarray(pd_expert(experience.obs)) / 2.0, rtol=1e-5, atol=1e-6)
    # The logged evaluation rolls the expert out beside the agent: its return, and the agent's lead on it.
    agent_return, expert_return = (evaluations[f"Eval/episodic mean {name}reward"][0, -1] for name in ("", "expert "))
    assert np.isfinite(expert_return) and expert_return != agent_return
    np.testing.assert_allclose(evaluations["Eval/expert bias"][0, -1], agent_return - expert_return, rtol=1e-5)


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

    Guided: 2,000 expert steps in the replay, the expert acting in the warm-up, ImitationLoss.
    Calibration: docs/agents/sac.md.
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
