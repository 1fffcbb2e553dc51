"""DQN's maths (Mnih et al. 2015, Nature 518): the Q-learning target, its double-Q variant
(van Hasselt et al. 2016, arXiv:1509.06461), the Huber loss and the target network's refresh."""

from __future__ import annotations

from typing import Any

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


def double_q_learning_target(
    reward: jax.Array, terminated: jax.Array, next_q_online: jax.Array, next_q_target: jax.Array, gamma: float
) -> jax.Array:
    """y = r + gamma (1 - terminated) Q_target(s', argmax_a' Q_online(s', a')) (eq. 4).

    The online network picks the action and the target network values it, so the max no
    longer selects and evaluates with the same noise, which is what biases DQN upwards.
    """
    best = jnp.argmax(next_q_online, axis=-1)
    return reward + gamma * (1.0 - terminated.astype(jnp.float32)) * chosen_q(next_q_target, best)


def refresh_crossings(tick: jax.Array, round_ticks: int, every: int) -> jax.Array:
    """How many multiples of `every` the ticks (tick - round_ticks, tick] crossed: the refreshes
    Stable-Baselines3 makes while it collects a round, counting ticks from the run's start."""
    return tick // every - (tick - round_ticks) // every


def refreshed_target(params: Any, target_params: Any, tau: float, n_refreshes: jax.Array) -> Any:
    """The target after `n_refreshes` Polyak steps towards unchanged `params`.

    Each step is target <- tau params + (1 - tau) target, so `n` of them leave (1 - tau)^n of
    the old target: tau = 1 copies the parameters (the paper's periodic copy), and a round
    that crossed several refresh points between updates refreshes as often as it crossed.
    """
    kept = jnp.where(n_refreshes > 0, (1.0 - tau) ** n_refreshes, 1.0)
    return jax.tree.map(lambda p, t: (1.0 - kept) * p + kept * t, params, target_params)


def td_loss(q: jax.Array, action: jax.Array, target: jax.Array) -> jax.Array:
    """Huber loss on Q(s, a) - y: the paper's error clipping to [-1, 1]."""
    return jnp.mean(optax.huber_loss(chosen_q(q, action), target, delta=1.0))
