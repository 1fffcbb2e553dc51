"""CrossQ's maths (Bhatt et al. 2024, arXiv:1902.05605): what it changes in SAC.

CrossQ drops SAC's target critics. The critics are batch-renormalised, and each critic step
passes the minibatch's (s, a) and (s', a' ~ pi(s')) through them as ONE batch, so that both
halves are normalised by the same statistics; the second half's values, held out of the
gradient, are the bootstrap of the soft target. The target's form and the temperature are
SAC's (`SAC/core.py`).

Shapes: critic values carry the critic on axis 0 and the joint batch (current half first) on
axis 1.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ajax.agents.SAC.core import soft_q_target


def joint_batch(current: jax.Array, following: jax.Array) -> jax.Array:
    """[s; s'] (or [a; a']): the minibatch's current inputs, then its next ones, on axis 0."""
    return jnp.concatenate([current, following], axis=0)


def joint_target(
    joint_q: jax.Array,
    reward: jax.Array,
    terminated: jax.Array,
    next_log_prob: jax.Array,
    alpha: jax.Array,
    gamma: float,
) -> tuple[jax.Array, jax.Array]:
    """Q_i(s, a) and y = r + gamma (1 - terminated) (min_i Q_i(s', a') - alpha log pi(a'|s')), from one pass.

    `joint_q` (N, 2B) holds every critic's values on the joint batch; the target reads its
    second half and is held fixed (no gradient), the loss regresses the first half on it.
    """
    current, following = jnp.split(joint_q, 2, axis=1)
    target = soft_q_target(reward, terminated, jnp.min(following, axis=0), next_log_prob, alpha, gamma)
    return current, jax.lax.stop_gradient(target)


def actor_passes(n_updates: jax.Array, policy_delay: int) -> jax.Array:
    """The actor steps taken before update `n_updates` (counted from 0): one every `policy_delay`.

    Each network's renormalisation warm-up counts its own training passes, as the reference's
    per-layer counters do: the critics train every update, the actor every `policy_delay`-th.
    """
    return (n_updates + policy_delay - 1) // policy_delay
