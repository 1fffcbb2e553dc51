"""SimbaV2's maths (Lee et al. 2025, arXiv:2502.15280): what it changes in SAC.

The critic predicts a categorical distribution over fixed atoms z_1..z_K spread evenly on
[-B, B] (101 atoms, B = 5), for returns that the reward scale keeps inside that support
(`ajax.environments.obs_norm`, `return_bound`). Its target is C51's (Bellemare et al. 2017,
arXiv:1707.06887): every atom of the target critic's distribution at (s', a') is moved to
r + gamma (1 - terminated)(z_j - alpha log pi(a'|s')), clipped to the support, and its mass
split between the two atoms around it. Of the two target critics, each sample takes the one
whose expected value is smaller, the categorical form of the clipped double-Q minimum. The
temperature's loss is alpha (H - H_target) on alpha itself, not on log alpha as SAC's.

Shapes: logits and probabilities carry the critic on axis 0 (when there is one) and the atom
on the last axis, with the minibatch's axes between.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def support(n_atoms: int, bound: float) -> jax.Array:
    """The atoms z_1..z_K, evenly spaced from -bound to bound."""
    return jnp.linspace(-bound, bound, n_atoms, dtype=jnp.float32)


def expected_value(logits: jax.Array, atoms: jax.Array) -> jax.Array:
    """Q = sum_i p_i z_i under softmax(logits): (..., K) -> (...)."""
    return jnp.sum(jax.nn.softmax(logits, axis=-1) * atoms, axis=-1)


def smaller_critic(next_logits: jax.Array, atoms: jax.Array) -> jax.Array:
    """Per sample, the probabilities of the critic whose expected value is smallest.

    (N, *batch, K) -> (*batch, K).
    """
    probs = jax.nn.softmax(next_logits, axis=-1)
    chosen = jnp.argmin(jnp.sum(probs * atoms, axis=-1), axis=0)
    return jnp.take_along_axis(probs, chosen[None, ..., None], axis=0)[0]


def shifted_atoms(
    reward: jax.Array,
    terminated: jax.Array,
    atoms: jax.Array,
    entropy_term: jax.Array,
    gamma: float,
) -> jax.Array:
    """z'_j = clip(r + gamma (1 - terminated)(z_j - alpha log pi(a'|s')), -B, B): (*batch) -> (*batch, K).

    Only a true terminal stops the bootstrap; at a time limit s' is the final observation.
    `entropy_term` is alpha log pi(a'|s').
    """
    continues = gamma * (1.0 - terminated.astype(jnp.float32))
    moved = reward[..., None] + continues[..., None] * (atoms - entropy_term[..., None])
    return jnp.clip(moved, atoms[0], atoms[-1])


def categorical_projection(probs: jax.Array, moved: jax.Array, atoms: jax.Array) -> jax.Array:
    """m_i = sum_j p_j max(0, 1 - |z'_j - z_i| / dz): each moved atom's mass split between its two neighbours.

    `probs` and `moved` (*batch, K) -> (*batch, K). A moved atom that lands on an atom gives it
    all its mass; the masses sum to those of `probs`.
    """
    spacing = atoms[1] - atoms[0]
    weights = jnp.maximum(0.0, 1.0 - jnp.abs(moved[..., None, :] - atoms[:, None]) / spacing)  # (*batch, K_i, K_j)
    return jnp.sum(weights * probs[..., None, :], axis=-1)


def categorical_target(
    reward: jax.Array,
    terminated: jax.Array,
    next_logits: jax.Array,
    atoms: jax.Array,
    entropy_term: jax.Array,
    gamma: float,
) -> jax.Array:
    """The distribution every critic is trained towards: the smaller target critic's, shifted and projected."""
    moved = shifted_atoms(reward, terminated, atoms, entropy_term, gamma)
    return jax.lax.stop_gradient(categorical_projection(smaller_critic(next_logits, atoms), moved, atoms))


def categorical_loss(logits: jax.Array, target: jax.Array) -> jax.Array:
    """The cross-entropy -sum_i m_i log p_i, averaged over the minibatch and summed over the critics."""
    cross_entropy = -jnp.sum(target * jax.nn.log_softmax(logits, axis=-1), axis=-1)
    return jnp.sum(jnp.mean(cross_entropy, axis=tuple(range(1, cross_entropy.ndim))))


def temperature_loss(log_alpha: jax.Array, log_prob: jax.Array, target_entropy: float) -> jax.Array:
    """J(alpha) = alpha (H - H_target), with H = -E[log pi(a|s)] held fixed.

    Its gradient in log alpha is alpha (H - H_target), SAC's times alpha: from SimbaV2's start
    at alpha = 0.01 the temperature moves a hundred times slower in log space.
    """
    entropy = -jnp.mean(jax.lax.stop_gradient(log_prob))
    return jnp.exp(log_alpha) * (entropy - target_entropy)
