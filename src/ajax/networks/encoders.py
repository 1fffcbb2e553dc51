"""Encoders: what turns an observation as the env gives it (an image, a board) into features.

An agent's networks are an encoder followed by the agent's own layers. `"mlp"`, the default,
is no encoder at all: the observation is one flat vector and the agent's layers read it, as
they always have. The image encoders read (height, width, channels) observations, with any
leading batch or time axes, and end in a flat feature vector:

- `"nature_cnn"`: the Nature-DQN torso (Mnih et al. 2015): convolutions 32x8x8 stride 4,
  64x4x4 stride 2, 64x3x3 stride 1, then 512 units, ReLU throughout. Built for 84x84 frames:
  its first kernel needs 8 pixels a side.
- `"impala"`: the IMPALA ResNet (Espeholt et al. 2018, Fig. 3): three stages of 16, 32, 32
  channels, each a 3x3 convolution, a 3x3 max-pool of stride 2 and two residual blocks,
  then 256 units.
- `"minatar_cnn"`: MinAtar's own network (Young & Tian 2019): one 16x3x3 convolution of
  stride 1 and 128 units. The Nature torso cannot read MinAtar's 10x10 boards.

Any flax module that maps a batch of observations to a batch of feature vectors can be
given instead; it reads the observation in the env's own shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

FLAT = "mlp"


def _over_batch(torso: Callable[[jax.Array], jax.Array], obs: jax.Array) -> jax.Array:
    """`torso` on (..., H, W, C): the leading axes folded into one batch and back."""
    lead = obs.shape[:-3]
    features = torso(obs.reshape(-1, *obs.shape[-3:]))
    return features.reshape(*lead, features.shape[-1])


class NatureCNN(nn.Module):
    """The Nature-DQN convolutional torso and its 512-unit layer."""

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        def torso(x: jax.Array) -> jax.Array:
            for features, kernel, stride in ((32, 8, 4), (64, 4, 2), (64, 3, 1)):
                x = nn.relu(nn.Conv(features, (kernel, kernel), (stride, stride), padding="VALID")(x))
            return nn.relu(nn.Dense(512)(x.reshape(x.shape[0], -1)))

        return _over_batch(torso, obs)


class ResidualBlock(nn.Module):
    """x + conv(relu(conv(relu(x)))), both convolutions 3x3 and as wide as x."""

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        channels = x.shape[-1]
        y = nn.Conv(channels, (3, 3), padding="SAME")(nn.relu(x))
        y = nn.Conv(channels, (3, 3), padding="SAME")(nn.relu(y))
        return x + y


class ImpalaCNN(nn.Module):
    """The IMPALA ResNet: each stage halves the image and widens it, residual blocks keep the gradient short."""

    channels: tuple[int, ...] = (16, 32, 32)
    features: int = 256

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        def torso(x: jax.Array) -> jax.Array:
            for channels in self.channels:
                x = nn.Conv(channels, (3, 3), padding="SAME")(x)
                x = nn.max_pool(x, (3, 3), strides=(2, 2), padding="SAME")
                x = ResidualBlock()(x)
                x = ResidualBlock()(x)
            x = nn.relu(x).reshape(x.shape[0], -1)
            return nn.relu(nn.Dense(self.features)(x))

        return _over_batch(torso, obs)


class MinAtarCNN(nn.Module):
    """MinAtar's network: one small convolution over the board, then 128 units."""

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        def torso(x: jax.Array) -> jax.Array:
            x = nn.relu(nn.Conv(16, (3, 3), padding="VALID")(x))
            return nn.relu(nn.Dense(128)(x.reshape(x.shape[0], -1)))

        return _over_batch(torso, obs)


# The image encoders by name, and the smallest (height, width) each reads.
ENCODERS: dict[str, tuple[type[nn.Module], int]] = {
    "nature_cnn": (NatureCNN, 36),  # 8 / 4 -> 4 / 2 -> 3: (36 - 8) / 4 + 1 = 8, (8 - 4) / 2 + 1 = 3, 3 - 3 + 1 = 1
    "impala": (ImpalaCNN, 1),
    "minatar_cnn": (MinAtarCNN, 3),
}
NAMES = (FLAT, *ENCODERS)


def check_encoder(name: str, value: Any) -> None:
    """An encoder keyword's value: a name of `NAMES` or a flax module."""
    if isinstance(value, nn.Module):
        return
    if not isinstance(value, str) or value not in NAMES:
        raise ValueError(
            f"{name} must be one of {', '.join(map(repr, NAMES))} or a flax module mapping observations to "
            f"features, got {value!r}."
        )


def build_encoder(value: str | nn.Module, observation_shape: tuple[int, ...], agent: str) -> nn.Module | None:
    """The encoder module `value` names, for observations of `observation_shape`; None for `"mlp"`.

    Refuses an image encoder on observations that are not images, or smaller than its
    kernels reach, naming the shape, at construction rather than deep inside tracing.
    """
    if isinstance(value, nn.Module):
        return value
    if value == FLAT:
        return None
    module, smallest = ENCODERS[value]
    if len(observation_shape) != 3:
        raise ValueError(
            f"{agent}'s encoder={value!r} reads images of shape (height, width, channels), but this env's "
            f"observations have shape {observation_shape}. Use encoder='mlp' for vector observations."
        )
    height, width, _ = observation_shape
    if min(height, width) < smallest:
        fits = [name for name, (_, least) in ENCODERS.items() if min(height, width) >= least]
        raise ValueError(
            f"{agent}'s encoder={value!r} needs images of at least {smallest}x{smallest} pixels, but this env's "
            f"observations are {height}x{width}. Choose {' or '.join(map(repr, fits))} for images this small."
        )
    return module()


class Encoded(nn.Module):
    """`head(encoder(obs * scale), *args)`: an agent's network behind an encoder.

    The observation arrives as stored (uint8 for images kept small in replay) and becomes
    float32 here, scaled by `scale` (1/255 for 8-bit pixels), so each network, target
    networks included, reads the same numbers the env meant.
    """

    encoder: nn.Module
    head: nn.Module
    scale: float = 1.0

    @nn.compact
    def __call__(self, obs: jax.Array, *args: Any) -> Any:
        x = jnp.asarray(obs, jnp.float32)
        if self.scale != 1.0:
            x = x * self.scale
        return self.head(self.encoder(x), *args)


def encoded(head: nn.Module, encoder: nn.Module | None, scale: float = 1.0) -> nn.Module:
    """`head` itself without an encoder, else `head` behind it."""
    return head if encoder is None else Encoded(encoder, head, scale)
