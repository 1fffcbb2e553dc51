"""Exploration as explore(pi, key, step): epsilon-greedy (DQN, PQN) and Gaussian noise (TD3)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax.environments.interaction import epsilon_greedy, gaussian_exploration
from ajax.schedule import linear


def test_epsilon_greedy_and_gaussian_exploration():
    q = jnp.tile(jnp.array([0.0, 1.0, 0.5]), (2000, 1))
    key = jax.random.PRNGKey(0)
    greedy = epsilon_greedy(0.0)(q, key, jnp.asarray(0))
    assert np.all(greedy == 1)
    # Epsilon 1 at step 0, falling to 0 by step 10: uniform at first (each action ~1/3).
    ramp = linear(1.0, 0.0, 10)
    counts = np.bincount(np.asarray(epsilon_greedy(ramp)(q, key, jnp.asarray(0))), minlength=3) / 2000
    np.testing.assert_allclose(counts, [1 / 3] * 3, atol=0.05)
    assert np.all(epsilon_greedy(ramp)(q, key, jnp.asarray(10)) == 1)

    action = jnp.full((5000, 1), 0.9)
    noisy = gaussian_exploration(0.1)(action, key, jnp.asarray(0))
    assert float(jnp.max(noisy)) <= 1.0  # clipped to the agent's box
    assert float(jnp.std(noisy)) == pytest.approx(0.1 * 0.84, abs=0.02)  # clipping trims the upper tail
    np.testing.assert_array_equal(gaussian_exploration(0.0)(action, key, jnp.asarray(0)), action)
