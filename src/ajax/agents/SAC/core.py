"""SAC's maths (Haarnoja et al. 2018, arXiv:1801.01290; temperature from arXiv:1812.05905).

Imported by SAC's descendants (ASAC, REDQ, AVG) instead of copied: a fix here reaches
every one of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from ajax.agents.loop import actor_step, gradient_step
from ajax.extensions import ExtensionStack
from ajax.networks.actor_critic import SquashedGaussianActor
from ajax.networks.distributions import Squash
from ajax.state import BaseAgentState, LoopTrainState

__all__ = [
    "Squash",
    "SquashedGaussianActor",
    "polyak",
    "soft_actor_step",
    "soft_policy_loss",
    "soft_q_target",
    "temperature_loss",
    "temperature_step",
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


def soft_actor_step(
    actor_state: LoopTrainState,
    policy: Callable[[Any], Any],
    q_value: Callable[[jax.Array], jax.Array],
    alpha: jax.Array,
    batch: Any,
    key: jax.Array,
    agent_state: BaseAgentState,
    extensions: ExtensionStack,
) -> tuple[LoopTrainState, jax.Array, jax.Array, jax.Array, dict[str, jax.Array]]:
    """One reparameterised actor step on `soft_policy_loss`, folding the actor_loss phase.

    `policy(params)` is pi(.|s) at the minibatch's observations and `q_value(actions)` the
    critic the descendant's paper trains the actor against there: SAC's and ASAC's min of
    two critics, REDQ's mean over its whole ensemble. Returns the new state, the loss, the
    log-probabilities (for the temperature step), the gradient norm and the extensions'
    metrics.
    """

    def policy_loss(params: Any) -> tuple[jax.Array, jax.Array]:
        action, log_prob = policy(params).sample_and_log_prob(seed=key)
        return soft_policy_loss(alpha, log_prob, q_value(action)), log_prob

    return actor_step(actor_state, policy_loss, batch, agent_state, extensions)


def temperature_step(
    alpha_state: LoopTrainState,
    log_prob: jax.Array,
    target_entropy: float,
    loss: Callable[[jax.Array, jax.Array, float], jax.Array] = temperature_loss,
) -> tuple[LoopTrainState, jax.Array]:
    """One optimiser step of log(alpha) on `loss` (SAC's `temperature_loss`; SimbaV2 has its own)."""
    alpha_state, loss, _, _ = gradient_step(
        alpha_state, lambda params: (loss(params["log_alpha"], log_prob, target_entropy), ())
    )
    return alpha_state, loss
