"""DQN's maths (Mnih et al. 2015, Nature 518): the Q-learning target and its Huber loss."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

from ajax.networks.actor_critic import chosen_q


def q_learning_target(reward: jax.Array, terminated: jax.Array, next_q_target: jax.Array, gamma: float) -> jax.Array:
    """y = r + gamma (1 - terminated) max_a' Q_target(s', a') (Methods, eq. 2's target).

    At a time limit s' is the final observation and the target bootstraps; only a true
    terminal stops it.
    """
    return reward + gamma * (1.0 - terminated.astype(jnp.float32)) * jnp.max(next_q_target, axis=-1)


def td_loss(q: jax.Array, action: jax.Array, target: jax.Array) -> jax.Array:
    """Huber loss on Q(s, a) - y: the paper's error clipping to [-1, 1]."""
    return jnp.mean(optax.huber_loss(chosen_q(q, action), target, delta=1.0))
