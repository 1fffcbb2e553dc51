"""benchmarks/studies/replay_write.py: the three writes put the same rows in the same places."""

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
    ]:
        rings.append(np.asarray(replay_write.program(write, n_seeds, ticks, shared)(jnp.zeros((n_seeds, 8, 2)), rows)))
    # The last two writes: t = 6 at row 0 (6 x 4 % 8), t = 5 at row 4.
    expected = np.concatenate([np.asarray(rows) + 6, np.asarray(rows) + 5], axis=1)
    for ring in rings:
        np.testing.assert_array_equal(ring, expected)


def test_a_measurement_reports_each_write():
    results = replay_write.measure(n_seeds=2, n_envs=2, n_rows=8, ticks=4)
    assert [r["write"] for r in results][0] == "scatter, per-seed index (flashbax's)" and len(results) == 3
    assert all(r["compile_s"] > 0 and r["us_per_write"] > 0 for r in results)
