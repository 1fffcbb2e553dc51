"""A multilayer perceptron described by alternating width and activation strings."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

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


class MLP(nn.Module):
    """Dense layers; `normalize_features` divides the last layer's output by its L2 norm.

    Unit-norm penultimate features (Bjorck et al. 2022) bound what the head sees, which is
    what keeps AVG's incremental updates stable.
    """

    architecture: tuple[str, ...]
    kernel_init: Callable = nn.initializers.lecun_normal()
    layer_norm: bool = False
    normalize_features: bool = False

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = jnp.asarray(x, jnp.float32)
        for width, activation in parse_architecture(self.architecture):
            x = nn.Dense(width, kernel_init=self.kernel_init)(x)
            if self.layer_norm:
                x = nn.LayerNorm()(x)
            x = ACTIVATIONS[activation](x)
        if self.normalize_features:
            x = x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), 1e-6)
        return x
