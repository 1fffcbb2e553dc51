"""`UpdatesOwed`: one count of updates owed for the replay agents, DreamerV3 and TD-MPC2."""

from fractions import Fraction

import jax.numpy as jnp
import pytest

from ajax.agents.updates_owed import UpdatesOwed


def owed_at(schedule: UpdatesOwed, steps: list[int]) -> list[int]:
    return [int(schedule.due(jnp.asarray(n))) for n in steps]


@pytest.mark.parametrize(
    ("train_freq", "gradient_steps", "n_envs", "per_round"),
    [(1, 1, 1, 1), (1, 1, 4, 1), (256, 128, 1, 128), (8, 4, 2, 4), (8, -1, 2, 16), (3, -1, 5, 15)],
)
def test_a_replay_round_owes_gradient_steps_or_one_per_step_it_collected(train_freq, gradient_steps, n_envs, per_round):
    schedule = UpdatesOwed.replay(train_freq, gradient_steps, n_envs)
    assert schedule.train_freq == train_freq and schedule.per_round(n_envs) == per_round
    round_steps = train_freq * n_envs  # the count at each round's end is what the static rounds made
    assert owed_at(schedule, [k * round_steps for k in range(5)]) == [k * per_round for k in range(5)]


def test_one_update_per_env_step_whatever_the_env_copies():
    assert UpdatesOwed.replay(4, -1, 1) == UpdatesOwed.replay(4, -1, 8) == UpdatesOwed(train_freq=4)


def test_a_count_that_varies_from_tick_to_tick_has_no_static_round():
    varying = (
        UpdatesOwed.after_seed_steps(100),
        UpdatesOwed.train_ratio(32, 4, 16, 4),
        UpdatesOwed(rate=Fraction(2, 3)),
    )
    for schedule in varying:
        with pytest.raises(ValueError, match="no whole, steady number of updates per round"):
            schedule.per_round(1)


def test_the_seed_steps_owe_a_burst_of_one_per_seed_step_then_one_per_step():
    schedule = UpdatesOwed.after_seed_steps(101)
    assert (schedule.start, schedule.burst, schedule.rate) == (101, 101, 1)
    assert owed_at(schedule, [0, 100, 101, 102, 500]) == [0, 0, 101, 102, 500]


def test_the_count_is_exact_where_the_product_would_overflow():
    schedule = UpdatesOwed(rate=Fraction(999, 1000))
    steps = 2_000_000_000  # (steps * 999) overflows int32; the count does not
    assert int(schedule.due(jnp.asarray(steps, jnp.int32))) == steps * 999 // 1000
