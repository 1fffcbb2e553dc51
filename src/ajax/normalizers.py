"""Return normalisation by a running percentile range (DreamerV3, Hafner et al., arXiv:2301.04104v2; TD-MPC2).

DreamerV3 divides its actor's advantages by S = max(1, P95 - P5), where P5 and P95 are
exponential moving averages (rate 0.01) of the 5th and 95th percentiles of the imagined
lambda-returns. Large returns are scaled down to about unit range, small ones (sparse rewards)
are never scaled up, so the fixed entropy bonus keeps its weight in every domain.

How the reference uses it (`imag_loss` in `dreamerv3/agent.py`; its `retnorm` entry in
`dreamerv3/configs.yaml`: impl perc, rate 0.01, limit 1.0, perclo 5, perchi 95, debias False):

    scale = update(scale, returns)                      # first, with this batch's returns
    advantages = (returns - values) / denominator(scale)

The update comes before the division, so a batch is already divided by a range that has seen
it. Only the scale is applied: the offset P5 is not subtracted, since it would cancel in
returns - values. The reference's separate advantage and value normalisers are off (impl none),
and its percentiles are taken over every element of the batch at once (all starts and steps).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class PercentileScale:
    """EMAs of the low and high percentiles of the returns: scalar float32 arrays."""

    low: jax.Array
    high: jax.Array

    @classmethod
    def create(cls) -> PercentileScale:
        """Both at 0, as the reference's `Normalize` starts its `lo` and `hi` (`embodied/jax/utils.py`).

        Without debiasing, the first updates therefore see a range shrunk towards 0, which the
        floor of `denominator` covers: the scale starts at 1.
        """
        return cls(low=jnp.zeros((), jnp.float32), high=jnp.zeros((), jnp.float32))


def update(
    scale: PercentileScale, returns: jax.Array, rate: float = 0.01, low: float = 5.0, high: float = 95.0
) -> PercentileScale:
    """Move each EMA a fraction `rate` towards this batch's percentile (over all of `returns`).

    ema <- (1 - rate) ema + rate percentile(returns, q), with numpy's default linear
    interpolation between order statistics (the reference calls `jnp.percentile`). Not
    debiased: the reference's `Normalize` can divide by 1 - (1 - rate)^n, but the return
    normaliser's config sets `debias: False`. The returns are a constant here.
    """
    returns = jax.lax.stop_gradient(returns.astype(jnp.float32))
    return PercentileScale(
        low=(1.0 - rate) * scale.low + rate * jnp.percentile(returns, low),
        high=(1.0 - rate) * scale.high + rate * jnp.percentile(returns, high),
    )


def denominator(scale: PercentileScale, limit: float = 1.0) -> jax.Array:
    """max(limit, high - low): what the advantages are divided by (the reference's `limit: 1.0`)."""
    return jnp.maximum(limit, scale.high - scale.low)


@struct.dataclass
class RunningScale:
    """TD-MPC2's scale of Q in its policy loss: an EMA of max(1, P95 - P5), a scalar float32 array.

    Unlike DreamerV3's scale, the range is floored at 1 before it is averaged, and the EMA
    starts at 1 (the reference's `RunningScale` in nicklashansen/tdmpc2, `common/scale.py`).
    """

    value: jax.Array

    @classmethod
    def create(cls) -> RunningScale:
        return cls(value=jnp.ones((), jnp.float32))


def update_running(scale: RunningScale, x: jax.Array, tau: float = 0.01) -> RunningScale:
    """value <- value + tau (max(1, P95(x) - P5(x)) - value), percentiles over all of `x`, linearly interpolated."""
    x = jax.lax.stop_gradient(x.astype(jnp.float32))
    spread = jnp.maximum(jnp.percentile(x, 95.0) - jnp.percentile(x, 5.0), 1.0)
    return RunningScale(value=scale.value + tau * (spread - scale.value))
