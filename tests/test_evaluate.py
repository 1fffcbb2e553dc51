"""The evaluation's discounted returns, which the value bias compares the critic with."""

import jax.numpy as jnp
import numpy as np

from ajax.evaluate import discounted_returns
from tests.probe_envs import OneStepReward


def test_discounted_returns_restart_at_episode_ends():
    reward = jnp.array([1.0, 1.0, 1.0, 1.0])[:, None]
    done = jnp.array([0, 1, 0, 1], bool)[:, None]
    np.testing.assert_allclose(discounted_returns(reward, done, 0.5)[:, 0], [1.5, 1.0, 1.5, 1.0])


def test_evaluating_a_state_again_reruns_its_program_instead_of_compiling_it_again():
    import jax

    from ajax import PPO

    compiles = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, duration, **_: compiles.append(event) if event.endswith("backend_compile_duration") else None
    )
    agent = PPO("CartPole-v1", n_envs=2, n_steps=16, batch_size=16, n_epochs=1)
    state, _ = agent.train(seed=[0, 1], n_timesteps=32)
    first = agent.evaluate(state, num_episode_test=2, seed=3)
    compiled = len(compiles)
    other_seed = agent.evaluate(state, num_episode_test=2, seed=4)
    again = agent.evaluate(state, num_episode_test=2, seed=3)
    assert len(compiles) == compiled  # no backend compile after the first evaluation
    assert set(other_seed) == set(first)
    for name in first:
        np.testing.assert_array_equal(again[name], first[name])


def test_an_evaluation_is_traced_with_the_garbage_collector_paused_and_it_runs_again_after(monkeypatch):
    """`agent.evaluate` traces its program as a run's program is traced (`collection_paused`)."""
    import gc
    import importlib

    from ajax import PPO

    evaluation = importlib.import_module("ajax.evaluate")
    agent = PPO("CartPole-v1", n_envs=2, n_steps=16, batch_size=16, n_epochs=1)
    state, _ = agent.train(seed=[0], n_timesteps=0)
    collector_on, step_envs = [], evaluation.step_envs

    def recorded(*args, **kwargs):
        collector_on.append(gc.isenabled())
        return step_envs(*args, **kwargs)

    monkeypatch.setattr(evaluation, "step_envs", recorded)
    agent.evaluate(state, num_episode_test=2)
    assert collector_on == [False] and gc.isenabled()


class DivergesAfterItsEnd(OneStepReward):
    """Reward 1 a step until a true terminal at step 3, then NaN: a simulation that diverged once
    its episode was over. Unreset, the evaluation steps it on past its end."""

    def __init__(self):
        super().__init__(episode_steps=3)

    def step_env(self, key, state, action, params):
        obs, stepped, _, terminated, info = super().step_env(key, state, action, params)
        return obs, stepped, jnp.where(state.time >= 3, jnp.nan, 1.0), terminated, info


def test_stepping_without_reset_carries_an_ended_episode_on_where_the_auto_reset_restarts_it():
    import jax

    from ajax.environments.create import prepare_env
    from ajax.environments.interaction import reset_envs, step_envs

    env_args = prepare_env(DivergesAfterItsEnd(), n_envs=2, episode_length=8)
    _, state = reset_envs(jax.random.PRNGKey(0), env_args)
    action = jnp.zeros((2,), jnp.int32)
    for time in range(1, 5):
        key = jax.random.PRNGKey(time)
        _, unreset, reward, terminated, _, _ = step_envs(key, state, action, env_args, reset=False)
        _, resetting, _, _, _, _ = step_envs(key, state, action, env_args)
        assert terminated.all() == (time >= 3)
        if time == 3:  # the episode's end: the auto-reset starts the next one, the other steps on
            assert (unreset.time == 3).all() and (resetting.time == 0).all()
        state = unreset
    assert np.isnan(reward).all()  # past the end the env pays NaN, which an evaluation must not read


def test_an_evaluation_reads_nothing_past_an_episodes_end():
    from ajax import PPO

    agent = PPO(DivergesAfterItsEnd(), n_envs=2, n_steps=4, batch_size=8, n_epochs=1, episode_length=8)
    state, _ = agent.train(seed=[0], n_timesteps=0)
    metrics = agent.evaluate(state, num_episode_test=2)
    assert metrics["Eval/episodic mean reward"][0] == 3.0 and metrics["Eval/mean episodic length"][0] == 3.0
    assert np.isfinite(metrics["Eval/mean bias"][0]) and np.isfinite(metrics["Eval/episodic entropy"][0])


def test_only_an_env_whose_step_is_step_env_and_a_reset_is_stepped_without_one():
    from gymnax.environments import environment

    from ajax.environments.brax_like import BraxLikeEnv
    from ajax.wrappers import ClipAction, steps_through_step_env

    class OwnStep(OneStepReward):
        def step(self, key, state, action, params=None):  # more than step_env and a reset
            return super().step(key, state, action, params)

    assert steps_through_step_env(OneStepReward())
    assert steps_through_step_env(ClipAction(OneStepReward(continuous=True)))
    assert BraxLikeEnv.step.resets_after_step_env and environment.Environment.step is OneStepReward.step
    assert not steps_through_step_env(OwnStep())
