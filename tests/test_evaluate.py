"""The evaluation's discounted returns, which the value bias compares the critic with."""

import jax.numpy as jnp
import numpy as np

from ajax.evaluate import discounted_returns


def test_discounted_returns_restart_at_episode_ends():
    reward = jnp.array([1.0, 1.0, 1.0, 1.0])[:, None]
    done = jnp.array([0, 1, 0, 1], bool)[:, None]
    np.testing.assert_allclose(discounted_returns(reward, done, 0.5)[:, 0], [1.5, 1.0, 1.5, 1.0])
