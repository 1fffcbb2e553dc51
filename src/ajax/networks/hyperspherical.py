"""SimbaV2's hyperspherical networks (Lee et al. 2025, arXiv:2502.15280).

Every hidden feature vector and every weight vector lives on the unit sphere. The input gets
a constant feature c_shift before it is normalised, so its norm survives as a direction;
each linear map has no bias and its kernel's columns (one per output unit) are projected back
to unit norm after every gradient step (`project_weights`); a learned per-feature `Scaler`
gives the magnitude that normalisation takes away. A residual block moves along the sphere
by a learned interpolation, h' = l2n(h + alpha (l2n(MLP(h)) - h)), instead of adding.
Without the growth of weight and feature norms that plain MLPs show under non-stationary
targets, the effective learning rate stays put as the critic's targets move, which is what
lets SimbaV2 scale with width and updates per step.

The layout, sizes and initial values are the reference's (dojeon-ai/SimbaV2,
`scale_rl/agents/simbaV2/simbaV2_layer.py` and `simbaV2_network.py`); docs/agents/sac.md (SimbaV2's
networks in SAC) says what of SimbaV2 Ajax builds so far.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp
from flax import traverse_util

from ajax.networks.actor_critic import critic_ensemble
from ajax.networks.distributions import Squash
from ajax.networks.initializers import orthogonal

EXPANSION = 4  # the block MLP's hidden width, in multiples of the block's width
C_SHIFT = 3.0  # the constant feature joined to every input before it is normalised
LOG_STD_RANGE = (-10.0, 2.0)  # the actor's log standard deviation, tanh-rescaled into this range


@dataclass(frozen=True)
class SimbaV2Network:
    """SimbaV2's network as an architecture: `num_blocks` residual blocks of width `hidden_dim`.

    Pass it as `actor_architecture=` or `critic_architecture=` where an agent takes it (SAC
    only, so far). The paper's sizes are `SimbaV2Network(128, 1)` for the actor and
    `SimbaV2Network(512, 2)` for the critic.
    """

    hidden_dim: int
    num_blocks: int

    def __post_init__(self) -> None:
        for name in ("hidden_dim", "num_blocks"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"SimbaV2Network's {name} must be a positive integer, got {value!r}.")

    @property
    def scale(self) -> float:
        """sqrt(2 / d): the Scalers' initial value and their parameters' scale (He's, for the width)."""
        return math.sqrt(2.0 / self.hidden_dim)


def l2_normalize(x: jax.Array, axis: int = -1) -> jax.Array:
    """x / max(||x||, 1e-8) along `axis`: onto the unit sphere, with a zero vector left at zero."""
    return x / jnp.maximum(jnp.linalg.norm(x, axis=axis, keepdims=True), 1e-8)


class HyperDense(nn.Module):
    """W x with no bias, W started orthogonal; `project_weights` keeps each column of W unit norm.

    Orthogonal by Ajax's LAPACK-free initialiser: flax's takes a QR decomposition, a LAPACK call
    that deadlocked a seed-vmapped SimbaV2 run here (`ajax.networks.initializers`)."""

    features: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        kernel = self.param("kernel", orthogonal(1.0), (x.shape[-1], self.features))
        return x @ kernel


class Scaler(nn.Module):
    """s * x per feature, with s = `initial` at the start.

    The parameter is stored at `scale` and multiplied by initial / scale in the forward pass, so
    Adam's step (about the learning rate, whatever the parameter's size) moves s by about
    lr * initial / scale: `scale` sets how fast the scaler learns relative to the weights.
    """

    initial: float
    scale: float

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        stored = self.param("scaler", nn.initializers.constant(self.scale), (x.shape[-1],))
        return stored * (self.initial / self.scale) * x


class HyperEmbedder(nn.Module):
    """l2n(Scaler(W l2n([x; c_shift]))): the input onto the sphere, then to the block width."""

    network: SimbaV2Network

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        shift = jnp.full((*x.shape[:-1], 1), C_SHIFT, x.dtype)
        x = l2_normalize(jnp.concatenate([x, shift], axis=-1))
        scale = self.network.scale
        return l2_normalize(Scaler(scale, scale)(HyperDense(self.network.hidden_dim)(x)))


class HyperLERPBlock(nn.Module):
    """h' = l2n(h + alpha (l2n(W2 relu(Scaler(W1 h))) - h)): a step along the sphere towards the MLP's output.

    alpha is per feature, starting at 1 / (num_blocks + 1) with scale 1 / sqrt(d); the MLP is
    four times as wide as the block and its Scaler starts at sqrt(2 / 4d). The 1e-8 after the
    relu keeps an all-negative pre-activation from giving the zero vector.
    """

    network: SimbaV2Network

    @nn.compact
    def __call__(self, h: jax.Array) -> jax.Array:
        d = self.network.hidden_dim
        inner = self.network.scale / math.sqrt(EXPANSION)
        u = nn.relu(Scaler(inner, inner)(HyperDense(EXPANSION * d)(h))) + 1e-8
        mlp = l2_normalize(HyperDense(d)(u))
        alpha = Scaler(1.0 / (self.network.num_blocks + 1), 1.0 / math.sqrt(d))
        return l2_normalize(h + alpha(mlp - h))


class HypersphericalTrunk(nn.Module):
    """The embedder and `num_blocks` blocks: a unit-norm feature vector of width `hidden_dim`."""

    network: SimbaV2Network

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        h = HyperEmbedder(self.network)(jnp.asarray(x, jnp.float32))
        for _ in range(self.network.num_blocks):
            h = HyperLERPBlock(self.network)(h)
        return h


class HyperHead(nn.Module):
    """W2 Scaler(W1 z) + b: a linear head (no activation between the two maps), its bias outside the projection."""

    outputs: int
    bias_name: str

    @nn.compact
    def __call__(self, z: jax.Array) -> jax.Array:
        hidden = Scaler(1.0, 1.0)(HyperDense(z.shape[-1])(z))
        return HyperDense(self.outputs)(hidden) + self.param(self.bias_name, nn.initializers.zeros, (self.outputs,))


class HypersphericalActor(nn.Module):
    """tanh of a diagonal Gaussian whose mean and log standard deviation are two heads on the trunk.

    log sigma = -10 + 12 (1 + tanh(raw)) / 2: bounded smoothly in [-10, 2], where SAC's actor
    clips to [-20, 2] and passes no gradient beyond.
    """

    network: SimbaV2Network
    action_dim: int

    @nn.compact
    def __call__(self, obs: jax.Array) -> Squash:
        z = HypersphericalTrunk(self.network)(obs)
        mean = HyperHead(self.action_dim, "mean_bias")(z)
        low, high = LOG_STD_RANGE
        log_std = low + (high - low) * 0.5 * (1.0 + jnp.tanh(HyperHead(self.action_dim, "std_bias")(z)))
        return Squash(distrax.Normal(mean, jnp.exp(log_std)))


class HypersphericalCritic(nn.Module):
    """Q(s, a) from the trunk on [obs; action]: one value, or `outputs` logits (a categorical critic's bins)."""

    network: SimbaV2Network
    outputs: int | None = None

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        z = HypersphericalTrunk(self.network)(jnp.concatenate([obs, action], axis=-1))
        out = HyperHead(1 if self.outputs is None else self.outputs, "value_bias")(z)
        return out.squeeze(-1) if self.outputs is None else out


class HypersphericalEnsemble(nn.Module):
    """`n` independent hyperspherical critics as one vmapped network; output axis 0 is the critic."""

    network: SimbaV2Network
    n: int = 2
    outputs: int | None = None

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        return critic_ensemble(HypersphericalCritic, self.n)(self.network, self.outputs)(obs, action)


def project_weights(params: Any) -> Any:
    """Every HyperDense kernel with each output unit's incoming weights scaled to unit norm.

    The norm is taken over the kernel's input axis (-2, so a vmapped ensemble's stacked kernels
    are projected member by member). Scalers and biases are left alone. Parameters with no
    HyperDense come back as they are, with no operation traced, so agents call this after every
    step whatever their networks.
    """
    flat = traverse_util.flatten_dict(params)
    hyper = {path for path in flat if path[-1] == "kernel" and any(str(p).startswith("HyperDense") for p in path)}
    if not hyper:
        return params
    projected = {path: l2_normalize(leaf, axis=-2) if path in hyper else leaf for path, leaf in flat.items()}
    return traverse_util.unflatten_dict(projected)
