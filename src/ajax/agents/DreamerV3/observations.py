"""What DreamerV3's world model reads and reconstructs, as the reference's `Encoder` and
`Decoder` do (danijar/dreamerv3, `rssm.py`).

Vectors go through an MLP in symlog space and come back as symlog predictions. Images go
through a CNN: each stage a 5x5 convolution, a 2x2 max-pool, an RMS norm and SiLU, with
`depth` x (2, 3, 4, 4) channels, read as `pixel - 0.5` with pixels in [0, 1]. The decoder
mirrors it: the latent is projected to the last stage's map (h through a block-diagonal map,
one block per group of channels; z through two linear maps), then each stage doubles the map
(repeating pixels) and convolves, and a sigmoid gives pixels in [0, 1], scored by the squared
error summed over the image. A dict observation takes both: its images, which must share a
resolution, side by side in channels through one CNN, its vectors through one MLP.

The reference always halves the image four times and asserts a final map of 3 to 16 pixels a
side (its images are 64x64 or 96x96). Ajax uses as many of the four stages as the image
halves evenly into such a map, so MinAtar's 10x10 boards take one stage (to 5x5).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from ajax.distributional import symlog
from ajax.networks.encoders import as_read
from ajax.networks.world_model import BlockLinear, NormedMLP, dense, norm_act, trunc_normal_in
from ajax.state import ObservationPart

MULTS = (2, 3, 4, 4)  # each stage's channels, in units of the model size's depth
KERNEL = 5
SPACE_BLOCKS = 8  # the decoder's block-diagonal projection of h (the reference's bspace)
SMALLEST_MAP, LARGEST_MAP = 3, 16


def is_image(part: ObservationPart) -> bool:
    return len(part.shape) == 3


def image_stages(parts: tuple[ObservationPart, ...], agent: str = "DreamerV3") -> int:
    """How many halving stages the CNN takes for these parts' images (0 when there are none).

    The most of the four that halve height and width evenly to a map of 3 to 16 pixels a side;
    refused, naming the shapes, where no number does or the images differ in resolution.
    """
    images = [part for part in parts if is_image(part)]
    if not images:
        return 0
    resolutions = {part.shape[:2] for part in images}
    if len(resolutions) > 1:
        shapes = {part.key: part.shape for part in images}
        raise ValueError(
            f"{agent}'s CNN reads a dict observation's images side by side in channels, so they must share a "
            f"resolution; got {shapes}. Resize them to one (height, width)."
        )
    height, width = resolutions.pop()
    for stages in range(len(MULTS), 0, -1):
        factor = 2**stages
        if height % factor or width % factor:
            continue
        if all(SMALLEST_MAP <= side // factor <= LARGEST_MAP for side in (height, width)):
            return stages
    raise ValueError(
        f"{agent}'s CNN halves an image one to four times to a map of {SMALLEST_MAP} to {LARGEST_MAP} pixels a "
        f"side, but {height}x{width} does not halve evenly into that range. Resize the images (the reference "
        "uses 64x64), e.g. 64x64, 96x96 or 10x10, or use encoder='mlp'."
    )


def _part(read: Any, part: ObservationPart) -> jax.Array:
    """One part of an observation as read: its key's array, or the observation itself when it is one array."""
    return read[part.key] if isinstance(read, Mapping) else read


def _split(obs: Any, parts: tuple[ObservationPart, ...]) -> tuple[list[jax.Array], list[jax.Array]]:
    """The observation's vector parts and image parts, each as read (floats, pixels in [0, 1]), in key order."""
    read = as_read(obs, parts)
    return [_part(read, p) for p in parts if not is_image(p)], [_part(read, p) for p in parts if is_image(p)]


def _lead(x: jax.Array, part: ObservationPart) -> tuple[int, ...]:
    return x.shape[: x.ndim - len(part.shape)]


class ObservationEncoder(nn.Module):
    """The embedding of observations kept as `parts`, after any leading axes."""

    parts: tuple[ObservationPart, ...]
    units: int
    depth: int

    @nn.compact
    def __call__(self, obs: Any) -> jax.Array:
        vectors, images = _split(obs, self.parts)
        vector_parts = [p for p in self.parts if not is_image(p)]
        lead = _lead(vectors[0], vector_parts[0]) if vectors else images[0].shape[:-3]
        outs = []
        if vectors:
            flat = jnp.concatenate([symlog(v.reshape(*lead, -1)) for v in vectors], -1)
            outs.append(NormedMLP(3, self.units)(flat))
        if images:
            x = jnp.concatenate(images, -1) - 0.5
            x = x.reshape(-1, *x.shape[-3:])
            for depth in channels(self.depth, image_stages(self.parts)):
                x = nn.Conv(depth, (KERNEL, KERNEL), kernel_init=trunc_normal_in())(x)
                height, width = x.shape[1] // 2, x.shape[2] // 2
                x = norm_act(x.reshape(-1, height, 2, width, 2, depth).max((2, 4)))
            outs.append(x.reshape(*lead, -1))
        return jnp.concatenate(outs, -1)


def channels(depth: int, stages: int) -> tuple[int, ...]:
    """Each stage's channels: `depth` times the reference's multipliers, for the first `stages`."""
    return tuple(depth * mult for mult in MULTS[:stages])


class ObservationDecoder(nn.Module):
    """Predictions of each part from the features [h, z]: symlog vectors, images in [0, 1].

    Returns one array per part, in the parts' order.
    """

    parts: tuple[ObservationPart, ...]
    units: int
    depth: int
    deter: int

    @nn.compact
    def __call__(self, feat: jax.Array) -> tuple[jax.Array, ...]:
        lead = feat.shape[:-1]
        predictions: dict[str | None, jax.Array] = {}
        vector_parts = [p for p in self.parts if not is_image(p)]
        if vector_parts:
            x = NormedMLP(3, self.units)(feat)
            for part in vector_parts:
                predictions[part.key] = dense(math.prod(part.shape))(x).reshape(*lead, *part.shape)
        image_parts = [p for p in self.parts if is_image(p)]
        if image_parts:
            images = self._images(feat.reshape(-1, feat.shape[-1]), image_parts)
            images = images.reshape(*lead, *images.shape[1:])
            split = [sum(p.shape[-1] for p in image_parts[: i + 1]) for i in range(len(image_parts) - 1)]
            for part, image in zip(image_parts, jnp.split(images, split, -1), strict=True):
                predictions[part.key] = image
        return tuple(predictions[part.key] for part in self.parts)

    def _images(self, feat: jax.Array, image_parts: list[ObservationPart]) -> jax.Array:
        stages = image_stages(self.parts)
        depths = channels(self.depth, stages)
        height, width, _ = image_parts[0].shape
        small = (height // 2**stages, width // 2**stages, depths[-1])
        deter, stoch = feat[:, : self.deter], feat[:, self.deter :]
        # h through one block per group of channels, each block the whole map of its group
        x0 = BlockLinear(math.prod(small), SPACE_BLOCKS)(deter)
        x0 = x0.reshape(-1, SPACE_BLOCKS, small[0], small[1], small[2] // SPACE_BLOCKS)
        x0 = x0.transpose(0, 2, 3, 1, 4).reshape(-1, *small)
        x1 = norm_act(dense(2 * self.units)(stoch))
        x1 = dense(math.prod(small))(x1).reshape(-1, *small)
        x = norm_act(x0 + x1)
        for depth in reversed(depths[:-1]):
            x = nn.Conv(depth, (KERNEL, KERNEL), kernel_init=trunc_normal_in())(_doubled(x))
            x = norm_act(x)
        out_channels = sum(p.shape[-1] for p in image_parts)
        x = nn.Conv(out_channels, (KERNEL, KERNEL), kernel_init=trunc_normal_in())(_doubled(x))
        return jax.nn.sigmoid(x)


def _doubled(x: jax.Array) -> jax.Array:
    """The map twice as high and wide, each pixel repeated (the reference's upsampling)."""
    return x.repeat(2, -3).repeat(2, -2)


def reconstruction_loss(predictions: tuple[jax.Array, ...], obs: Any, parts: tuple[ObservationPart, ...]) -> jax.Array:
    """Each row's squared error summed over every part: vectors against symlog(obs), images
    against their pixels in [0, 1] (the reference's `obs / 255`)."""
    read = as_read(obs, parts)
    total = 0.0
    for part, prediction in zip(parts, predictions, strict=True):
        target = _part(read, part) if is_image(part) else symlog(_part(read, part))
        error = jnp.square(prediction - jax.lax.stop_gradient(target))
        total = total + error.reshape(*error.shape[: error.ndim - len(part.shape)], -1).sum(-1)
    return total
