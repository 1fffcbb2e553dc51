"""`UpdatesOwed`: the updates a run owes once it has collected n env steps, for every agent
that collects experience and then learns from a replay.

    owed(n) = 0                                   before `start`
              burst + floor((n - start) * rate)   from `start` on

counted over the steps of all env copies together, the rate an exact fraction so the count
never drifts over a run however long. A loop settles the count every `train_freq` steps per
env copy. The three uses, each built by its own constructor:

- the replay agents (SAC, TD3, REDQ, ASAC, AVG, DQN), `UpdatesOwed.replay`: the same
  whole number of updates every round, which the loop compiles as a scan of static length;
- DreamerV3, `UpdatesOwed.train_ratio`: one update once the replay holds a batch of
  sequences, then the train ratio's share of each collected row;
- TD-MPC2, `UpdatesOwed.after_seed_steps`: nothing during the seed steps, a burst of one
  update per seed step on reaching them, then one per env step.

The last two owe a number that varies from tick to tick: `between` counts it from the
unbatched timestep, so every seed makes the same updates.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import jax
import jax.numpy as jnp

from ajax.checks import is_count, require_counts


def check_gradient_steps(name: str, value: Any) -> None:
    """Refuse a round's update count that is neither a positive integer nor -1 (one per env step)."""
    if not is_count(value) or not (value >= 1 or value == -1):
        raise ValueError(f"{name} must be a positive integer or -1 (one update per env step collected), got {value!r}.")


@dataclass(frozen=True)
class UpdatesOwed:
    """owed(n) = 0 before `start` steps, then `burst` + floor((n - start) * `rate`), settled
    every `train_freq` steps per env copy (see the module)."""

    start: int = 0
    burst: int = 0
    rate: Fraction = Fraction(1)  # updates per env step collected, over all env copies
    train_freq: int = 1

    @classmethod
    def replay(cls, train_freq: int, gradient_steps: int, n_envs: int) -> UpdatesOwed:
        """Stable-Baselines3's schedule: each round collects `train_freq` steps per env copy,
        then makes `gradient_steps` updates (-1: one per env step the round collected).

        The default, one update per step of one env, is the papers' schedule for SAC, TD3,
        REDQ and ASAC; the RL Zoo's tuned DQN on CartPole collects 256 steps, then makes 128
        updates. A round's `gradient_steps` do not grow with the env copies, so the rate per
        step is read for `n_envs` of them. The agent's own `learning_starts` (which also ends
        its warm-up actions) withholds a round's updates until the round ends at or past it.
        """
        require_counts(train_freq=train_freq)
        check_gradient_steps("gradient_steps", gradient_steps)
        rate = Fraction(1) if gradient_steps == -1 else Fraction(gradient_steps, train_freq * n_envs)
        return cls(rate=rate, train_freq=train_freq)

    @classmethod
    def train_ratio(cls, train_ratio: float, batch_size: int, batch_length: int, n_envs: int) -> UpdatesOwed:
        """DreamerV3's train ratio, replayed rows per collected row: the reference's
        `Ratio(train_ratio / (batch_size * batch_length))`.

        Training starts at the first tick where the replay holds `batch_size * batch_length`
        sequences, as the reference counts its replay's length: each env's ring offers one
        sequence of batch_length + 1 rows per row past its first batch_length. That tick makes
        one update, and from there every `batch_size * batch_length / train_ratio` rows owe
        one more.
        """
        per_row = Fraction(train_ratio).limit_denominator(1_000) / (batch_size * batch_length)
        ticks = batch_length + -(-batch_size * batch_length // n_envs)
        return cls(start=ticks * n_envs, burst=1, rate=per_row)

    @classmethod
    def after_seed_steps(cls, seed_steps: int) -> UpdatesOwed:
        """TD-MPC2's: no update during the `seed_steps` random steps; on reaching them, one per
        seed step at once (the reference's pretraining on the seed data), then one per env step."""
        return cls(start=seed_steps, burst=seed_steps)

    def due(self, steps: jax.Array) -> jax.Array:
        """The updates owed once `steps` env steps are collected, in exact integers: whole
        denominators of steps and the remainder apart, so (n - start) * numerator never overflows."""
        numerator, denominator = self.rate.numerator, self.rate.denominator
        past = jnp.maximum(steps - self.start, 0)
        whole, part = past // denominator, past % denominator
        owed = whole * numerator + part * numerator // denominator
        return jnp.where(steps >= self.start, self.burst + owed, 0)

    def between(self, before: jax.Array, after: jax.Array) -> jax.Array:
        """The updates owed for the steps collected from `before` to `after`."""
        return self.due(after) - self.due(before)

    def per_round(self, n_envs: int) -> int:
        """The updates of each round of `train_freq` steps per env copy, a static count: only a
        schedule owing the same whole number every round has one."""
        owed = self.rate * self.train_freq * n_envs
        if self.start or self.burst or owed.denominator != 1:
            raise ValueError(f"{self} owes no whole, steady number of updates per round of {n_envs} env copies.")
        return int(owed)
