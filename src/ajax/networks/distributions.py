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


class PreTanhGaussian:
    """tanh of a diagonal Gaussian, read in the units before the tanh: Brax's NormalTanhDistribution.

    `sample_and_log_prob` returns the raw draw u ~ N(loc, scale) (the env is stepped with
    tanh(u)), and `log_prob(u)` is the density of the squashed action at tanh(u),
    sum_i log N(u_i; loc_i, scale_i) - log(1 - tanh(u_i)^2), with the Jacobian in tanh's
    stable form 2 (log 2 - u - softplus(-2u)). Keeping u rather than the action means
    PPO's ratio never inverts a tanh that saturated near +-1. The entropy is Brax's
    one-sample estimate, the Gaussian's entropy plus that Jacobian at a reparameterised
    draw (with no key, at the mode's pre-image, for logging); `mode` is tanh(loc).
    """

    def __init__(self, loc: jax.Array, scale: jax.Array):
        self.loc, self.scale = loc, scale
        self.gaussian = distrax.Independent(distrax.Normal(loc, scale), reinterpreted_batch_ndims=1)

    @staticmethod
    def log_det_jacobian(raw: jax.Array) -> jax.Array:
        """log |d tanh(u) / du|, summed over the action's dimensions."""
        return jnp.sum(distrax.Tanh().forward_log_det_jacobian(raw), axis=-1)

    def log_prob(self, raw: jax.Array) -> jax.Array:
        return self.gaussian.log_prob(raw) - self.log_det_jacobian(raw)

    def sample_and_log_prob(self, seed: jax.Array) -> tuple[jax.Array, jax.Array]:
        raw = self.loc + self.scale * jax.random.normal(seed, self.loc.shape, self.loc.dtype)
        return raw, self.log_prob(raw)

    def entropy(self, seed: jax.Array | None = None) -> jax.Array:
        raw = self.loc if seed is None else self.loc + self.scale * jax.random.normal(seed, self.loc.shape)
        return self.gaussian.entropy() + self.log_det_jacobian(raw)

    def mode(self) -> jax.Array:
        return jnp.tanh(self.loc)
