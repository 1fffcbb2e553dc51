"""benchmarks/studies/replay_write.py: the four writes put the same rows in the same places."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from tests.benchmark_scripts import load_benchmark

replay_write = load_benchmark("studies/replay_write")


def test_the_scatter_and_the_slice_write_the_same_ring_over_a_wrap():
    n_seeds, ticks = 3, 7  # 7 writes of 4 rows into 8-row rings: the ring wraps three times
    rows = jnp.arange(n_seeds * 4 * 2, dtype=jnp.float32).reshape(n_seeds, 4, 2)
    rings = []
    for write, shared in [
        (replay_write.scatter_write, False),
        (replay_write.scatter_write, True),
        (replay_write.slice_write, True),
        (replay_write.lockstep_write, True),
    ]:
        ring, _ = replay_write.program(write, n_seeds, ticks, shared)(jnp.zeros((n_seeds, 8, 2)), rows)
        rings.append(np.asarray(ring))
    # The last two writes: t = 6 at row 0 (6 x 4 % 8), t = 5 at row 4.
    expected = np.concatenate([np.asarray(rows) + 6, np.asarray(rows) + 5], axis=1)
    for ring in rings:
        np.testing.assert_array_equal(ring, expected)


def test_a_measurement_reports_each_write():
    results = replay_write.measure(n_seeds=2, n_envs=2, n_rows=8, ticks=4, sample=True)
    assert [r["write"] for r in results][0] == "scatter, per-seed index (flashbax's)" and len(results) == 4
    assert all(r["compile_s"] > 0 and r["us_per_write"] > 0 for r in results)


def test_the_sampled_rows_are_drawn_from_each_seeds_own_ring():
    rows = jnp.stack([jnp.full((2, 2), 1.0), jnp.full((2, 2), 10.0)])  # seed 0 writes ones, seed 1 tens
    _, drawn = replay_write.program(replay_write.lockstep_write, 2, 4, True, sample=True)(jnp.zeros((2, 8, 2)), rows)
    # Seed 0's ring holds only smaller values than seed 1's, so its draws add up to less.
    assert 0 < drawn[0] < drawn[1]


def test_a_packed_ring_and_a_ring_per_field_draw_the_same_rows():
    ring = jnp.arange(2 * 16 * sum(replay_write.FIELDS), dtype=jnp.float32).reshape(2, 16, -1)
    packed = replay_write.sample_program(2, 3)((ring,))
    split = replay_write.sample_program(2, 3)(replay_write.split_fields(ring))
    np.testing.assert_allclose(np.asarray(packed), np.asarray(split), rtol=1e-6)
    results = replay_write.measure_samples(n_seeds=2, n_rows=16, ticks=2)
    assert [r["sample"] for r in results] == ["a ring per field (the item replay's)", "one packed ring"]
    assert all(r["us_per_sample"] > 0 for r in results)
