"""The map between the agent's [-1, 1] actions and the env's box."""

import jax.numpy as jnp
import numpy as np

from ajax.environments.utils import agent_action_to_env, env_action_to_agent


def test_action_map_reaches_the_whole_box_and_inverts():
    low, high = jnp.array([-2.0, 0.0]), jnp.array([2.0, 10.0])
    np.testing.assert_allclose(agent_action_to_env(jnp.array([1.0, -1.0]), low, high), [2.0, 0.0])
    np.testing.assert_allclose(agent_action_to_env(jnp.array([5.0, 0.0]), low, high), [2.0, 5.0])  # clipped
    np.testing.assert_allclose(env_action_to_agent(jnp.array([1.0, 7.5]), low, high), [0.5, 0.5])
    np.testing.assert_allclose(env_action_to_agent(jnp.array([4.0, 5.0]), low, high), [2.0, 0.0])  # unclipped
