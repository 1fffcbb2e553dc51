"""Orthogonal initialisation without LAPACK.

Flax's `orthogonal` draws a Gaussian matrix and takes the Q of its QR decomposition, which
XLA's CPU backend runs as a LAPACK call. Under the seed vmap those calls were seen to
deadlock intermittently on this project's 2-core CPU machines (the program waits forever
with every worker idle), so Ajax orthogonalises with Gram-Schmidt in plain JAX ops instead.
Classical Gram-Schmidt, run twice per column ("twice is enough", Giraud et al. 2005), is
as accurate as Householder QR in float32 for these sizes, and the Q it returns (R with a
positive diagonal) is Haar-distributed, as the sign-corrected QR of Saxe et al. (2014) is.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp


def _orthonormal_columns(matrix: jax.Array) -> jax.Array:
    """The Q factor of a tall matrix's QR decomposition with a positive-diagonal R."""
    rows, cols = matrix.shape

    def column(q: jax.Array, j: jax.Array) -> tuple[jax.Array, None]:
        done = (jnp.arange(cols) < j).astype(matrix.dtype)  # the columns already orthonormal
        v = matrix[:, j]
        for _ in range(2):  # re-orthogonalise once: classical Gram-Schmidt twice
            v = v - q @ (done * (q.T @ v))
        return q.at[:, j].set(v / jnp.linalg.norm(v)), None

    q, _ = jax.lax.scan(column, jnp.zeros_like(matrix), jnp.arange(cols))
    return q


def orthogonal(scale: float = 1.0) -> Callable[..., jax.Array]:
    """A flax kernel initialiser: `scale` times a random (semi-)orthogonal matrix."""

    def init(key: jax.Array, shape: tuple[int, ...], dtype: jnp.dtype = jnp.float32) -> jax.Array:
        n_rows, n_cols = math.prod(shape[:-1]), shape[-1]
        tall = (max(n_rows, n_cols), min(n_rows, n_cols))
        q = _orthonormal_columns(jax.random.normal(key, tall, jnp.float32))
        q = q if n_rows >= n_cols else q.T
        return (scale * q).reshape(shape).astype(dtype)

    return init
