"""PriorData (ajax.extensions.prior_data): a dataset in the replay before the first step, for the agents that replay.

Its check on a discrete agent's replay (DQN's) reads the DQN run of tests/extensions/test_base.py,
which carries PriorData so as not to compile a DQN program of its own here.
"""

import jax.numpy as jnp
import numpy as np
import pytest

from ajax import DQN, PPO, TD3
from ajax.buffers import Dataset, collect_dataset
from ajax.extensions.prior_data import PriorData

TINY = ("8", "relu")


def damping(obs):
    return jnp.clip(-obs[..., 2:3], -2.0, 2.0)


def test_the_replay_starts_with_the_dataset_then_the_agents_own_steps():
    data = collect_dataset("Pendulum-v1", damping, 500, seed=0)
    agent = TD3(
        "Pendulum-v1",
        learning_starts=100,
        buffer_size=2000,
        batch_size=32,
        actor_architecture=TINY,
        critic_architecture=TINY,
        extensions=(PriorData(data),),
    )
    state, _ = agent.train(seed=[0], n_timesteps=200)
    buffer = state.collector_state.buffer_state
    assert int(np.asarray(buffer.current_index)[0]) == 500 + 200
    for field in ("obs", "action", "reward", "next_obs", "terminated", "truncated"):
        np.testing.assert_array_equal(np.asarray(getattr(buffer.experience, field))[0, 0, :500], getattr(data, field))


def pendulum_dataset(fill: float) -> Dataset:
    """64 Pendulum transitions built by hand: what the refusals read is their shape."""
    obs, zeros = np.full((64, 3), fill, np.float32), np.zeros(64, np.float32)
    return Dataset(obs, zeros[:, None], zeros, obs, zeros.astype(bool), zeros.astype(bool))


def test_prior_data_is_refused_where_it_cannot_go():
    data = pendulum_dataset(0.0)
    with pytest.raises(ValueError, match="does not fit"):
        DQN("CartPole-v1", extensions=(PriorData(data),))
    with pytest.raises(ValueError, match="this agent has none"):
        PPO("Pendulum-v1", n_steps=32, batch_size=32, extensions=(PriorData(data),)).train(seed=0, n_timesteps=0)
    with pytest.raises(ValueError, match="exceed the replay's capacity"):
        TD3("Pendulum-v1", buffer_size=32, batch_size=16, extensions=(PriorData(data),)).train(seed=0, n_timesteps=0)
    with pytest.raises(TypeError, match="needs a dataset"):
        PriorData()
    # Static like every extension, and never mistaken for one holding other data.
    other = pendulum_dataset(1.0)
    assert hash(PriorData(data)) is not None and PriorData(data) != PriorData(other)
