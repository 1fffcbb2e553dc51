"""Batch renormalisation (Ioffe 2017, arXiv:1702.03275) and the networks CrossQ builds from it.

A network normalised by its minibatch behaves differently in training (batch statistics) and
in acting (running averages). Batch renormalisation corrects the training pass towards the
running averages by two factors held out of the gradient, so the two modes agree once the
averages have settled; until then (`renormalize` false, CrossQ's warm-up) it is plain batch
normalisation. The running averages are flax variables of the `batch_stats` collection,
kept in the same variables dict as the parameters: every reader that applies the network
(acting, evaluation, extensions, checkpoints) applies it in acting mode as any other, and only
a training pass (`train=True`, `mutable=["batch_stats"]`) computes and moves them.
"""

from __future__ import annotations

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp

from ajax.networks.actor_critic import LOG_STD_MAX, LOG_STD_MIN
from ajax.networks.distributions import Squash
from ajax.networks.mlp import ACTIVATIONS, parse_architecture


def renormalized(
    x: jax.Array,
    batch_mean: jax.Array,
    batch_var: jax.Array,
    running_mean: jax.Array,
    running_var: jax.Array,
    epsilon: float,
    r_max: float,
    d_max: float,
    renormalize: jax.Array | bool,
) -> jax.Array:
    """x_hat = (x - mu_B) / sigma_B * r + d, r = clip(sigma_B / sigma, 1/r_max, r_max) and
    d = clip((mu_B - mu) / sigma, -d_max, d_max), both without gradient (Algorithm 1);
    sigma^2 = var + epsilon. Without `renormalize`, r = 1 and d = 0: batch normalisation.
    """
    batch_std = jnp.sqrt(batch_var + epsilon)
    running_std = jnp.sqrt(running_var + epsilon)
    r = jax.lax.stop_gradient(jnp.clip(batch_std / running_std, 1.0 / r_max, r_max))
    d = jax.lax.stop_gradient(jnp.clip((batch_mean - running_mean) / running_std, -d_max, d_max))
    r, d = jnp.where(renormalize, r, 1.0), jnp.where(renormalize, d, 0.0)
    return (x - batch_mean) / batch_std * r + d


class BatchRenorm(nn.Module):
    """Batch renormalisation over every axis but the last, with a learned scale and shift.

    Defaults: CrossQ's reference code (adityab/CrossQ): momentum 0.99, epsilon 1e-3, r_max 3,
    d_max 5. The running mean and variance move by `1 - momentum` towards each training
    batch's; network initialisation leaves them at 0 and 1.
    """

    momentum: float = 0.99
    epsilon: float = 1e-3
    r_max: float = 3.0
    d_max: float = 5.0

    @nn.compact
    def __call__(self, x: jax.Array, train: bool = False, renormalize: jax.Array | bool = False) -> jax.Array:
        features = x.shape[-1]
        mean = self.variable("batch_stats", "mean", lambda: jnp.zeros((features,), jnp.float32))
        var = self.variable("batch_stats", "var", lambda: jnp.ones((features,), jnp.float32))
        scale = self.param("scale", nn.initializers.ones, (features,))
        bias = self.param("bias", nn.initializers.zeros, (features,))
        if not train:
            x_hat = (x - mean.value) / jnp.sqrt(var.value + self.epsilon)
        else:
            axes = tuple(range(x.ndim - 1))
            batch_mean, batch_var = jnp.mean(x, axis=axes), jnp.var(x, axis=axes)
            x_hat = renormalized(
                x, batch_mean, batch_var, mean.value, var.value, self.epsilon, self.r_max, self.d_max, renormalize
            )
            if not self.is_initializing():
                mean.value = self.momentum * mean.value + (1.0 - self.momentum) * batch_mean
                var.value = self.momentum * var.value + (1.0 - self.momentum) * batch_var
        return x_hat * scale + bias


class BatchRenormMLP(nn.Module):
    """CrossQ's hidden layers: batch renormalisation of the input, then after every layer's activation."""

    architecture: tuple[str, ...]
    momentum: float = 0.99

    @nn.compact
    def __call__(self, x: jax.Array, train: bool = False, renormalize: jax.Array | bool = False) -> jax.Array:
        x = BatchRenorm(self.momentum)(jnp.asarray(x, jnp.float32), train, renormalize)
        for width, activation in parse_architecture(self.architecture):
            x = ACTIVATIONS[activation](nn.Dense(width)(x))
            x = BatchRenorm(self.momentum)(x, train, renormalize)
        return x


class BatchRenormActor(nn.Module):
    """SAC's squashed Gaussian policy on `BatchRenormMLP` features."""

    architecture: tuple[str, ...]
    action_dim: int
    momentum: float = 0.99

    @nn.compact
    def __call__(self, obs: jax.Array, train: bool = False, renormalize: jax.Array | bool = False) -> Squash:
        hidden = BatchRenormMLP(self.architecture, self.momentum)(obs, train, renormalize)
        mean = nn.Dense(self.action_dim)(hidden)
        log_std = jnp.clip(nn.Dense(self.action_dim)(hidden), LOG_STD_MIN, LOG_STD_MAX)
        return Squash(distrax.Normal(mean, jnp.exp(log_std)))


class BatchRenormQCritic(nn.Module):
    """Q(s, a) on `BatchRenormMLP` features of the observation and action joined."""

    architecture: tuple[str, ...]
    momentum: float = 0.99

    @nn.compact
    def __call__(
        self, obs: jax.Array, action: jax.Array, train: bool = False, renormalize: jax.Array | bool = False
    ) -> jax.Array:
        joined = jnp.concatenate([obs, action], axis=-1)
        hidden = BatchRenormMLP(self.architecture, self.momentum)(joined, train, renormalize)
        return nn.Dense(1)(hidden).squeeze(-1)


class BatchRenormQEnsemble(nn.Module):
    """`n` `BatchRenormQCritic`s as one vmapped network, each with its own parameters and statistics."""

    architecture: tuple[str, ...]
    n: int = 2
    momentum: float = 0.99

    @nn.compact
    def __call__(
        self, obs: jax.Array, action: jax.Array, train: bool = False, renormalize: jax.Array | bool = False
    ) -> jax.Array:
        ensemble = nn.vmap(
            BatchRenormQCritic,
            variable_axes={"params": 0, "batch_stats": 0},
            split_rngs={"params": True},
            in_axes=None,
            out_axes=0,
            axis_size=self.n,
        )
        return ensemble(self.architecture, self.momentum)(obs, action, train, renormalize)
