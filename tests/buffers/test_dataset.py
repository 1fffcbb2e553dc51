"""collect_dataset: an expert's experience in agent units, terminations and time limits apart."""

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from ajax.buffers.dataset import collect_dataset
from ajax.environments.utils import StatefulExpert
from tests.conftest import assert_same_state, pd_expert
from tests.probe_envs import EndlessReward, TerminalTwin


def test_collect_dataset_stores_the_executed_action_in_agent_units_and_keeps_time_limits_apart():
    dataset = collect_dataset("Pendulum-v1", pd_expert, 400, seed=3, n_envs=2)
    assert dataset.obs.shape == (400, 3) and dataset.action.shape == (400, 1) and dataset.reward.shape == (400,)
    # Pendulum's torque box is [-2, 2]: the stored action is the expert's torque / 2.
    np.testing.assert_allclose(dataset.action, pd_expert(dataset.obs) / 2.0, atol=1e-6)
    # Each copy runs 200 steps, Pendulum's time limit: one truncation per copy, at its last
    # step (copy-major), and never a terminal.
    assert not np.any(dataset.terminated)
    np.testing.assert_array_equal(np.nonzero(dataset.truncated)[0], [199, 399])
    # Within an episode a step starts where the previous one ended.
    np.testing.assert_allclose(dataset.obs[1:200], dataset.next_obs[:199], atol=1e-6)
    again = collect_dataset("Pendulum-v1", pd_expert, 400, seed=3, n_envs=2)
    assert_same_state(dataset, again)
    other = collect_dataset("Pendulum-v1", pd_expert, 400, seed=4, n_envs=2)
    assert not np.allclose(dataset.obs, other.obs)


def test_collect_dataset_flags_a_terminal_as_terminated_and_a_time_limit_as_truncated():
    def still(obs):
        return jnp.zeros((obs.shape[0], 1))

    truncating = collect_dataset(EndlessReward(continuous=True, episode_steps=5), still, 20, seed=0)
    terminating = collect_dataset(TerminalTwin(continuous=True, episode_steps=5), still, 20, seed=0)
    every_fifth = np.arange(20) % 5 == 4
    np.testing.assert_array_equal(truncating.truncated, every_fifth)
    assert not np.any(truncating.terminated)
    np.testing.assert_array_equal(terminating.terminated, every_fifth)
    assert not np.any(terminating.truncated)


@dataclass(frozen=True)
class StepCountingExpert(StatefulExpert):
    """Acts a = 0.1 x (its step in the episode): its state must restart with each episode."""

    def init_state(self):
        return jnp.zeros(())

    def __call__(self, obs, state):
        return jnp.full((1,), 0.1 * state), state + 1.0


def test_collect_dataset_restarts_a_stateful_expert_with_each_episode_and_adds_noise_in_agent_units():
    dataset = collect_dataset(
        EndlessReward(continuous=True, episode_steps=3), StepCountingExpert(), 12, seed=0, n_envs=2
    )
    np.testing.assert_allclose(dataset.action[:, 0], np.tile([0.0, 0.1, 0.2], 4), atol=1e-6)
    noisy = collect_dataset("Pendulum-v1", pd_expert, 200, seed=0, noise=0.5)
    residual = np.asarray(noisy.action - jnp.clip(pd_expert(noisy.obs) / 2.0, -1.0, 1.0))
    assert np.all(np.abs(noisy.action) <= 1.0) and 0.2 < residual.std() < 0.6
