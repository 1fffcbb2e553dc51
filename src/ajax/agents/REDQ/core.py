"""REDQ's maths (Chen et al. 2021, arXiv:2101.05982): what it changes in SAC's target.

Everything else (the soft target's form, the actor's loss, the temperature) is imported
from SAC's core.py.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from ajax.agents.SAC.core import soft_q_target


def random_subset(key: jax.Array, n_critics: int, subset_size: int) -> jax.Array:
    """M distinct indices drawn uniformly from the N critics (Algorithm 1, line 7)."""
    return jax.random.choice(key, n_critics, (subset_size,), replace=False)


def subset_parameters(params: Any, indices: jax.Array) -> Any:
    """The target critics the subset names, as the parameters of an M-member ensemble.

    Gathering parameters and evaluating M critics costs M forward passes instead of N.
    """
    return jax.tree.map(lambda leaf: leaf[indices], params)


def subset_min_target(
    reward: jax.Array,
    terminated: jax.Array,
    subset_next_q: jax.Array,
    next_log_prob: jax.Array,
    alpha: jax.Array,
    gamma: float,
) -> jax.Array:
    """y = r + gamma (1 - terminated) (min_{i in M} Q'_i(s', a') - alpha log pi(a'|s')) (eq. 1 of Alg. 1).

    `subset_next_q` holds the M subset critics' values on axis 0.
    """
    return soft_q_target(reward, terminated, jnp.min(subset_next_q, axis=0), next_log_prob, alpha, gamma)


def ensemble_mean_q(q: jax.Array) -> jax.Array:
    """The actor's critic: the mean over all N critics, (1/N) sum_i Q_i(s, a) (Alg. 1, line 11)."""
    return jnp.mean(q, axis=0)
