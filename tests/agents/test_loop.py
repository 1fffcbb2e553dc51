"""The shared loop: budgets, the skeleton, evaluation rows, unbatched gates, extensions."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import DQN, PPO
from ajax.agents.loop import RunSettings, when
from ajax.environments.create import prepare_env
from ajax.environments.interaction import collect_experience, init_collector
from ajax.extensions import Extension, ExtensionStack
from ajax.logging.wandb_logging import LoggingConfig
from ajax.perf_utils import final_aux_scan
from ajax.state import BaseAgentState
from tests.conftest import assert_same_state, count_conds

SMALL = ("16", "relu")


@pytest.fixture(scope="module")
def dqn_logged():
    agent = DQN("CartPole-v1", n_envs=3, learning_starts=100, batch_size=16, buffer_size=1000, architecture=SMALL)
    state, evaluations = agent.train(seed=[0, 1], n_timesteps=1000, logging_config=LoggingConfig(log_frequency=250))
    return agent, state, evaluations


def test_off_policy_budget_is_whole_ticks(dqn_logged):
    _, state, _ = dqn_logged
    np.testing.assert_array_equal(state.collector_state.timestep, [999, 999])  # 1000 // 3 ticks of 3 envs
    assert state.n_updates.tolist() == [(999 - 99) // 3] * 2  # from timestep 102 on, one update per tick


def test_on_policy_budget_makes_one_rollout_more():
    agent = PPO(
        "CartPole-v1",
        n_envs=2,
        n_steps=16,
        batch_size=16,
        n_epochs=1,
        actor_architecture=SMALL,
        critic_architecture=SMALL,
    )
    state, out = agent.train(seed=0, n_timesteps=100)
    assert out is None
    assert int(state.collector_state.timestep[0]) == (100 // 32 + 1) * 32
    assert int(state.n_updates[0]) == 100 // 32 + 1


def test_a_call_past_the_horizon_by_more_than_a_rollout_says_which_budget_reaches_it():
    agent = PPO("CartPole-v1", n_envs=1, n_steps=64, actor_architecture=SMALL, critic_architecture=SMALL)
    with pytest.raises(ValueError, match=r"stands at timestep 0, so n_timesteps=100 reaches the horizon"):
        agent.train(seed=0, n_timesteps=200, total_timesteps=100)


def test_zero_timesteps_returns_the_untrained_skeleton():
    agent = DQN("CartPole-v1", architecture=SMALL, buffer_size=1000)
    state, out = agent.train(seed=[3, 4], n_timesteps=0)
    assert out is None and state.collector_state.timestep.tolist() == [0, 0]
    assert state.n_updates.tolist() == [0, 0]
    assert jax.tree.leaves(state.critic_state.params)[0].shape[0] == 2


def test_evaluation_rows_fill_at_crossings(dqn_logged):
    _, _, evaluations = dqn_logged
    # Crossings of 250, 500, 750 happen at timesteps 252, 501, 750; 1000 lies past the last tick
    # (999), so the call has three slots.
    np.testing.assert_array_equal(evaluations["timestep"], [[252, 501, 750]] * 2)
    returns = evaluations["Eval/episodic mean reward"]
    assert returns.shape == (2, 3) and np.all(np.isfinite(returns))
    for key in (
        "Eval/mean episodic length",
        "Eval/episodic entropy",
        "Eval/mean bias",
        "Train/episodic mean reward",
        "value/critic_loss",
    ):
        assert key in evaluations
    # CartPole pays 1 per step: an evaluation's return equals its length.
    np.testing.assert_allclose(returns, evaluations["Eval/mean episodic length"])


def test_calls_that_differ_only_in_budget_run_one_compiled_program(dqn_logged):
    """The iteration count enters the program traced: a run's legs run the program its one call
    compiled, and end where it ends."""
    agent, state, evaluations = dqn_logged

    def runs() -> list:
        return [program for key, program in agent._programs.items() if key[0] not in ("fresh", "skeleton")]

    (program,) = runs()
    leg = {"total_timesteps": 1000, "logging_config": LoggingConfig(log_frequency=250)}
    first, first_rows = agent.train(seed=[0, 1], n_timesteps=501, **leg)
    second, second_rows = agent.train(n_timesteps=499, initial_state=first, **leg)
    assert runs() == [program] and program._cache_size() == 1
    assert_same_state(state, second)
    assert first_rows["timestep"].tolist() == [[252, 501]] * 2 and second_rows["timestep"].tolist() == [[750]] * 2


def test_metrics_before_learning_starts_are_nan():
    agent = DQN("CartPole-v1", learning_starts=300, batch_size=16, buffer_size=1000, architecture=SMALL)
    _, evaluations = agent.train(seed=0, n_timesteps=400, logging_config=LoggingConfig(log_frequency=200))
    loss = evaluations["value/critic_loss"][0]
    assert np.isnan(loss[0]) and np.isfinite(loss[1])


def test_gates_stay_branches_under_the_seed_vmap(dqn_logged):
    """A batched predicate would turn lax.cond into a select that evaluates every iteration."""
    agent, _, _ = dqn_logged
    run = RunSettings(start_timestep=0, end_timestep=600, total_timesteps=600, log_frequency=200)
    one_seed = agent.get_make_train()(run=run)
    key = jax.random.PRNGKey(0)
    single = count_conds(jax.make_jaxpr(lambda k: one_seed(k, None))(key).jaxpr)
    batched = count_conds(jax.make_jaxpr(jax.vmap(lambda k: one_seed(k, None)))(jnp.stack([key, key])).jaxpr)
    assert single >= 3  # the learning gate, the target refresh and the evaluation gate at least
    assert batched == single


def test_when_skips_and_fills_metrics_with_nan():
    def double(x):
        return x * 2, {"loss": jnp.sum(x)}

    state, aux = when(jnp.asarray(False), double, jnp.ones(2))
    assert state.tolist() == [1.0, 1.0] and np.isnan(aux["loss"])
    state, aux = when(jnp.asarray(True), double, jnp.ones(2))
    assert state.tolist() == [2.0, 2.0] and float(aux["loss"]) == 2.0


def test_a_step_whose_shape_is_read_first_is_traced_once():
    """`when` and `final_aux_scan` need the step's output shape before they run it; tracing it
    twice would double the trace at every level they nest (an epoch of minibatches: four times)."""
    traces = []

    def step(carry, x):
        traces.append(x)
        return carry + x, {"x": x}

    carry, aux = final_aux_scan(step, jnp.zeros(()), jnp.arange(3.0))
    assert float(carry) == 3.0 and float(aux["x"]) == 2.0 and len(traces) == 1
    traces.clear()
    state, aux = when(jnp.asarray(True), lambda s: step(s, 1.0), jnp.zeros(()))
    assert float(state) == 1.0 and len(traces) == 1


def test_time_limit_keeps_the_final_observation_and_flags_truncation():
    env_args = prepare_env("Pendulum-v1", n_envs=2, episode_length=3)
    collector = init_collector(jax.random.PRNGKey(0), env_args)
    state = BaseAgentState(
        rng=jax.random.PRNGKey(1),
        actor_state=None,
        critic_state=None,
        collector_state=collector,
        eval_rng=jax.random.PRNGKey(2),
        n_updates=jnp.zeros((), jnp.int32),
        n_logs=jnp.zeros((), jnp.int32),
    )

    def pipeline(state, obs, key):
        return jnp.ones((2, 1)), ()

    transitions = []
    for _ in range(3):
        state, transition = collect_experience(state, pipeline, env_args)
        transitions.append(transition)
    assert not transitions[1].truncated.any() and transitions[2].truncated.all()
    assert not transitions[2].terminated.any()
    # next_obs is where the episode ended; last_obs is already the new episode's first.
    assert not np.allclose(transitions[2].next_obs, state.collector_state.last_obs)
    assert np.allclose(transitions[1].next_obs, transitions[2].obs)
    # Both episodes finished with a return, recorded for Train/episodic mean reward.
    assert np.all(np.isfinite(state.collector_state.last_episodic_return))
    np.testing.assert_array_equal(state.collector_state.episodic_return, [0.0, 0.0])


class CountUpdates(Extension):
    def init_state(self, ctx, agent_state):
        return jnp.zeros((), jnp.int32)

    def post_update(self, ctx, agent_state, ext_state):
        return agent_state, ext_state + 1


class OverrideAction(Extension):
    def action(self, ctx, agent_state, ext_state, obs, action):
        return action * 0


def test_post_update_extension_runs_after_every_update():
    agent = DQN(
        "CartPole-v1",
        learning_starts=100,
        batch_size=16,
        buffer_size=1000,
        architecture=SMALL,
        extensions=(CountUpdates(),),
    )
    state, _ = agent.train(seed=0, n_timesteps=300)
    assert int(state.ext_state[0][0]) == int(state.n_updates[0]) == 201  # timesteps 100 to 300


def test_empty_stack_returns_its_input_unchanged():
    stack = ExtensionStack()
    sentinel = object()
    assert stack.fold_post_update(sentinel) is sentinel and stack.fold_init(sentinel) is sentinel
    loss, metrics = stack.fold_critic_loss(sentinel, None, None)
    assert float(loss) == 0.0 and metrics == {}


def test_an_extension_phase_the_agent_never_folds_is_refused():
    with pytest.raises(ValueError, match="action.*never folds"):
        PPO("CartPole-v1", extensions=(OverrideAction(),))
    with pytest.raises(TypeError, match="Extension"):
        PPO("CartPole-v1", extensions=(lambda s: s,))
