"""Hyperparameters that may vary with the timestep.

A `Schedule` is either a constant or a function of the environment timestep. Agents read
one with `at(schedule, timestep)`, so a constant costs nothing and a ramp is traced once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp

Schedule = float | Callable[[jax.Array], jax.Array]


def at(schedule: Schedule, timestep: jax.Array) -> jax.Array:
    """The value of `schedule` at `timestep`."""
    if callable(schedule):
        return schedule(timestep)
    return jnp.asarray(schedule, dtype=jnp.float32)


@dataclass(frozen=True)
class linear:  # noqa: N801 - used like a function: linear(start, end, steps)
    """A ramp from `start` to `end` over `steps` timesteps, then constant at `end`.

    A frozen dataclass rather than a closure, so two equal ramps hash alike and an agent
    holding one stays a valid static argument.
    """

    start: float
    end: float
    steps: int

    def __call__(self, timestep: jax.Array) -> jax.Array:
        fraction = jnp.clip(jnp.asarray(timestep, jnp.float32) / max(self.steps, 1), 0.0, 1.0)
        return self.start + fraction * (self.end - self.start)


@dataclass(frozen=True)
class warmup_cosine:  # noqa: N801 - used like a function: warmup_cosine(peak, warmup, total)
    """A linear warm-up from 0 to `peak` over `warmup` steps, then a cosine to `final_fraction * peak`
    at `total` steps, constant after: the learning-rate schedule of Busetto et al. 2024.

    Steps are whatever the caller counts (APG counts updates, as optax's schedules do).
    """

    peak: float
    warmup: int
    total: int
    final_fraction: float = 0.1

    def __call__(self, step: jax.Array) -> jax.Array:
        step = jnp.asarray(step, jnp.float32)
        rising = self.peak * step / max(self.warmup, 1)
        progress = jnp.clip((step - self.warmup) / max(self.total - self.warmup, 1), 0.0, 1.0)
        floor = self.final_fraction * self.peak
        falling = floor + (self.peak - floor) * 0.5 * (1.0 + jnp.cos(jnp.pi * progress))
        return jnp.where(step < self.warmup, rising, falling)


def check_schedule(name: str, schedule: Schedule, *, minimum: float = 0.0) -> None:
    """Reject a constant below `minimum`, NaN, inf or a bool at construction; a callable is checked by its author."""
    if not callable(schedule) and (isinstance(schedule, bool) or not minimum <= schedule < float("inf")):
        raise ValueError(f"{name} must be >= {minimum} and finite, or a function of the timestep, got {schedule!r}.")
