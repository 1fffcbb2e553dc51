"""Policy distributions beyond distrax's own."""

from __future__ import annotations

import distrax
import jax
import jax.numpy as jnp


class Squash(distrax.Transformed):
    """A distribution pushed through tanh: SAC's bounded Gaussian policy.

    `Squash(distrax.Normal(loc, scale))` samples in (-1, 1), the agent's action units.
    distrax's Tanh bijector gives the log-determinant in its stable form
    2 (log 2 - x - softplus(-2x)), so log-probabilities stay finite near the bounds.
    """

    def __init__(self, distribution: distrax.Distribution):
        if len(distribution.event_shape) == 0:  # a per-dimension Normal: one event per action vector
            distribution = distrax.Independent(distribution, reinterpreted_batch_ndims=1)
        super().__init__(distribution, distrax.Block(distrax.Tanh(), ndims=1))

    def mode(self) -> jax.Array:
        return jnp.tanh(self.distribution.mode())

    def entropy(self, seed: jax.Array | None = None) -> jax.Array:
        """A one-sample estimate (-log pi(a)); with no key, the entropy at the mode's pre-image."""
        if seed is None:
            x = self.distribution.mode()
            return self.distribution.entropy() + jnp.sum(2.0 * (jnp.log(2.0) - x - jax.nn.softplus(-2.0 * x)), axis=-1)
        _, log_prob = self.sample_and_log_prob(seed=seed)
        return -log_prob


class StateDependentSquash(Squash):
    """gSDE's policy (Raffin et al. 2022, arXiv:2005.05719): tanh(mu(s) + z(s)^T E).

    Exploration draws the matrix E once, with entries N(0, sigma_jk^2), and holds it for a
    round of collection, so the noise is a smooth function of the state instead of fresh
    every step: consistent pushes that white noise averages away (MountainCar's swing).
    For one state the pre-tanh action is N(mu, sum_j z_j^2 sigma_jk^2) per dimension, the
    Gaussian that `log_prob`, `sample` and the entropy use, so SAC's losses are unchanged.
    """

    def __init__(self, mean: jax.Array, features: jax.Array, std: jax.Array, epsilon: float = 1e-6):
        variance = jnp.square(features) @ jnp.square(std)
        super().__init__(distrax.Normal(mean, jnp.sqrt(variance + epsilon)))
        self.mean, self.features, self.std = mean, features, std

    def explore(self, noise: jax.Array) -> jax.Array:
        """tanh(mu + z^T (sigma * noise)): `noise` (..., features, actions) standard normal draws."""
        return jnp.tanh(self.mean + jnp.einsum("...f,...fa->...a", self.features, self.std * noise))
