"""APG's maths: the loss is minus the closed loop's return, differentiated through the simulator.

Brax's APG (Freeman et al. 2021, arXiv:2106.13281) and the model-reference controllers of
Busetto et al. (2024, arXiv:2411.06482) train the same way: roll the policy in a
differentiable env for a horizon and follow the gradient of the return. On a tracking task
(reward = minus the squared matching error) the mean per-step cost is the matching loss
and its square root the M-RMSE the paper reports.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def apg_loss(rewards: jax.Array) -> jax.Array:
    """J = -E[sum_t r_t]: minus the return over the horizon, averaged over the env copies.

    `rewards` is time-major (T, N).
    """
    return -jnp.mean(jnp.sum(rewards, axis=0))


def matching_loss(rewards: jax.Array) -> jax.Array:
    """-E[r_t]: with r = -(y_d - y)^2, the mean squared matching error per step."""
    return -jnp.mean(rewards)


def m_rmse(matching: jax.Array) -> jax.Array:
    """sqrt(matching loss): the matching error's root mean square (0 where rewards were positive)."""
    return jnp.sqrt(jnp.maximum(matching, 0.0))
