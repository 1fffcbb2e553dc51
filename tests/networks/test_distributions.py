"""Squash: a tanh-squashed distribution's log-density by the change of variables."""

import distrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax.networks.distributions import Squash


def test_squash_log_prob_matches_change_of_variables():
    base = distrax.Normal(jnp.array([0.3, -0.2]), jnp.array([0.5, 1.5]))
    squash = Squash(base)
    x = jnp.array([0.4, -1.0])
    expected = jnp.sum(base.log_prob(x) - jnp.log(1.0 - jnp.tanh(x) ** 2))
    assert float(squash.log_prob(jnp.tanh(x))) == pytest.approx(float(expected), rel=1e-5)
    sample = squash.sample(seed=jax.random.PRNGKey(0), sample_shape=(1000,))
    assert sample.shape == (1000, 2) and float(jnp.max(jnp.abs(sample))) < 1.0
    np.testing.assert_allclose(squash.mode(), jnp.tanh(jnp.array([0.3, -0.2])), rtol=1e-6)
