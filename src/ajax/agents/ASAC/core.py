"""ASAC's maths (Adamczyk et al. 2025, arXiv:2501.09080): what the average-reward criterion changes.

The criterion is the entropy-regularised reward per step,
rho = lim_T (1/T) E[sum_t r_t - alpha log pi(a_t|s_t)], and the critic learns the
differential soft value: Q(s, a) = r - rho + E[V(s')], V(s) = E[Q(s, a) - alpha log pi(a|s)].
SAC's target, actor loss and temperature loss are imported from SAC's core.py.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ajax.agents.SAC.core import soft_q_target


def differential_soft_target(
    reward: jax.Array,
    terminated: jax.Array,
    next_q: jax.Array,
    next_log_prob: jax.Array,
    alpha: jax.Array,
    theta: jax.Array,
) -> jax.Array:
    """y = r - theta + (1 - terminated) (min_i Q'_i(s', a') - alpha log pi(a'|s')), a' ~ pi(s').

    SAC's soft target on the reward minus the reward rate, undiscounted. At a time limit
    s' is the final observation and the target bootstraps; only a true terminal stops it.
    """
    return soft_q_target(reward - theta, terminated, next_q, next_log_prob, alpha, gamma=1.0)


def reward_rate_update(theta: jax.Array, target: jax.Array, q: jax.Array, step_size: float) -> jax.Array:
    """theta <- theta + eta * mean(y - Q(s, a)): the differential TD rule (Wan et al. 2021, eq. 6).

    When y and Q(s, a) come from the same critic, the TD error averages to rho - theta over
    the visited states whatever the critic (E[V(s')] and E[Q(s, a)] cancel), so the rule
    drives theta to the reward rate; `target` already holds the -theta, and the entropy term
    enters through the soft value at s'. The critic's own target comes from the lagging
    target critics; used here, their lag would cancel the error theta needs and stall it,
    which is why the agent hands this rule a target built from the online critics.
    """
    return theta + step_size * jnp.mean(jax.lax.stop_gradient(target - q))
