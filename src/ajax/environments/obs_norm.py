"""Agent-side running normalisation of observations and rewards.

The statistics live in the agent state (`CollectorState.normalizer`), not in an env
wrapper: every env copy and the evaluation episodes share one estimate, it is saved with
a checkpoint and resumed with the run, and evaluation reads it without updating it.

- Observations: (o - mean) / sqrt(var + eps), clipped to [-clip, clip], with the mean and
  variance of every observation collected so far (the ones after auto-resets included).
- Rewards: r / sqrt(Var[G] + eps), clipped, where G is each env's running discounted return
  G <- gamma G + r, restarted at every episode end (the VecNormalize scheme: the reward
  scale is the spread of the returns the critic regresses to, and it is not re-centred,
  so the sign of a reward survives).
- Rewards under a `return_bound` B (SimbaV2, Lee et al. 2025, arXiv:2502.15280, section
  4.4): the divisor is max(sqrt(Var[G] + eps), max|G| / B), with max|G| the largest return
  seen so far, so that scaled returns stay within [-B, B], a categorical critic's support.
- Per batch (`NormalizationConfig.per_batch`, SimbaV2's reference): collection only gathers
  the statistics, the replay stores observations and rewards as the env gave them, and the
  agent normalises each replayed batch with the statistics as they stand (`normalize_batch`)
  and each observation it acts on. Normalised when collected instead, the replay mixes
  observations standardised by statistics of long-gone policies with today's, and the first
  steps' rewards, divided by the spread of a handful of returns, sit in it up to a hundred
  times larger than the later ones.

Statistics combine batch by batch with Chan et al.'s parallel update, exact for any batch
size; the count starts at a tiny epsilon so the first batch sets the estimate.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from ajax.state import NormalizationConfig

EPSILON = 1e-8


@struct.dataclass
class RunningStatistics:
    count: jax.Array
    mean: jax.Array
    var: jax.Array


def init_statistics(shape: tuple[int, ...]) -> RunningStatistics:
    return RunningStatistics(
        count=jnp.asarray(1e-4, jnp.float32), mean=jnp.zeros(shape, jnp.float32), var=jnp.ones(shape, jnp.float32)
    )


def update_statistics(stats: RunningStatistics, batch: jax.Array) -> RunningStatistics:
    """Fold a batch (leading axis) into the running mean and variance (Chan et al., 1979)."""
    batch = batch.astype(jnp.float32)
    n = jnp.asarray(batch.shape[0], jnp.float32)
    batch_mean, batch_var = jnp.mean(batch, axis=0), jnp.var(batch, axis=0)
    total = stats.count + n
    delta = batch_mean - stats.mean
    mean = stats.mean + delta * n / total
    m2 = stats.var * stats.count + batch_var * n + delta**2 * stats.count * n / total
    return RunningStatistics(count=total, mean=mean, var=m2 / total)


def standardize(stats: RunningStatistics, x: jax.Array, clip: float) -> jax.Array:
    return jnp.clip((x - stats.mean) / jnp.sqrt(stats.var + EPSILON), -clip, clip)


@struct.dataclass
class Normalizer:
    """The running statistics one seed carries; a field is None when that normalisation is off."""

    observations: RunningStatistics | None
    returns: RunningStatistics | None
    discounted_return: jax.Array | None  # each env's running discounted return
    return_absmax: jax.Array | None = None  # the largest |G| so far, with a return bound only


def init_normalizer(config: NormalizationConfig, observation_shape: tuple[int, ...], n_envs: int) -> Normalizer | None:
    """Statistics per element of an observation of `observation_shape` (per pixel for an image)."""
    if not config.enabled:
        return None
    return Normalizer(
        observations=init_statistics(observation_shape) if config.observations else None,
        returns=init_statistics(()) if config.rewards else None,
        discounted_return=jnp.zeros((n_envs,), jnp.float32) if config.rewards else None,
        return_absmax=jnp.zeros((), jnp.float32) if config.rewards and config.return_bound is not None else None,
    )


def observe_reset(normalizer: Normalizer | None, obs: jax.Array, config: NormalizationConfig):
    """The first observations of a run: they start the statistics, then are normalised by them
    (kept raw `per_batch`)."""
    if normalizer is None or normalizer.observations is None:
        return normalizer, obs
    stats = update_statistics(normalizer.observations, obs)
    if config.per_batch:
        return normalizer.replace(observations=stats), obs
    return normalizer.replace(observations=stats), standardize(stats, obs, config.clip_observations)


def observe_step(
    normalizer: Normalizer | None,
    obs: jax.Array,
    final_obs: jax.Array,
    reward: jax.Array,
    done: jax.Array,
    config: NormalizationConfig,
) -> tuple[Normalizer | None, jax.Array, jax.Array, jax.Array]:
    """Update the statistics with one step of every env copy; the normalised (obs, final_obs, reward),
    or the raw ones `per_batch`."""
    if normalizer is None:
        return normalizer, obs, final_obs, reward
    if normalizer.observations is not None:
        stats = update_statistics(normalizer.observations, obs)
        normalizer = normalizer.replace(observations=stats)
        if not config.per_batch:
            obs = standardize(stats, obs, config.clip_observations)
            final_obs = standardize(stats, final_obs, config.clip_observations)
    if normalizer.returns is not None:
        discounted = config.gamma * normalizer.discounted_return + reward
        normalizer = normalizer.replace(
            returns=update_statistics(normalizer.returns, discounted),
            discounted_return=jnp.where(done, 0.0, discounted),
        )
        if normalizer.return_absmax is not None:
            absmax = jnp.maximum(normalizer.return_absmax, jnp.max(jnp.abs(discounted)))
            normalizer = normalizer.replace(return_absmax=absmax)
        if not config.per_batch:
            reward = jnp.clip(reward / reward_scale(normalizer, config), -config.clip_rewards, config.clip_rewards)
    return normalizer, obs, final_obs, reward


def reward_scale(normalizer: Normalizer | None, config: NormalizationConfig) -> jax.Array:
    """What rewards are divided by now (1 without reward normalisation). A critic of scaled
    returns times this is back in the env's units, for the evaluation's value bias."""
    if normalizer is None or normalizer.returns is None:
        return jnp.ones((), jnp.float32)
    spread = jnp.sqrt(normalizer.returns.var + EPSILON)
    if normalizer.return_absmax is None:
        return spread
    return jnp.maximum(spread, normalizer.return_absmax / config.return_bound)


def normalize_batch(
    normalizer: Normalizer | None, obs: jax.Array, next_obs: jax.Array, reward: jax.Array, config: NormalizationConfig
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """A replayed batch of raw (obs, next_obs, reward) under the statistics as they stand (`per_batch`):
    observations standardised and clipped, rewards divided by `reward_scale` and not clipped."""
    obs, next_obs = (normalize_observation(normalizer, x, config) for x in (obs, next_obs))
    return obs, next_obs, reward / reward_scale(normalizer, config)


def normalize_observation(normalizer: Normalizer | None, obs: jax.Array, config: NormalizationConfig) -> jax.Array:
    """What the agent sees of `obs` under the current statistics, which stay as they are (evaluation)."""
    if normalizer is None or normalizer.observations is None:
        return obs
    return standardize(normalizer.observations, obs, config.clip_observations)


def raw_observation(normalizer: Normalizer | None, obs: jax.Array) -> jax.Array:
    """The env's observation behind a normalised one (exact inside the clip), for an expert that reads raw ones."""
    if normalizer is None or normalizer.observations is None:
        return obs
    return obs * jnp.sqrt(normalizer.observations.var + EPSILON) + normalizer.observations.mean
