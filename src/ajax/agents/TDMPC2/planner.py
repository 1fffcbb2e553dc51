"""TD-MPC2's planner: MPPI in the learned latent space (the reference's `_plan` and `_estimate_value`).

For one latent state z: `num_pi_trajs` action sequences come from rolling the policy prior
through the dynamics, the rest are drawn from a Gaussian over sequences of `horizon`
actions. Each sequence is scored by its predicted return, the discounted predicted rewards
plus the discounted value (the mean of two random Q-functions at the policy's action) at
its last latent. The `num_elites` best re-fit the Gaussian, weighted by
exp(temperature (value - best value)), for `iterations` rounds. The executed action is the
first of one elite drawn by those weights, plus the final std's noise when not evaluating;
the Gaussian's mean, shifted by one step, warm-starts the next decision of the episode.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from flax import struct


@dataclass(frozen=True)
class PlannerConfig:
    """The reference's planning defaults: horizon 3, 6 iterations (+2 from 20 action dims), 512 samples."""

    horizon: int = 3
    iterations: int = 6
    num_samples: int = 512
    num_elites: int = 64
    num_pi_trajs: int = 24
    min_std: float = 0.05
    max_std: float = 2.0
    temperature: float = 0.5


@struct.dataclass
class PlanCarry:
    """What collection carries for the planner, per env copy: the last plan's mean and the episode starts."""

    mean: jax.Array  # (n_envs, horizon, action_dim)
    episode_start: jax.Array  # (n_envs,): the next decision begins an episode, so starts from a zero mean


@dataclass(frozen=True)
class LatentModel:
    """The world model as the planner reads it, for one task: batched over the leading axis.

    `reward(z, a)` and `value(z, a, key)` are scalars in env units; `terminal(z)` is the
    probability the latent is terminal (None outside episodic mode).
    """

    next: Callable[[jax.Array, jax.Array], jax.Array]
    reward: Callable[[jax.Array, jax.Array], jax.Array]
    pi: Callable[[jax.Array, jax.Array], jax.Array]  # (z, key) -> a sampled action
    value: Callable[[jax.Array, jax.Array, jax.Array], jax.Array]
    discount: jax.Array | float
    terminal: Callable[[jax.Array], jax.Array] | None = None
    action_mask: jax.Array | None = None  # multi-task: 0 on the padded action dimensions


def estimate_value(model: LatentModel, z: jax.Array, actions: jax.Array, key: jax.Array) -> jax.Array:
    """G = sum_t gamma^t r_t + gamma^H Q(z_H, pi(z_H)) for each sequence: z (N, latent), actions (H, N, A).

    In episodic mode a latent the termination head calls terminal (p > 0.5) stops the sum.
    """
    pi_key, q_key = jax.random.split(key)
    horizon = actions.shape[0]
    ret = jnp.zeros(z.shape[0])
    alive = jnp.ones(z.shape[0])
    discount = jnp.ones(())
    for t in range(horizon):
        ret = ret + discount * alive * model.reward(z, actions[t])
        z = model.next(z, actions[t])
        discount = discount * model.discount
        if model.terminal is not None:
            alive = alive * (model.terminal(z) <= 0.5)
    return ret + discount * alive * model.value(z, model.pi(z, pi_key), q_key)


def policy_sequences(model: LatentModel, z: jax.Array, n: int, horizon: int, key: jax.Array) -> jax.Array:
    """(horizon, n, A): the policy prior's actions along its own latent rollout from z."""
    z = jnp.broadcast_to(z, (n, z.shape[-1]))
    actions = []
    for t, step_key in enumerate(jax.random.split(key, horizon)):
        action = model.pi(z, step_key)
        actions.append(action)
        if t < horizon - 1:
            z = model.next(z, action)
    return jnp.stack(actions)


def refit(
    values: jax.Array, actions: jax.Array, config: PlannerConfig
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Refit the Gaussian to the elites: (mean (H, A), std (H, A), their scores (E,), the elites (H, E, A)).

    score_i = exp(temperature (v_i - max v)) normalised; mean and std are the scores'
    weighted mean and deviation of the elite sequences, the std clamped to [min_std, max_std].
    """
    elite_values, elite_index = jax.lax.top_k(values, config.num_elites)
    elites = actions[:, elite_index]
    score = jnp.exp(config.temperature * (elite_values - jnp.max(elite_values)))
    score = score / jnp.sum(score)
    mean = jnp.sum(score[None, :, None] * elites, 1) / (jnp.sum(score) + 1e-9)
    var = jnp.sum(score[None, :, None] * jnp.square(elites - mean[:, None]), 1) / (jnp.sum(score) + 1e-9)
    std = jnp.clip(jnp.sqrt(var), config.min_std, config.max_std)
    return mean, std, score, elites


def plan(
    model: LatentModel,
    z: jax.Array,
    previous_mean: jax.Array,
    first: jax.Array,
    key: jax.Array,
    config: PlannerConfig,
    evaluating: bool = False,
) -> tuple[jax.Array, jax.Array]:
    """One decision from latent z (latent,): the action (A,) and the mean (H, A) to warm-start the next."""
    horizon, action_dim = previous_mean.shape
    n_pi, n_gauss = config.num_pi_trajs, config.num_samples - config.num_pi_trajs
    pi_key, loop_key, pick_key, noise_key = jax.random.split(key, 4)
    mask = jnp.ones((action_dim,)) if model.action_mask is None else model.action_mask
    pi_actions = policy_sequences(model, z, n_pi, horizon, pi_key) if n_pi else jnp.zeros((horizon, 0, action_dim))
    shifted = jnp.concatenate([previous_mean[1:], jnp.zeros((1, action_dim))])
    mean = jnp.where(first, jnp.zeros_like(shifted), shifted)
    std = jnp.full((horizon, action_dim), config.max_std)
    latents = jnp.broadcast_to(z, (config.num_samples, z.shape[-1]))

    def iteration(carry, key):
        mean, std, _, _ = carry
        sample_key, value_key = jax.random.split(key)
        noise = jax.random.normal(sample_key, (horizon, n_gauss, action_dim))
        sampled = jnp.clip(mean[:, None] + std[:, None] * noise, -1.0, 1.0)
        actions = jnp.concatenate([pi_actions, sampled], 1) * mask
        values = jnp.nan_to_num(estimate_value(model, latents, actions, value_key), nan=0.0)
        mean, std, score, elites = refit(values, actions, config)
        return (mean * mask, std * mask, score, elites), None

    empty = (jnp.zeros((config.num_elites,)), jnp.zeros((horizon, config.num_elites, action_dim)))
    (mean, std, score, elites), _ = jax.lax.scan(
        iteration, (mean, std, *empty), jax.random.split(loop_key, config.iterations)
    )
    chosen = jax.random.categorical(pick_key, jnp.log(score))
    action = elites[0, chosen]
    if not evaluating:
        action = action + std[0] * jax.random.normal(noise_key, (action_dim,))
    return jnp.clip(action, -1.0, 1.0), mean
