"""TD3's maths (Fujimoto et al. 2018, arXiv:1802.09477): the smoothed, clipped double-Q target."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def smoothed_target_action(target_action: jax.Array, key: jax.Array, noise: float, noise_clip: float) -> jax.Array:
    """a' = clip(pi'(s') + clip(eps, -c, c), -1, 1), eps ~ N(0, sigma^2): target policy smoothing (eq. 14)."""
    eps = jnp.clip(noise * jax.random.normal(key, target_action.shape), -noise_clip, noise_clip)
    return jnp.clip(target_action + eps, -1.0, 1.0)


def clipped_double_q_target(reward: jax.Array, terminated: jax.Array, next_q: jax.Array, gamma: float) -> jax.Array:
    """y = r + gamma (1 - terminated) min_i Q'_i(s', a') (eq. 10 with eq. 14's a').

    `next_q` holds each critic's estimate on axis 0. At a time limit s' is the final
    observation and the target bootstraps; only a true terminal stops it.
    """
    return reward + gamma * (1.0 - terminated.astype(jnp.float32)) * jnp.min(next_q, axis=0)


def deterministic_policy_loss(q: jax.Array) -> jax.Array:
    """J = -E[Q_1(s, pi(s))]: the deterministic policy gradient on the first critic (eq. 6)."""
    return -jnp.mean(q)
