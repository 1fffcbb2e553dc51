"""Layers the world models share: scaled truncated-normal initialisation, block-diagonal
linear maps and normalised MLPs.

DreamerV3's reference (danijar/dreamerv3, `embodied/jax/nets.py`) builds every network from
a linear map initialised with a truncated normal of variance 1 / fan-in (an output layer
scaled down, or zeroed, by its `outscale`), then an RMS norm and SiLU. The block-diagonal
map is what lets its GRU state grow to thousands of units: each of `blocks` groups of the
state sees only its own group, so the cost falls by the number of blocks.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

Initializer = Callable[[jax.Array, tuple[int, ...], jnp.dtype], jax.Array]

RMS_EPS = 1e-4  # the reference's Norm epsilon


def trunc_normal_in(scale: float = 1.0, fan_in: int | None = None) -> Initializer:
    """A normal truncated to two deviations, rescaled to variance scale^2 / fan-in.

    1.1368 undoes the truncation's shrinkage of the variance (the reference's constant);
    `scale=0` gives the zeroed output layers of the reward and value heads. `fan_in`
    overrides the shape's (a block kernel's fan-in is its whole input, as the reference counts).
    """

    def init(key: jax.Array, shape: tuple[int, ...], dtype: jnp.dtype = jnp.float32) -> jax.Array:
        if scale == 0.0:
            return jnp.zeros(shape, dtype)
        fan = fan_in if fan_in is not None else math.prod(shape[:-1])
        sample = jax.random.truncated_normal(key, -2.0, 2.0, shape, dtype)
        return sample * (1.1368 * scale / math.sqrt(fan))

    return init


def dense(units: int, outscale: float = 1.0, name: str | None = None) -> nn.Dense:
    """A linear map with the reference's initialisation (zero bias)."""
    return nn.Dense(units, kernel_init=trunc_normal_in(outscale), name=name)


class BlockLinear(nn.Module):
    """A block-diagonal linear map: the input's `blocks` groups each map to their own output group."""

    units: int
    blocks: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        size = x.shape[-1]
        shape = (self.blocks, size // self.blocks, self.units // self.blocks)
        kernel = self.param("kernel", trunc_normal_in(fan_in=size), shape)
        grouped = x.reshape(*x.shape[:-1], self.blocks, size // self.blocks)
        y = jnp.einsum("...gi,gio->...go", grouped, kernel).reshape(*x.shape[:-1], self.units)
        return y + self.param("bias", nn.initializers.zeros, (self.units,))


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + epsilon) times a learned scale, over the last axis.

    The values and the parameter ("scale", ones) of Flax's `nn.RMSNorm` at these settings, in
    three fewer equations a call (Flax's also centres a zero mean and broadcasts it): a world
    model normalises after every hidden layer, and the equations traced are what its compile
    costs on an accelerator's host.
    """

    epsilon: float = RMS_EPS

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        scale = self.param("scale", nn.initializers.ones, (x.shape[-1],))
        return x * jax.lax.rsqrt(jnp.mean(jnp.square(x), axis=-1, keepdims=True) + self.epsilon) * scale


def norm_act(x: jax.Array, name: str | None = None) -> jax.Array:
    """RMS norm (with a learned scale) then SiLU: what follows every hidden linear map."""
    return nn.silu(RMSNorm(name=name)(x))


class NormedMLP(nn.Module):
    """`layers` x (linear, RMS norm, SiLU) of `units` each."""

    layers: int
    units: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for i in range(self.layers):
            x = norm_act(dense(self.units, name=f"linear{i}")(x), name=f"norm{i}")
        return x
