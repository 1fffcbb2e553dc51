"""AVG's state (SAC's plus the normalisers' running statistics) and static settings."""

from __future__ import annotations

from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
from flax import struct

from ajax.agents.SAC.state import SoftACState
from ajax.environments.utils import ExpertInAgentUnits


@struct.dataclass
class RunningMoments:
    """Running mean and variance of a stream, merged batch by batch (Chan et al. 1979).

    Starts at mean 0, variance 1 with a vanishing count, so the first batch sets both.
    """

    mean: jax.Array
    var: jax.Array
    count: jax.Array

    @classmethod
    def create(cls, shape: tuple[int, ...] = ()) -> RunningMoments:
        return cls(jnp.zeros(shape), jnp.ones(shape), jnp.asarray(1e-4, jnp.float32))

    def update(self, batch: jax.Array) -> RunningMoments:
        """Merge a batch (samples on axis 0)."""
        batch_mean, batch_var, batch_count = jnp.mean(batch, axis=0), jnp.var(batch, axis=0), batch.shape[0]
        total = self.count + batch_count
        delta = batch_mean - self.mean
        mean = self.mean + delta * batch_count / total
        m2 = self.var * self.count + batch_var * batch_count + jnp.square(delta) * self.count * batch_count / total
        return RunningMoments(mean, m2 / total, total)

    def normalize(self, x: jax.Array) -> jax.Array:
        return (x - self.mean) / jnp.sqrt(self.var + 1e-8)


@struct.dataclass
class AVGState(SoftACState):
    """SAC's state (the fixed temperature in `alpha`) plus the statistics AVG normalises with.

    `returns` is each env's discounted return so far, G_t = r_t + gamma G_{t-1}, restarted
    at every episode start; the TD scale reads the moments of its square.
    """

    obs_moments: RunningMoments = None
    reward_moments: RunningMoments = None
    discount_moments: RunningMoments = None
    return_moments: RunningMoments = None
    returns: jax.Array = None


@dataclass(frozen=True)
class AVGConfig:
    gamma: float
    alpha: float
    expert: ExpertInAgentUnits | None = field(default=None, kw_only=True)  # expert_policy=, evaluated beside
