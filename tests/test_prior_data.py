"""PriorData: a dataset in the replay before the first step, for the agents that replay."""

import jax.numpy as jnp
import numpy as np
import pytest

from ajax import DQN, PPO, TD3
from ajax.buffers import collect_dataset
from ajax.extensions.prior_data import PriorData

TINY = ("8", "relu")


def damping(obs):
    return jnp.clip(-obs[..., 2:3], -2.0, 2.0)


def cartpole_expert(obs):
    return (obs[..., 2] + 0.5 * obs[..., 3] > 0).astype(jnp.int32)


@pytest.mark.parametrize(
    "agent, env_id, expert",
    [
        (
            lambda ext: TD3(
                "Pendulum-v1",
                learning_starts=100,
                buffer_size=2000,
                batch_size=32,
                actor_architecture=TINY,
                critic_architecture=TINY,
                extensions=ext,
            ),
            "Pendulum-v1",
            damping,
        ),
        (
            lambda ext: DQN(
                "CartPole-v1", learning_starts=100, buffer_size=2000, batch_size=32, architecture=TINY, extensions=ext
            ),
            "CartPole-v1",
            cartpole_expert,
        ),
    ],
    ids=["TD3", "DQN"],
)
def test_the_replay_starts_with_the_dataset_then_the_agents_own_steps(agent, env_id, expert):
    data = collect_dataset(env_id, expert, 500, seed=0)
    state, _ = agent((PriorData(data),)).train(seed=[0], n_timesteps=200)
    buffer = state.collector_state.buffer_state
    assert int(np.asarray(buffer.current_index)[0]) == 500 + 200
    for field in ("obs", "action", "reward", "next_obs", "terminated", "truncated"):
        np.testing.assert_array_equal(np.asarray(getattr(buffer.experience, field))[0, 0, :500], getattr(data, field))


def test_prior_data_is_refused_where_it_cannot_go():
    data = collect_dataset("Pendulum-v1", damping, 64, seed=0)
    with pytest.raises(ValueError, match="does not fit"):
        DQN("CartPole-v1", extensions=(PriorData(data),))
    with pytest.raises(ValueError, match="this agent has none"):
        PPO("Pendulum-v1", n_steps=32, batch_size=32, extensions=(PriorData(data),)).train(seed=0, n_timesteps=0)
    with pytest.raises(ValueError, match="exceed the replay's capacity"):
        TD3("Pendulum-v1", buffer_size=32, batch_size=16, extensions=(PriorData(data),)).train(seed=0, n_timesteps=0)
    with pytest.raises(TypeError, match="needs a dataset"):
        PriorData()
    # Static like every extension, and never mistaken for one holding other data.
    other = collect_dataset("Pendulum-v1", damping, 64, seed=1)
    assert hash(PriorData(data)) is not None and PriorData(data) != PriorData(other)
