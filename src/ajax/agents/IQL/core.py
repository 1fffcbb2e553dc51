"""IQL's maths (Kostrikov, Nair & Levine 2021, arXiv:2110.06169), one function per equation.

Implicit Q-learning never queries Q at an action outside the dataset. V(s) regresses onto
an upper expectile of Q(s, a) over the dataset's actions (eq. 5), approximating a maximum
over in-distribution actions; Q(s, a) regresses onto r + gamma V(s') (eq. 6); the policy is
extracted by advantage-weighted regression (eq. 7). Polyak averaging of the target
critics is SAC's, imported.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ajax.agents.SAC.core import polyak

__all__ = ["awr_policy_loss", "awr_weight", "expectile_loss", "polyak", "q_loss", "value_loss", "value_target"]


def expectile_loss(u: jax.Array, expectile: float) -> jax.Array:
    """L_2^tau(u) = |tau - 1(u < 0)| u^2, elementwise: the asymmetric square of expectile regression (section 4.1)."""
    return jnp.abs(expectile - (u < 0).astype(jnp.float32)) * jnp.square(u)


def value_loss(target_q: jax.Array, v: jax.Array, expectile: float) -> jax.Array:
    """L_V = E[L_2^tau(min_i Q'_i(s, a) - V(s))], (s, a) from the dataset (eq. 5).

    `target_q` holds each target critic's Q'(s, a) on axis 0: the minimum is the clipped
    double-Q the paper's code takes (its Appendix B).
    """
    return jnp.mean(expectile_loss(jnp.min(target_q, axis=0) - v, expectile))


def value_target(reward: jax.Array, terminated: jax.Array, next_v: jax.Array, gamma: float) -> jax.Array:
    """y = r + gamma (1 - terminated) V(s'), the target of L_Q (eq. 6).

    Only a true terminal stops the bootstrap: at a time limit s' is the final observation
    and the target bootstraps from V there.
    """
    return reward + gamma * (1.0 - terminated.astype(jnp.float32)) * next_v


def q_loss(q: jax.Array, target: jax.Array) -> jax.Array:
    """L_Q = sum_i E[(Q_i(s, a) - y)^2] over the critics on axis 0 (eq. 6, as the code sums both)."""
    return jnp.sum(jnp.mean(jnp.square(q - target), axis=-1))


def awr_weight(target_q: jax.Array, v: jax.Array, beta: float, max_weight: float) -> jax.Array:
    """w = min(exp(beta (min_i Q'_i(s, a) - V(s))), max_weight): eq. 7's weight, clipped as the code does."""
    return jnp.minimum(jnp.exp(beta * (jnp.min(target_q, axis=0) - v)), max_weight)


def awr_policy_loss(weight: jax.Array, log_prob: jax.Array) -> jax.Array:
    """L_pi = -E[w log pi(a|s)], (s, a) from the dataset (eq. 7); the weight is a constant."""
    return -jnp.mean(jax.lax.stop_gradient(weight) * log_prob)
