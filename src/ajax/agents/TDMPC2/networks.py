"""TD-MPC2's networks: an implicit world model of MLPs over a simplex-normalised latent.

Every network is the reference's `mlp` (nicklashansen/tdmpc2, `common/layers.py`): hidden
layers of Linear, LayerNorm and Mish, then a plain linear output, or a normalised one
ending in SimNorm where the output is a latent. Weights start from a normal of std 0.02
(`weight_init`; bias 0); the reward head's and the Q-functions' output kernels
start at zero, so both predict a uniform softmax over the bins, which decodes to 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import flax.linen as nn
import jax
import jax.numpy as jnp

from ajax.networks.encoders import Encoded
from ajax.state import ObservationPart

LAYER_NORM_EPS = 1e-5  # torch's LayerNorm default, the reference's


@dataclass(frozen=True)
class ModelSize:
    """The widths a model size fixes (the reference's `MODEL_SIZE`, in millions of parameters)."""

    enc_dim: int
    mlp_dim: int
    latent_dim: int
    num_enc_layers: int
    num_q: int = 5


SIZES: dict[int, ModelSize] = {
    1: ModelSize(enc_dim=256, mlp_dim=384, latent_dim=128, num_enc_layers=2, num_q=2),
    5: ModelSize(enc_dim=256, mlp_dim=512, latent_dim=512, num_enc_layers=2),
    19: ModelSize(enc_dim=1024, mlp_dim=1024, latent_dim=768, num_enc_layers=3),
    48: ModelSize(enc_dim=1792, mlp_dim=1792, latent_dim=768, num_enc_layers=4),
    317: ModelSize(enc_dim=4096, mlp_dim=4096, latent_dim=1376, num_enc_layers=5, num_q=8),
}


def weight_init(key: jax.Array, shape: tuple[int, ...], dtype: jnp.dtype = jnp.float32) -> jax.Array:
    """N(0, 0.02^2) cut at +-2 in absolute value, as the reference's torch `trunc_normal_(std=0.02)`.

    torch's bounds `a=-2, b=2` are values, not deviations: at std 0.02 they lie 100 deviations
    out, so the draw is a plain normal of std 0.02. flax's `truncated_normal(0.02)` cuts at two
    deviations instead (std 0.0176, nothing beyond 0.04).
    """
    return 0.02 * jax.random.truncated_normal(key, -100.0, 100.0, shape, dtype)


def embedding_init(key: jax.Array, shape: tuple[int, ...], dtype: jnp.dtype = jnp.float32) -> jax.Array:
    """Uniform on [-0.02, 0.02], the reference's task embeddings at the start."""
    return jax.random.uniform(key, shape, dtype, -0.02, 0.02)


def simnorm(x: jax.Array, group: int = 8) -> jax.Array:
    """Simplicial normalisation: a softmax within each consecutive group of `group` units.

    The latent becomes a product of simplices, bounded whatever the dynamics predict, which
    keeps long latent rollouts from drifting (Lavoie et al. 2022; TD-MPC2's section 3).
    """
    grouped = x.reshape(*x.shape[:-1], -1, group)
    return jax.nn.softmax(grouped, axis=-1).reshape(x.shape)


class NormedDense(nn.Module):
    """Linear, optional dropout, LayerNorm, then Mish (or SimNorm for a latent)."""

    features: int
    dropout: float = 0.0
    simnorm_dim: int | None = None  # SimNorm in place of Mish

    @nn.compact
    def __call__(self, x: jax.Array, deterministic: bool = True) -> jax.Array:
        x = nn.Dense(self.features, kernel_init=weight_init)(x)
        if self.dropout:
            x = nn.Dropout(self.dropout, deterministic=deterministic)(x)
        x = nn.LayerNorm(epsilon=LAYER_NORM_EPS)(x)
        return simnorm(x, self.simnorm_dim) if self.simnorm_dim else jax.nn.mish(x)


class MLP(nn.Module):
    """The reference's `mlp`: normalised hidden layers, then a linear or SimNorm output.

    `dropout` applies to the first layer only, as the reference's Q-functions use it.
    """

    hidden: tuple[int, ...]
    out: int
    simnorm_dim: int | None = None  # a latent output: LayerNorm and SimNorm after the last linear
    zero_output: bool = False
    dropout: float = 0.0

    @nn.compact
    def __call__(self, x: jax.Array, deterministic: bool = True) -> jax.Array:
        for i, width in enumerate(self.hidden):
            x = NormedDense(width, dropout=self.dropout if i == 0 else 0.0)(x, deterministic)
        if self.simnorm_dim:
            return NormedDense(self.out, simnorm_dim=self.simnorm_dim)(x)
        kernel_init = nn.initializers.zeros if self.zero_output else weight_init
        return nn.Dense(self.out, kernel_init=kernel_init)(x)


class QEnsemble(nn.Module):
    """`num_q` Q-functions evaluated at once: logits (num_q, ..., num_bins), each its own dropout."""

    num_q: int
    mlp_dim: int
    num_bins: int
    dropout: float

    @nn.compact
    def __call__(self, x: jax.Array, deterministic: bool = True) -> jax.Array:
        ensemble = nn.vmap(
            MLP,
            variable_axes={"params": 0},
            split_rngs={"params": True, "dropout": True},
            in_axes=(None, None),
            axis_size=self.num_q,
        )
        return ensemble((self.mlp_dim, self.mlp_dim), self.num_bins, zero_output=True, dropout=self.dropout, name="Qs")(
            x, deterministic
        )


@dataclass(frozen=True)
class Architecture:
    """Everything that fixes the world model's shapes."""

    size: ModelSize
    observation_dim: int
    action_dim: int
    num_bins: int = 101
    simnorm_dim: int = 8
    dropout: float = 0.01
    episodic: bool = False
    n_tasks: int = 0  # > 0: a learned task embedding of `task_dim` joins every input (multi-task)
    task_dim: int = 0
    image_encoder: nn.Module | None = None  # reads each stored frame before the encoder's layers
    parts: tuple[ObservationPart, ...] | None = None  # how observations are kept, with an image encoder

    def observation_zeros(self) -> jax.Array:
        """One observation as kept: a flat vector, or a frame in its stored dtype."""
        if self.parts is None:
            return jnp.zeros((1, self.observation_dim))
        (part,) = self.parts
        return jnp.zeros((1, *part.shape), part.dtype)


class WorldModel(nn.Module):
    """Encoder, latent dynamics, reward, termination (episodic), policy prior and Q ensemble.

    Each method takes an optional `task` (an integer per row): with a task embedding it is
    looked up, its norm capped at 1 (the reference's `nn.Embedding(max_norm=1)`), and joined
    to the method's input.
    """

    arch: Architecture

    def setup(self) -> None:
        arch, size = self.arch, self.arch.size
        if arch.n_tasks:
            self.task_embedding = nn.Embed(arch.n_tasks, arch.task_dim, embedding_init=embedding_init)
        enc_layers = max(size.num_enc_layers - 1, 1) * (size.enc_dim,)
        layers = MLP(enc_layers, size.latent_dim, simnorm_dim=arch.simnorm_dim)
        # Behind an image encoder both sit under "encoder", which trains at enc_lr_scale times the rate.
        self.encoder = layers if arch.image_encoder is None else Encoded(arch.image_encoder, layers, arch.parts)
        two = (size.mlp_dim, size.mlp_dim)
        self.dynamics = MLP(two, size.latent_dim, simnorm_dim=arch.simnorm_dim)
        self.reward_head = MLP(two, arch.num_bins, zero_output=True)
        if arch.episodic:
            self.termination_head = MLP(two, 1)
        self.policy = MLP(two, 2 * arch.action_dim)
        self.q_ensemble = QEnsemble(size.num_q, size.mlp_dim, arch.num_bins, arch.dropout)

    def with_task(self, x: jax.Array, task: jax.Array | None) -> jax.Array:
        if not self.arch.n_tasks:
            return x
        embedding = self.task_embedding(task)
        norm = jnp.linalg.norm(embedding, axis=-1, keepdims=True)
        embedding = embedding * jnp.minimum(1.0, 1.0 / jnp.maximum(norm, 1e-7))
        embedding = jnp.broadcast_to(embedding, (*x.shape[:-1], embedding.shape[-1]))
        return jnp.concatenate([x, embedding], -1)

    def encode(self, obs: jax.Array, task: jax.Array | None = None) -> jax.Array:
        return self.encoder(self.with_task(obs, task))

    def next(self, z: jax.Array, action: jax.Array, task: jax.Array | None = None) -> jax.Array:
        return self.dynamics(jnp.concatenate([self.with_task(z, task), action], -1))

    def reward(self, z: jax.Array, action: jax.Array, task: jax.Array | None = None) -> jax.Array:
        """Reward logits over the two-hot bins."""
        return self.reward_head(jnp.concatenate([self.with_task(z, task), action], -1))

    def termination(self, z: jax.Array, task: jax.Array | None = None) -> jax.Array:
        """The logit of 'this latent is terminal' (episodic mode only)."""
        return self.termination_head(self.with_task(z, task))[..., 0]

    def pi(self, z: jax.Array, task: jax.Array | None = None) -> jax.Array:
        """The policy prior's raw output: mean and pre-squash log-std, concatenated."""
        return self.policy(self.with_task(z, task))

    def q(self, z: jax.Array, action: jax.Array, task: jax.Array | None = None, deterministic: bool = True):
        """Every Q-function's logits: (num_q, ..., num_bins)."""
        return self.q_ensemble(jnp.concatenate([self.with_task(z, task), action], -1), deterministic)

    def __call__(self, obs: jax.Array, action: jax.Array, task: jax.Array | None = None) -> jax.Array:
        """Touches every network once, for `init`."""
        z = self.encode(obs, task)
        out = [self.next(z, action, task), self.reward(z, action, task), self.pi(z, task), self.q(z, action, task)]
        if self.arch.episodic:
            out.append(self.termination(z, task))
        return out
