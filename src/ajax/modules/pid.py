"""PID gains as a layer: u = K_P e + K_I sum(e) + K_D delta(e), with the gains learned.

A controller engineer's first controller is a PID, and a learned controller that ends in
one keeps its structure: a proportional path from the start, integral action to remove a
steady-state error, a derivative to damp. Busetto et al. (2024, arXiv:2411.06482) end their
contextual controller with such a layer on the transformer's output.

The gains start identity-like, K_P = I and K_I = K_D = 0, so at initialisation the layer
passes its input through and the network before it is trained as if there were no PID;
all-ones gains, the other obvious start, sum an unbounded integral into a bounded action
from the first step and saturate it (an earlier re-implementation found the identity-like
start better under bounded actions).
"""

from __future__ import annotations

from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from ajax.environments.pid_terms import advance_terms


def identity_like(key: jax.Array, shape: tuple[int, ...], dtype: jnp.dtype = jnp.float32) -> jax.Array:
    """Ones on the diagonal of an (inputs, outputs) gain matrix, zeros elsewhere."""
    del key
    return jnp.eye(*shape, dtype=dtype)


class PIDGains(nn.Module):
    """u = e K_P + i K_I + d K_D, each gain an (inputs, outputs) matrix: a MIMO PID.

    With as many outputs as inputs and the identity-like start, each output begins as the
    proportional term of its own input.
    """

    features: int

    @nn.compact
    def __call__(self, error: jax.Array, integral: jax.Array, derivative: jax.Array) -> jax.Array:
        shape = (error.shape[-1], self.features)
        k_p = self.param("K_P", identity_like, shape)
        k_i = self.param("K_I", nn.initializers.zeros, shape)
        k_d = self.param("K_D", nn.initializers.zeros, shape)
        return error @ k_p + integral @ k_i + derivative @ k_d


class PIDCarry(NamedTuple):
    """What a PID head keeps between steps, per batch row: the running sum and the last input."""

    integral: jax.Array
    previous: jax.Array


def initial_pid_carry(batch_size: int, size: int) -> PIDCarry:
    return PIDCarry(jnp.zeros((batch_size, size)), jnp.zeros((batch_size, size)))


class PIDHead(nn.Module):
    """The PID layer over a sequence: x (T, B, n) with resets (T, B) -> u (T, B, features).

    The sum runs over the episode so far, the current step included, and restarts at a
    reset; the difference is x_t - x_{t-1} within the episode and zero at its first step (no
    derivative kick from a previous episode's last input). Step-wise acting is the same call
    with T = 1 and the carry it returned.
    """

    features: int

    @nn.compact
    def __call__(self, carry: PIDCarry, x: jax.Array, resets: jax.Array) -> tuple[PIDCarry, jax.Array]:
        def step(carry: PIDCarry, inputs: tuple[jax.Array, jax.Array]):
            x_t, reset = inputs
            integral, derivative = advance_terms(carry.integral, carry.previous, x_t, reset[:, None])
            return PIDCarry(integral, x_t), (integral, derivative)

        carry, (integral, derivative) = jax.lax.scan(step, carry, (x, resets))
        return carry, PIDGains(self.features)(x, integral, derivative)
