"""Squash: a tanh-squashed distribution's log-density by the change of variables."""

import distrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax.networks.distributions import Squash, StateDependentSquash


def test_squash_log_prob_matches_change_of_variables():
    base = distrax.Normal(jnp.array([0.3, -0.2]), jnp.array([0.5, 1.5]))
    squash = Squash(base)
    x = jnp.array([0.4, -1.0])
    expected = jnp.sum(base.log_prob(x) - jnp.log(1.0 - jnp.tanh(x) ** 2))
    assert float(squash.log_prob(jnp.tanh(x))) == pytest.approx(float(expected), rel=1e-5)
    sample = squash.sample(seed=jax.random.PRNGKey(0), sample_shape=(1000,))
    assert sample.shape == (1000, 2) and float(jnp.max(jnp.abs(sample))) < 1.0
    np.testing.assert_allclose(squash.mode(), jnp.tanh(jnp.array([0.3, -0.2])), rtol=1e-6)


def test_gsde_variance_and_exploration_by_hand():
    # Two features (z = 1, 2), one action; sigma = (0.5, 0.25): variance = 1 * 0.25 + 4 * 0.0625 = 0.5.
    mean, features, std = jnp.array([[0.1]]), jnp.array([[1.0, 2.0]]), jnp.array([[0.5], [0.25]])
    pi = StateDependentSquash(mean, features, std)
    x = jnp.array([[0.3]])
    expected = distrax.Normal(0.1, np.sqrt(0.5 + 1e-6)).log_prob(0.3) - jnp.log(1.0 - jnp.tanh(0.3) ** 2)
    assert float(pi.log_prob(jnp.tanh(x))[0]) == pytest.approx(float(expected), rel=1e-5)
    # A held draw E = sigma * noise: noise (1, -2) gives z^T E = 1 * 0.5 - 2 * 0.5 = -0.5.
    noise = jnp.array([[[1.0], [-2.0]]])
    np.testing.assert_allclose(pi.explore(noise), jnp.tanh(jnp.array([[0.1 - 0.5]])), rtol=1e-6)


def test_gsde_draws_have_the_variance_the_log_prob_uses():
    mean, features, std = (
        jnp.zeros((1, 2)),
        jnp.array([[0.5, -1.0, 2.0]]),
        jnp.array([[0.3, 1.0], [0.2, 0.1], [0.4, 0.6]]),
    )
    pi = StateDependentSquash(mean, features, std)
    noise = jax.random.normal(jax.random.PRNGKey(0), (20_000, 3, 2))
    pre_tanh = jnp.arctanh(jnp.clip(pi.explore(noise), -1 + 1e-7, 1 - 1e-7))
    np.testing.assert_allclose(jnp.var(pre_tanh, axis=0), jnp.square(pi.distribution.distribution.scale[0]), rtol=0.05)
