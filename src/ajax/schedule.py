"""Hyperparameters that may vary over a run: `constant`, `linear`, `exponential`, `polynomial`.

A `Schedule` is either a number or a function of a step count. Two counts drive them. A
coefficient (PPO's and APO's `clip_range`, TD3's `exploration_noise`) reads the environment
timestep, with `at(schedule, timestep)`, so a number costs nothing and a ramp is traced
once. A learning rate (`actor_learning_rate`, `critic_learning_rate`) is handed to optax,
which calls it with its optimiser's count of updates: the gradient steps that network has
taken, kept in the optimiser's state and so continued by a resumed run.

Each schedule here is a frozen dataclass rather than a closure, so two equal schedules hash
alike and an agent holding one stays a valid static argument.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from ajax.checks import in_interval

Schedule = float | Callable[[jax.Array], jax.Array]


def at(schedule: Schedule, timestep: jax.Array) -> jax.Array:
    """The value of `schedule` at `timestep`."""
    if callable(schedule):
        return schedule(timestep)
    return jnp.asarray(schedule, dtype=jnp.float32)


@dataclass(frozen=True)
class constant:  # noqa: N801 - used like a function: constant(value)
    """`value` at every step: a number in the form of a schedule, for code that composes schedules."""

    value: float

    def __call__(self, step: jax.Array) -> jax.Array:
        return jnp.full(jnp.shape(step), self.value, jnp.float32)


@dataclass(frozen=True)
class linear:  # noqa: N801 - used like a function: linear(start, end, steps)
    """A ramp from `start` to `end` over `steps` steps, then constant at `end`."""

    start: float
    end: float
    steps: int

    def __call__(self, timestep: jax.Array) -> jax.Array:
        fraction = jnp.clip(jnp.asarray(timestep, jnp.float32) / max(self.steps, 1), 0.0, 1.0)
        return self.start + fraction * (self.end - self.start)


@dataclass(frozen=True)
class exponential:  # noqa: N801 - used like a function: exponential(start, rate, steps)
    """`start * rate ** (step / steps)`: multiplied by `rate` every `steps` steps, smoothly in between.

    A rate below 1 decays towards 0 without reaching it, above 1 grows without bound: for a
    floor or a ceiling, see `polynomial`, which ends at its `end`.
    """

    start: float
    rate: float
    steps: int

    def __call__(self, step: jax.Array) -> jax.Array:
        return self.start * self.rate ** (jnp.asarray(step, jnp.float32) / max(self.steps, 1))


@dataclass(frozen=True)
class polynomial:  # noqa: N801 - used like a function: polynomial(start, end, steps, power)
    """`end + (start - end) * (1 - step / steps) ** power` for `steps` steps, then constant at `end`.

    optax's polynomial schedule: `power` 1 is `linear`; above 1 it leaves `start` fast and
    settles slowly on `end`, below 1 the other way round.
    """

    start: float
    end: float
    steps: int
    power: float = 1.0

    def __call__(self, step: jax.Array) -> jax.Array:
        remaining = 1.0 - jnp.clip(jnp.asarray(step, jnp.float32) / max(self.steps, 1), 0.0, 1.0)
        return self.end + (self.start - self.end) * remaining**self.power


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


# What optax and `at` call a schedule with: a step count, one int32 scalar.
STEP_COUNT = jax.ShapeDtypeStruct((), jnp.int32)


def check_callable(name: str, schedule: Callable[..., Any], counts: str) -> None:
    """Refuse a schedule that cannot be called on one step count, or that returns no real scalar, naming `name`.

    A schedule is first called inside the compiled program (by optax, or by `at`), where a
    wrong signature or a vector of rates fails deep in tracing with an error that names
    neither the schedule nor its keyword. `jax.eval_shape` calls it once here on an abstract
    int32 scalar: it traces without compiling, so construction stays cheap. `counts` says
    what the step counts.
    """
    expected = f"{name} must be a function of {counts}, an int32 scalar, returning a real scalar"
    try:
        value = jax.eval_shape(schedule, STEP_COUNT)
    except Exception as error:  # whatever calling it raised, said against the keyword
        first_line = (str(error).splitlines() or [""])[0].rstrip(".")
        raise ValueError(f"{expected}; {name}(step) raised {type(error).__name__}: {first_line}.") from error
    if not isinstance(value, jax.ShapeDtypeStruct):
        raise ValueError(f"{expected}; {name}(step) returned {value!r}.")
    real = jnp.issubdtype(value.dtype, jnp.floating) or jnp.issubdtype(value.dtype, jnp.integer)
    if value.shape != () or not real:
        raise ValueError(f"{expected}; {name}(step) returned shape {value.shape} and dtype {value.dtype}.")


def check_learning_rate(**rates: Schedule) -> None:
    """Refuse a learning rate that is neither a finite number above 0 nor a schedule of the update count, naming it.

    A schedule's signature and output are checked (`check_callable`); its values are its author's to check.
    """
    for name, rate in rates.items():
        if callable(rate):
            check_callable(name, rate, "the optimiser's step count")
        elif not in_interval("(0, inf)", rate):
            raise ValueError(f"{name} must be a finite number above 0 or a schedule of the update count, got {rate!r}.")


def check_schedule(name: str, schedule: Schedule, *, minimum: float = 0.0) -> None:
    """Reject a constant below `minimum`, NaN, inf or a bool at construction; a callable must take the
    timestep and return a real scalar (`check_callable`), its values are its author's to check."""
    if callable(schedule):
        check_callable(name, schedule, "the environment timestep")
        return
    if isinstance(schedule, bool) or not isinstance(schedule, numbers.Real) or not minimum <= schedule < float("inf"):
        raise ValueError(f"{name} must be >= {minimum} and finite, or a function of the timestep, got {schedule!r}.")
