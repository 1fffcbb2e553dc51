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
given instead; it reads the observation in the env's own shape, and is applied once to an
abstract observation at construction to see that it ends in a flat vector.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp

from ajax.state import ACTION_MASK, MASKED, ObservationPart, allowed_actions, unpacked

FLAT = "mlp"


def _over_batch(torso: Callable[[jax.Array], jax.Array], obs: jax.Array) -> jax.Array:
    """`torso` on (..., H, W, C): the leading axes folded into one batch and back."""
    lead = obs.shape[:-3]
    features = torso(obs.reshape(-1, *obs.shape[-3:]))
    return features.reshape(*lead, features.shape[-1])


def normed(x: jax.Array, layer_norm: bool) -> jax.Array:
    """relu(x), after a LayerNorm when `layer_norm` (PQN normalises every layer, its encoder's too)."""
    return nn.relu(nn.LayerNorm()(x) if layer_norm else x)


class NatureCNN(nn.Module):
    """The Nature-DQN convolutional torso and its 512-unit layer."""

    layer_norm: bool = False

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        def torso(x: jax.Array) -> jax.Array:
            for features, kernel, stride in ((32, 8, 4), (64, 4, 2), (64, 3, 1)):
                x = normed(nn.Conv(features, (kernel, kernel), (stride, stride), padding="VALID")(x), self.layer_norm)
            return normed(nn.Dense(512)(x.reshape(x.shape[0], -1)), self.layer_norm)

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
    layer_norm: bool = False

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        def torso(x: jax.Array) -> jax.Array:
            for channels in self.channels:
                x = nn.Conv(channels, (3, 3), padding="SAME")(x)
                x = nn.max_pool(x, (3, 3), strides=(2, 2), padding="SAME")
                x = ResidualBlock()(x)
                x = ResidualBlock()(x)
            x = nn.relu(x).reshape(x.shape[0], -1)
            return normed(nn.Dense(self.features)(x), self.layer_norm)

        return _over_batch(torso, obs)


class MinAtarCNN(nn.Module):
    """MinAtar's network: one small convolution over the board, then 128 units."""

    layer_norm: bool = False

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        def torso(x: jax.Array) -> jax.Array:
            x = normed(nn.Conv(16, (3, 3), padding="VALID")(x), self.layer_norm)
            return normed(nn.Dense(128)(x.reshape(x.shape[0], -1)), self.layer_norm)

        return _over_batch(torso, obs)


# The image encoders by name, and the smallest (height, width) each reads.
ENCODERS: dict[str, tuple[type[nn.Module], int]] = {
    "nature_cnn": (NatureCNN, 36),  # 8 / 4 -> 4 / 2 -> 3: (36 - 8) / 4 + 1 = 8, (8 - 4) / 2 + 1 = 3, 3 - 3 + 1 = 1
    "impala": (ImpalaCNN, 1),
    "minatar_cnn": (MinAtarCNN, 3),
}
NAMES = (FLAT, *ENCODERS)


def check_encoder(name: str, value: Any) -> None:
    """An encoder keyword's value: a name of `NAMES`, a flax module, or a dict of them by observation key."""
    values = value.values() if isinstance(value, Mapping) and value else [value]
    for one in values:
        if isinstance(one, nn.Module) or (isinstance(one, str) and one in NAMES):
            continue
        raise ValueError(
            f"{name} must be one of {', '.join(map(repr, NAMES))}, a flax module mapping observations to features, "
            f"or a dict of those by a dict observation's key; got {value!r}."
        )


def build_encoder(
    value: str | nn.Module | Mapping[str, str | nn.Module],
    parts: tuple[ObservationPart, ...],
    agent: str,
    layer_norm: bool = False,
) -> nn.Module | None:
    """The encoder `value` names for observations kept as `parts`; None where every part is read flat.

    On a dict observation a name applies to each image (3-D) key and the other keys are read
    flat; a dict names each key's encoder ("mlp" and keys left out: read flat). `layer_norm`
    puts a LayerNorm before each of a named encoder's activations (the IMPALA ResNet's last
    layer only: its residual stages are the paper's), for an agent that normalises every layer.
    Refuses what cannot be read (an image encoder on vectors, a frame smaller than its kernels
    reach, a key the observation lacks, a module of the user's that does not end in a flat
    vector), naming the shape, at construction rather than deep inside tracing.
    """
    if isinstance(value, nn.Module):
        return _flat_features(value, parts, agent)
    shapes = {part.key: part.shape for part in parts if part.key != ACTION_MASK}  # a mask is applied, not read
    if None in shapes:
        if isinstance(value, Mapping):
            raise ValueError(
                f"{agent}'s encoder is a dict, which names the encoders of a dict observation's keys, but this env's "
                f"observations are one array of shape {shapes[None]}. Give one encoder, e.g. encoder='impala'."
            )
        return _named(value, shapes[None], agent, layer_norm)
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(shapes))
        if unknown:
            raise ValueError(
                f"{agent}'s encoder names {unknown}, but this env's observations have the keys {sorted(shapes)}."
            )
        chosen = dict(value)
    else:
        chosen = {key: value for key, shape in shapes.items() if len(shape) == 3}
        if not chosen and value != FLAT:
            raise ValueError(
                f"{agent}'s encoder={value!r} reads images, but none of this env's observation keys is an image: "
                f"{shapes}. Use encoder='mlp'."
            )
    by_key = {part.key: dataclasses.replace(part, key=None) for part in parts}  # each key's array on its own
    encoders = tuple(
        (
            key,
            _flat_features(one, (by_key[key],), f"{agent} (key {key!r})")
            if isinstance(one, nn.Module)
            else _named(one, shapes[key], f"{agent} (key {key!r})", layer_norm),
        )
        for key, one in sorted(chosen.items())
    )
    if all(module is None for _, module in encoders):
        return None
    return DictEncoder(tuple((key, shapes[key], dict(encoders).get(key)) for key in sorted(shapes)))


def _named(value: str, shape: tuple[int, ...], agent: str, layer_norm: bool) -> nn.Module | None:
    """The encoder called `value` for observations of `shape`, or the refusal that says why it cannot read them."""
    if value == FLAT:
        return None
    module, smallest = ENCODERS[value]
    if len(shape) != 3:
        raise ValueError(
            f"{agent}'s encoder={value!r} reads images of shape (height, width, channels), but this env's "
            f"observations have shape {shape}. Use encoder='mlp' for vector observations."
        )
    height, width, _ = shape
    if min(height, width) < smallest:
        fits = [name for name, (_, least) in ENCODERS.items() if min(height, width) >= least]
        raise ValueError(
            f"{agent}'s encoder={value!r} needs images of at least {smallest}x{smallest} pixels, but this env's "
            f"observations are {height}x{width}. Choose {' or '.join(map(repr, fits))} for images this small."
        )
    return module(layer_norm=layer_norm)


def _flat_features(module: nn.Module, parts: tuple[ObservationPart, ...], agent: str) -> nn.Module:
    """`module`, once it has turned a batch of one observation kept as `parts` into one flat float vector.

    A module of the user's is first called inside tracing, where features that keep their
    image axes meet the agent's layers and fail far from the encoder ("cond branches must
    have equal output types"). `jax.eval_shape` initialises it here on abstract values of one
    stored observation, read as the networks read it (`as_read`): it traces without
    compiling, so construction stays cheap, and the refusal names encoder= and the shapes.
    """
    stored = unpacked({part.key: jax.ShapeDtypeStruct((1, *part.shape), part.dtype) for part in parts})
    shape = unpacked({part.key: part.shape for part in parts})
    named = f"{agent}'s encoder={type(module).__name__}"

    def features(obs: Any) -> Any:
        return module.init_with_output(jax.random.PRNGKey(0), as_read(obs, parts))[0]

    try:
        out = jax.eval_shape(features, stored)
    except Exception as error:  # whatever applying it raised, said against the keyword
        first_line = (str(error).splitlines() or [""])[0].rstrip(".")
        raise ValueError(
            f"{named} fails on a batch holding one observation of shape {shape}: {type(error).__name__}: {first_line}."
        ) from error
    if not isinstance(out, jax.ShapeDtypeStruct) or out.ndim < 2 or out.shape[0] != 1:
        got = f"features of shape {out.shape}" if isinstance(out, jax.ShapeDtypeStruct) else repr(out)
        raise ValueError(
            f"{named} returns {got} for a batch holding one observation of shape {shape}: an encoder must keep the "
            "observation's leading axes (seeds, env copies, time) and end in one flat vector per observation."
        )
    each = out.shape[1:]
    if len(each) != 1:
        raise ValueError(
            f"{named} returns features of shape {each} for an observation of shape {shape}: an encoder must end in "
            f"a flat vector per observation; flatten its output (e.g. x.reshape(x.shape[:-{len(each)}] + (-1,)))."
        )
    if not jnp.issubdtype(out.dtype, jnp.floating):
        raise ValueError(
            f"{named} returns features of dtype {out.dtype}: the agent's layers read floats; return a float vector."
        )
    return module


class DictEncoder(nn.Module):
    """Each key of a dict observation through its own encoder (None: read flat), the features joined in key order.

    `encoders` holds each key, the shape of one of its observations and its encoder.
    """

    encoders: tuple[tuple[str, tuple[int, ...], nn.Module | None], ...]

    @nn.compact
    def __call__(self, obs: Mapping[str, jax.Array]) -> jax.Array:
        features = []
        for key, shape, encoder in self.encoders:
            x = obs[key]
            if encoder is None:  # its values, after the leading axes
                features.append(x.reshape(*x.shape[: x.ndim - len(shape)], -1))
            else:
                features.append(encoder(x))
        return jnp.concatenate(features, axis=-1)


class Encoded(nn.Module):
    """`head(encoder(observation as floats), *args)`: an agent's network behind an encoder.

    The observation arrives as stored (uint8 for images kept small in replay) and becomes
    float32 here, each part times its scale (1/255 for 8-bit pixels), so each network, target
    networks included, reads the numbers the env meant.
    """

    encoder: nn.Module
    head: nn.Module
    parts: tuple[ObservationPart, ...]

    @nn.compact
    def __call__(self, obs: Any, *args: Any) -> Any:
        return self.head(self.encoder(as_read(obs, self.parts)), *args)


def as_read(obs: Any, parts: tuple[ObservationPart, ...]) -> Any:
    """An observation as stored, in float32 with each part times its scale: what an encoder reads."""

    def floats(x: jax.Array, part: ObservationPart) -> jax.Array:
        x = jnp.asarray(x, jnp.float32)
        return x * part.scale if part.scale != 1.0 else x

    if isinstance(obs, Mapping):
        return {part.key: floats(obs[part.key], part) for part in parts}
    return floats(obs, parts[0])


def flat_keys(parts: tuple[ObservationPart, ...]) -> DictEncoder:
    """The encoder that reads every key of a dict observation flat, as the default's one vector does."""
    return DictEncoder(tuple((part.key, part.shape, None) for part in parts if part.key != ACTION_MASK))


class ActionMasked(nn.Module):
    """`head`'s logits or Q-values with the actions the observation's mask forbids at `MASKED`.

    Acting, exploring, bootstrapping (a target maximises over the allowed actions of the next
    observation) and evaluating all read the network, so none of them can pick a forbidden action.
    An observation whose mask allows no action is read unmasked (`allowed_actions`).
    """

    head: nn.Module

    @nn.compact
    def __call__(self, obs: Mapping[str, jax.Array], *args: Any) -> Any:
        out = self.head(obs, *args)
        mask = allowed_actions(obs[ACTION_MASK])
        if isinstance(out, distrax.Categorical):
            return distrax.Categorical(logits=jnp.where(mask, out.logits, MASKED))
        return jnp.where(mask, out, MASKED)


def encoded(
    head: nn.Module, encoder: nn.Module | None, parts: tuple[ObservationPart, ...] | None, masked: bool = False
) -> nn.Module:
    """`head` itself without an encoder, else `head` behind it; `masked` (a policy's or a Q-function's
    head on observations with an action mask) also applies the mask to its outputs."""
    network = head if encoder is None else Encoded(encoder, head, parts)
    return ActionMasked(network) if masked else network
