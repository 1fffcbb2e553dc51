"""TQC's maths (Kuznetsov et al. 2020, arXiv:2005.04269): what it changes in SAC.

Each of N critics predicts M quantiles of the return. The target pools the N x M atoms of
the target critics at (s', a'), sorts them and drops the kN largest (k per critic), which
controls the overestimation by how many are dropped; each critic regresses its quantiles on
the atoms kept with the quantile Huber loss. The actor maximises the mean of every atom.
The soft target's form and the temperature are SAC's (`SAC/core.py`).

Shapes: quantiles carry the critic on axis 0 and the quantile on the last axis, with the
minibatch's axes between.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ajax.agents.SAC.core import soft_q_target


def truncated_atoms(next_quantiles: jax.Array, drop_per_critic: int) -> jax.Array:
    """The N M atoms of every critic at (s', a') pooled and sorted, less the kN largest (eq. 10-11).

    (N, *batch, M) -> (*batch, N (M - k)), ascending.
    """
    n_critics, n_quantiles = next_quantiles.shape[0], next_quantiles.shape[-1]
    pooled = jnp.moveaxis(next_quantiles, 0, -2).reshape(*next_quantiles.shape[1:-1], n_critics * n_quantiles)
    return jnp.sort(pooled, axis=-1)[..., : n_critics * (n_quantiles - drop_per_critic)]


def tqc_target(
    reward: jax.Array,
    terminated: jax.Array,
    atoms: jax.Array,
    next_log_prob: jax.Array,
    alpha: jax.Array,
    gamma: float,
) -> jax.Array:
    """y_i = r + gamma (1 - terminated) (z_(i)(s', a') - alpha log pi(a'|s')) for every kept atom (eq. 12).

    Only a true terminal stops the bootstrap, as in SAC's target.
    """
    expand = lambda x: x[..., None]  # noqa: E731
    return soft_q_target(expand(reward), expand(terminated), atoms, expand(next_log_prob), alpha, gamma)


def quantile_midpoints(n_quantiles: int) -> jax.Array:
    """tau_m = (2m - 1) / 2M, m = 1..M: the fractions each quantile output estimates."""
    return (jnp.arange(n_quantiles, dtype=jnp.float32) + 0.5) / n_quantiles


def quantile_huber_loss(quantiles: jax.Array, target: jax.Array, kappa: float = 1.0) -> jax.Array:
    """The mean over critics, minibatch, quantiles m and target atoms j of
    |tau_m - 1{u < 0}| rho_kappa(u) / kappa, u = y_j - z_m (eq. 13, with kappa = 1 as the paper).

    `quantiles` (N, *batch, M); `target` (*batch, K), held fixed (no gradient through it).
    """
    target = jax.lax.stop_gradient(target)
    u = target[None, ..., None, :] - quantiles[..., :, None]  # (N, *batch, M, K)
    huber = jnp.where(jnp.abs(u) <= kappa, 0.5 * jnp.square(u), kappa * (jnp.abs(u) - 0.5 * kappa))
    tau = quantile_midpoints(quantiles.shape[-1])[:, None]
    return jnp.mean(jnp.abs(tau - (u < 0).astype(jnp.float32)) * huber / kappa)


def mean_atom(quantiles: jax.Array) -> jax.Array:
    """The actor's critic: the mean of every critic's every quantile, (1/NM) sum_n sum_m z_nm(s, a) (eq. 14)."""
    return jnp.mean(quantiles, axis=(0, -1))
