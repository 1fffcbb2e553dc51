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
