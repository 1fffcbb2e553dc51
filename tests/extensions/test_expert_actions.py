"""The action phase on SAC (ajax.extensions.expert_actions): ResidualPolicy, JSRLCurriculum, EDGEExploration.

The maths by hand; then what the env executed, read back from Pendulum's own dynamics
(the torque is the only unknown in its velocity update), against what the replay stored.
"""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import SAC, TD3
from ajax.agents.loop import RunSettings
from ajax.extensions import Extension
from ajax.extensions.expert_actions import (
    EDGEExploration,
    JSRLCurriculum,
    ResidualPolicy,
    jsrl_guide_steps,
    linear_decay,
    residual_action,
)
from ajax.logging.wandb_logging import LoggingConfig
from ajax.state import SEED_AXIS
from tests.conftest import CountingExpert, pd_expert, swing_up_expert

TINY = ("16", "relu")
STEPS = 400  # two Pendulum episodes on one env copy


def sac(*extensions, **kwargs):
    """A tiny SAC at a fixed temperature: what these tests read is the action phase, not the learning."""
    settings = dict(learning_starts=100, batch_size=16, buffer_size=1000, actor_architecture=TINY)
    return SAC("Pendulum-v1", learn_alpha=False, critic_architecture=TINY, extensions=extensions, **settings | kwargs)


def replay(state):
    """The replay's first STEPS transitions of seed 0 (one env copy)."""
    return jax.tree.map(lambda x: np.asarray(x[0, 0, :STEPS]), state.collector_state.buffer_state.experience)


def swing_up(obs: np.ndarray) -> np.ndarray:
    """The swing-up expert's torque in agent units (Pendulum's box is [-2, 2])."""
    return np.asarray(swing_up_expert(jnp.asarray(obs)))[:, 0] / 2.0


def executed_torque(obs: np.ndarray, next_obs: np.ndarray) -> np.ndarray:
    """Pendulum's torque from theta_dot' = theta_dot + (3 g / 2 l sin(theta) + 3 u / m l^2) dt, g 10, dt 0.05."""
    return (next_obs[..., 2] - obs[..., 2] - 0.75 * obs[..., 1]) / 0.15


def test_the_maths_by_hand():
    np.testing.assert_allclose(
        residual_action(jnp.array([0.5, -0.8, 0.9]), jnp.array([0.2, -0.5, 0.4]), 0.5), [0.6, -1.0, 1.0]
    )
    # 4 stages over 1,000 steps: five parts of 200; guide steps 100, 75, 50, 25, 0.
    steps = jnp.array([0, 199, 200, 599, 600, 799, 800, 1000, 5000])
    assert jsrl_guide_steps(steps, 1000, 100, 4).tolist() == [100, 100, 75, 50, 25, 25, 0, 0, 0]
    np.testing.assert_allclose(linear_decay(jnp.array([0, 250, 500, 900]), 1000, 0.8, 0.5), [0.8, 0.4, 0.0, 0.0])


def test_a_residual_policy_executes_the_expert_plus_the_agents_action_and_stores_the_agents():
    agent = sac(ResidualPolicy(swing_up_expert, scale=0.5), expert_policy=swing_up_expert)
    state, _ = agent.train(seed=[0], n_timesteps=STEPS)  # the replay is what it reads: no evaluation
    data = replay(state)
    obs, stored = data.obs, data.action[:, 0]
    expert = swing_up(obs)
    torque = executed_torque(obs, data.next_obs)
    free = np.abs(data.next_obs[:, 2]) < 7.9  # the speed clip hides the torque
    np.testing.assert_allclose(torque[free], 2.0 * np.clip(expert + 0.5 * stored, -1, 1)[free], atol=2e-3)
    assert np.abs(stored - expert).mean() > 0.1  # the replay holds the agent's own action, not the sum


def test_a_residual_policy_is_evaluated_on_top_of_the_expert():
    near_zero = sac(ResidualPolicy(swing_up_expert, scale=1e-6), expert_policy=swing_up_expert)
    # The evaluation the logging gate runs, on the fresh state: no training program to compile.
    one_seed = near_zero.get_make_train()(run=RunSettings(0, 0, 0))
    fresh = jax.jit(jax.vmap(one_seed.fresh_state, axis_name=SEED_AXIS))(jax.random.PRNGKey(0)[None])
    evaluations = near_zero.evaluate(fresh)
    # A vanishing residual executes the expert's action: same episodes, same return.
    assert abs(float(evaluations["Eval/expert bias"][0])) < 1.0
    assert float(evaluations["Eval/episodic mean expert reward"][0]) > -400


class ConstantAction(Extension):
    def action(self, ctx, agent_state, ext_state, obs, action):
        return jnp.full_like(action, 0.25)


@pytest.fixture(scope="module")
def jsrl_run():
    """JSRL folded after ConstantAction: the steps JSRL leaves to the agent show the override below it,
    on warm-up draws (steps 100 to 250) and on the actor's own actions (from 250)."""
    agent = sac(ConstantAction(), JSRLCurriculum(swing_up_expert, horizon=100, n_stages=1), learning_starts=250)
    return agent.train(seed=[0], n_timesteps=STEPS, logging_config=LoggingConfig(log_frequency=100))


# One hand-over over 400 steps: the expert guides 100 steps until step 200, none after.
GUIDED = (np.arange(STEPS) < 200) & (np.arange(STEPS) % 200 < 100)


def test_jsrl_hands_each_episodes_start_to_the_expert(jsrl_run):
    state, evaluations = jsrl_run
    data = replay(state)
    obs, stored = data.obs, data.action[:, 0]
    expert = swing_up(obs)
    np.testing.assert_allclose(stored[GUIDED], expert[GUIDED], atol=1e-6)
    # The action below it elsewhere (or both at a bound).
    assert np.mean(np.isclose(stored[~GUIDED], expert[~GUIDED], atol=1e-6)) < 0.05
    free = np.abs(data.next_obs[:, 2]) < 7.9
    np.testing.assert_allclose(executed_torque(obs, data.next_obs)[free], 2 * stored[free], atol=2e-3)
    np.testing.assert_array_equal(evaluations["jsrl/guide_steps"][0], [100, 0, 0, 0])
    assert state.collector_state.episode_steps.tolist() == [[0]]  # 400 steps: two whole episodes


def test_an_action_extension_overrides_what_sac_executes_and_stores(jsrl_run):
    data = replay(jsrl_run[0])
    np.testing.assert_array_equal(data.action[~GUIDED], 0.25)
    free = (np.abs(data.next_obs[:, 2]) < 7.9) & ~GUIDED
    np.testing.assert_allclose(executed_torque(data.obs, data.next_obs)[free], 0.5, atol=2e-3)


def test_edge_follows_the_expert_as_often_as_its_schedule_says():
    agent = sac(EDGEExploration(swing_up_expert, epsilon=1.0, decay_fraction=1.0, noise=0.0))
    state, evaluations = agent.train(seed=[0], n_timesteps=STEPS, logging_config=LoggingConfig(log_frequency=200))
    data = replay(state)
    followed = np.isclose(data.action[:, 0], swing_up(data.obs), atol=1e-6)
    # epsilon(t) = 1 - t / 400: expected share followed 7/8 in the first 100 steps, 1/8 in the last.
    first, last = followed[:100].mean(), followed[300:].mean()
    assert 0.75 < first <= 1.0 and 0.0 <= last < 0.25, (first, last)
    np.testing.assert_allclose(evaluations["edge/epsilon"][0], [0.5, 0.0], atol=1e-6)


def test_bad_action_extensions_fail_at_construction():
    with pytest.raises(ValueError, match="JSRLCurriculum implements action, which TD3 never folds"):
        TD3("Pendulum-v1", extensions=(JSRLCurriculum(pd_expert),))
    with pytest.raises(TypeError, match="ResidualPolicy calls its expert.*stateful"):
        SAC("Pendulum-v1", extensions=(ResidualPolicy(CountingExpert()),))
    with pytest.raises(ValueError, match="ResidualPolicy makes its controller part of the environment.*JSRLCurriculum"):
        SAC("Pendulum-v1", extensions=(ResidualPolicy(pd_expert), JSRLCurriculum(pd_expert)))
    with pytest.raises(ValueError, match="JSRLCurriculum's horizon must be a positive integer, got 0"):
        JSRLCurriculum(pd_expert, horizon=0)
    with pytest.raises(ValueError, match=r"EDGEExploration\'s epsilon must lie in \[0, 1\], got 2.0"):
        EDGEExploration(pd_expert, epsilon=2.0)
    with pytest.raises(ValueError, match=r"ResidualPolicy\'s scale must lie in \(0, inf\), got 0.0"):
        ResidualPolicy(pd_expert, scale=0.0)
    with pytest.raises(TypeError, match="needs an expert"):
        ResidualPolicy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SAC("Pendulum-v1", extensions=(JSRLCurriculum(pd_expert),))  # no inert keyword: silent


@pytest.mark.slow
def test_a_residual_policy_starts_at_the_experts_level():
    """Pendulum-v1, 2 envs, seeds 0-2, 3,000 steps, the swing-up expert. Calibration: docs/agents/sac.md."""

    def evaluations(*extensions):
        agent = SAC("Pendulum-v1", n_envs=2, learning_starts=500, extensions=extensions)
        _, evaluations = agent.train(
            seed=[0, 1, 2], n_timesteps=3_000, logging_config=LoggingConfig(log_frequency=3_000 // 4)
        )
        return np.asarray(evaluations["Eval/episodic mean reward"])

    plain_early = evaluations()
    residual = evaluations(ResidualPolicy(swing_up_expert, scale=0.5))
    assert residual.min() > -300 and residual.min() > plain_early.max() + 500, (residual, plain_early)
