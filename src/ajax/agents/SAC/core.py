"""SAC's maths (Haarnoja et al. 2018, arXiv:1801.01290; temperature from arXiv:1812.05905).

Imported by SAC's descendants (ASAC, REDQ, AVG) instead of copied: a fix here reaches
every one of them.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from ajax.networks.actor_critic import SquashedGaussianActor
from ajax.networks.distributions import Squash

__all__ = [
    "Squash",
    "SquashedGaussianActor",
    "polyak",
    "soft_policy_loss",
    "soft_q_target",
    "temperature_loss",
]


def soft_q_target(
    reward: jax.Array,
    terminated: jax.Array,
    next_q: jax.Array,
    next_log_prob: jax.Array,
    alpha: jax.Array,
    gamma: float,
) -> jax.Array:
    """y = r + gamma (1 - terminated) (min_i Q'_i(s', a') - alpha log pi(a'|s')), a' ~ pi(s').

    Eq. 3 and 5 with the clipped double-Q minimum `next_q`. Only a true terminal stops the
    bootstrap: at a time limit s' is the final observation and the target bootstraps.
    """
    return reward + gamma * (1.0 - terminated.astype(jnp.float32)) * (next_q - alpha * next_log_prob)


def soft_policy_loss(alpha: jax.Array, log_prob: jax.Array, q: jax.Array) -> jax.Array:
    """J_pi = E[alpha log pi(a|s) - Q(s, a)], a reparameterised (eq. 12)."""
    return jnp.mean(alpha * log_prob - q)


def temperature_loss(log_alpha: jax.Array, log_prob: jax.Array, target_entropy: float) -> jax.Array:
    """J(alpha) = E[-alpha (log pi(a|s) + H_target)] (arXiv:1812.05905, eq. 18), on log alpha."""
    return -jnp.mean(log_alpha * jax.lax.stop_gradient(log_prob + target_entropy))


def polyak(target: Any, online: Any, tau: float) -> Any:
    """theta' <- tau theta + (1 - tau) theta'."""
    return jax.tree.map(lambda t, o: (1.0 - tau) * t + tau * o, target, online)
