"""AVG's maths (Vasan et al. 2024, arXiv:2411.15370): what incremental learning changes in SAC.

The TD error is SAC's soft target (imported from SAC's core.py) minus Q(s, a),
bootstrapped from the online critic (no target network); it is divided by a running scale
of the returns (Schaul et al. 2021), so the step size suits any reward magnitude without
a replay buffer to average over. The actor's loss is SAC's `soft_policy_loss`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ajax.agents.AVG.state import RunningMoments


def td_scale(rewards: RunningMoments, discounts: RunningMoments, squared_returns: RunningMoments) -> jax.Array:
    """sigma = sqrt(Var[R] + Var[gamma_t] E[G^2]) (Schaul et al. 2021, eq. 3), 1 until two samples.

    gamma_t is gamma, or 0 where the episode terminated. The scale the paper divides the
    TD error by, so that delta / sigma has roughly unit size.
    """
    sigma = jnp.sqrt(rewards.var + discounts.var * squared_returns.mean)
    return jnp.where((rewards.count >= 2.0) & (sigma > 1e-8), sigma, 1.0)


def scaled_td_loss(target: jax.Array, q: jax.Array, sigma: jax.Array) -> jax.Array:
    """L = (1/2) E[(delta / sigma)^2], delta = y - Q(s, a): the critic's loss on the scaled TD error."""
    return 0.5 * jnp.mean(jnp.square((target - q) / sigma))
