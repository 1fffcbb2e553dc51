"""A multilayer perceptron described by alternating width and activation strings."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "relu": nn.relu,
    "tanh": nn.tanh,
    "elu": nn.elu,
    "gelu": nn.gelu,
    "silu": nn.silu,
    "swish": nn.swish,
    "leaky_relu": nn.leaky_relu,
    "sigmoid": nn.sigmoid,
    "identity": lambda x: x,
}


def parse_architecture(architecture: Sequence[str | int]) -> tuple[tuple[int, str], ...]:
    """("64", "tanh", "64", "tanh") -> ((64, "tanh"), (64, "tanh")), rejecting what cannot build."""
    items = [str(a) for a in architecture]
    if len(items) % 2:
        raise ValueError(
            f"An architecture alternates widths and activations, e.g. ('256', 'relu', '256', 'relu'); "
            f"got {tuple(architecture)} with an odd number of entries."
        )
    layers = []
    for width, activation in zip(items[::2], items[1::2], strict=True):
        if not width.isdigit() or int(width) < 1:
            raise ValueError(f"Layer width must be a positive integer string, got {width!r}.")
        if activation not in ACTIVATIONS:
            raise ValueError(f"Unknown activation {activation!r}; choose one of {', '.join(ACTIVATIONS)}.")
        layers.append((int(width), activation))
    return tuple(layers)


def dense(features: int, fan_in: int, kernel_init: Callable, fan_in_uniform: bool) -> nn.Dense:
    """A dense layer from `kernel_init` and zero biases, or started as Torch's default one is.

    Torch's default linear layer, which the DQN paper's code (Torch7) and Stable-Baselines3
    start from, draws weights and biases from U(-1/sqrt(fan_in), 1/sqrt(fan_in)): smaller
    weights than LeCun's normal (variance 1/(3 fan_in) against 1/fan_in), biases not zero.
    """
    if not fan_in_uniform:
        return nn.Dense(features, kernel_init=kernel_init)
    bound = 1.0 / float(np.sqrt(fan_in))
    uniform = nn.initializers.uniform(2.0 * bound)  # U(0, 2 bound), shifted below

    def init(key: jax.Array, shape: tuple[int, ...], dtype: jnp.dtype = jnp.float32) -> jax.Array:
        return uniform(key, shape, dtype) - bound

    return nn.Dense(features, kernel_init=init, bias_init=init)


class MLP(nn.Module):
    """Dense layers; `normalize_features` divides the last layer's output by its L2 norm.

    Unit-norm penultimate features (Bjorck et al. 2022) bound what the head sees, which is
    what keeps AVG's incremental updates stable. `fan_in_uniform` starts every layer as
    Torch's default does (see `dense`) instead of from `kernel_init`.
    """

    architecture: tuple[str, ...]
    kernel_init: Callable = nn.initializers.lecun_normal()
    layer_norm: bool = False
    normalize_features: bool = False
    fan_in_uniform: bool = False

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = jnp.asarray(x, jnp.float32)
        for width, activation in parse_architecture(self.architecture):
            x = dense(width, x.shape[-1], self.kernel_init, self.fan_in_uniform)(x)
            if self.layer_norm:
                x = nn.LayerNorm()(x)
            x = ACTIVATIONS[activation](x)
        if self.normalize_features:
            x = x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), 1e-6)
        return x
