"""DAgger's maths (Ross, Gordon & Bagnell 2011, arXiv:1011.0686, Algorithm 3.1).

Iteration i acts with the mixture pi_i = beta_i pi* + (1 - beta_i) pi_hat_i, labels every
state it visits with the expert's action pi*(s), adds those pairs to the aggregate dataset
D and trains pi_hat_{i+1} on all of D by supervised learning. The functions here are that
iteration's parts, free of the loop's plumbing.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax


def mixing_coefficient(iteration: jax.Array, decay: float) -> jax.Array:
    """beta_i = p^(i - 1) for the 1-indexed iteration i (Section 3).

    beta_1 = 1, so the first iteration follows the expert alone; p = 0 gives the paper's
    beta_i = 1{i = 1}, where every later iteration follows the learner alone.
    """
    return jnp.power(jnp.asarray(decay, jnp.float32), jnp.asarray(iteration - 1, jnp.float32))


def expert_acts(key: jax.Array, beta: jax.Array, n_envs: int) -> jax.Array:
    """Which env copies pi_i hands to the expert this step: each alone, with probability beta.

    Drawing per step and per copy makes pi_i the stochastic mixture the paper defines,
    not a choice of whole trajectories.
    """
    return jax.random.uniform(key, (n_envs,)) < beta


def mixture_action(use_expert: jax.Array, expert_action: jax.Array, learner_action: jax.Array) -> jax.Array:
    """pi_i's action: the expert's where `use_expert` (one flag per copy), the learner's elsewhere."""
    flags = use_expert.reshape(use_expert.shape + (1,) * (learner_action.ndim - use_expert.ndim))
    return jnp.where(flags, expert_action, learner_action)


def expert_label(expert_action: jax.Array, continuous: bool) -> jax.Array:
    """The label of a visited state: the expert's action in agent units, whoever acted there.

    A continuous expert's action is clipped to [-1, 1], the action the env executes: the
    tanh learner cannot reach beyond it, and an unreachable target would only push it into
    saturation, where its gradient vanishes. A discrete expert's answer is the index.
    """
    if continuous:
        return jnp.clip(expert_action, -1.0, 1.0)
    return jnp.asarray(expert_action, jnp.int32)


def regression_loss(action: jax.Array, label: jax.Array) -> jax.Array:
    """Mean squared error between the learner's deterministic action and the label (continuous)."""
    return jnp.mean(jnp.square(action - label))


def classification_loss(logits: jax.Array, label: jax.Array) -> jax.Array:
    """Cross-entropy of the learner's softmax against the expert's action (discrete)."""
    return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, label))
