"""The learning table's scores over seeds: the IQM, its bootstrap interval and how rows render.

Hand-made scores and rows only, no training: the definitions are checked on examples worked
out by hand (rliable's IQM is scipy's `trim_mean` at 0.25), and the table on one row written
before the per-seed curve was kept and one written after (`results_page.py` renders them,
importing no JAX).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from tests.benchmark_scripts import BENCHMARKS, load_benchmark

intervals = load_benchmark("intervals")
results = load_benchmark("results_page")

# A row as benchmarks/learning_checks.jsonl held it before the per-seed curve was kept.
OLD_ROW = {
    "agent": "DQN",
    "env_id": "CartPole-v1",
    "settings": "zoo",
    "n_timesteps": 50000,
    "seeds": [0, 1, 2, 3, 4],
    "num_episode_test": 10,
    "final_returns": [500.0, 79.2, 115.3, 484.9, 500.0],
    "mean": 335.88,
    "std": 195.25,
    "published": 500.0,
    "target": 475.0,
    "seeds_at_target": 3,
    "curve": {"timestep": [5120, 10240, 15104, 49920], "mean": [131.28, 118.36, 195.02, 335.88]},
    "wall_s": 77.0,
}

PER_SEED = [
    [10.0, 100.0, 200.0, 300.0],
    [10.0, 50.0, 50.0, 50.0],
    [10.0, 400.0, 500.0, 600.0],
    [10.0, 0.0, 0.0, 0.0],
    [10.0, 20.0, 30.0, 40.0],
]


def new_row(per_seed: list[list[float]], agent: str = "PPO") -> dict:
    """A row as run_check writes it now, from a per-seed curve."""
    curve = np.asarray(per_seed)
    finals = curve[:, -1]
    row = copy.deepcopy(OLD_ROW) | {
        "agent": agent,
        "seeds": list(range(len(per_seed))),
        "final_returns": finals.tolist(),
        "mean": float(finals.mean()),
        "std": float(finals.std()),
        "target": None,
        "seeds_at_target": None,
        "curve": {
            "timestep": [1000, 2000, 3000, 4000],
            "mean": curve.mean(axis=0).tolist(),
            "per_seed": per_seed,
        },
    }
    return row | intervals.learning_summary(curve)


def table_line(rows: list[dict], agent: str) -> list[str]:
    """The cells of `agent`'s line in the markdown table."""
    for line in results.markdown_table(rows).splitlines()[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if cells[0] == agent:
            return cells
    raise AssertionError(f"No {agent} line in the table.")


def test_iqm_of_four_is_the_mean_of_the_middle_two() -> None:
    assert intervals.iqm([4.0, 1.0, 3.0, 2.0]) == 2.5


def test_iqm_of_eight_drops_two_from_each_end() -> None:
    # sorted: -50, 1, | 2, 3, 4, 5, | 6, 1000 -> mean(2, 3, 4, 5)
    assert intervals.iqm([5.0, 1000.0, 3.0, -50.0, 2.0, 6.0, 4.0, 1.0]) == 3.5


def test_iqm_trims_a_fractional_quarter_down() -> None:
    # 5 seeds: 0.25 * 5 = 1.25, so scipy (and rliable) drop one score from each end.
    assert intervals.iqm([0.0, 10.0, 20.0, 30.0, 1000.0]) == 20.0
    # 3 seeds: 0.75 rounds down to nothing dropped, the IQM is the mean.
    assert intervals.iqm([0.0, 1.0, 5.0]) == 2.0


def test_interval_contains_the_iqm_and_is_deterministic() -> None:
    scores = [500.0, 79.2, 115.3, 484.9, 500.0]
    low, high = intervals.iqm_interval(scores)
    assert low <= intervals.iqm(scores) <= high
    assert low < high
    assert intervals.iqm_interval(scores) == (low, high)


def test_interval_is_degenerate_for_identical_seeds() -> None:
    assert intervals.iqm_interval([500.0] * 5) == (500.0, 500.0)


def test_interval_of_three_seeds_by_hand() -> None:
    # Each resample of (0, 1, 2) keeps all three draws (0.75 trims nothing): its IQM is their
    # mean, which is 0 or 2 with probability 1/27 each (3.7%, beyond the 2.5% tails).
    assert intervals.iqm_interval([0.0, 1.0, 2.0]) == (0.0, 2.0)


def test_interval_needs_three_seeds() -> None:
    assert intervals.iqm_interval([1.0, 2.0]) is None
    assert intervals.learning_summary([[1.0, 2.0, 3.0]])["iqm_ci"] is None


def test_final_means_average_each_seeds_last_three_evaluations() -> None:
    curve = [[0.0, 1.0, 2.0, 3.0, 4.0], [10.0, 10.0, 0.0, 0.0, 30.0]]
    np.testing.assert_allclose(intervals.final_means(curve), [3.0, 10.0])
    # Fewer evaluations than three: every one counts.
    np.testing.assert_allclose(intervals.final_means([[1.0, 3.0]]), [2.0])


def test_learning_summary_stores_final3_iqm_and_interval() -> None:
    summary = intervals.learning_summary(PER_SEED)
    assert summary["final3"] == [200.0, 50.0, 500.0, 0.0, 30.0]
    assert summary["final3_mean"] == 156.0
    assert summary["iqm"] == pytest.approx((30.0 + 50.0 + 200.0) / 3, abs=0.005)
    low, high = summary["iqm_ci"]
    assert low <= summary["iqm"] <= high


def test_table_says_not_recorded_for_an_old_row() -> None:
    cells = table_line([OLD_ROW], "DQN")
    assert cells[5] == "335.9 ± 195.2"
    # The mean of the last three evaluations is the mean of the mean curve's last three.
    assert cells[6] == f"{(118.36 + 195.02 + 335.88) / 3:.1f}"
    assert cells[7:9] == ["not recorded", "not recorded"]
    assert cells[9] == "3/5 ≥ 475"


def test_table_shows_the_iqm_and_interval_of_a_new_row() -> None:
    row = new_row(PER_SEED)
    cells = table_line([OLD_ROW, row], "PPO")
    low, high = row["iqm_ci"]
    assert cells[6:9] == ["156.0", f"{row['iqm']:.1f}", f"[{low:.1f}, {high:.1f}]"]
    assert table_line([OLD_ROW, row], "DQN")[7] == "not recorded"


def test_table_says_why_a_one_seed_row_has_no_interval() -> None:
    cells = table_line([new_row(PER_SEED[:1])], "PPO")
    assert cells[6:9] == ["200.0", "200.0", "none: 1 seed"]


def test_every_recorded_row_renders() -> None:
    rows = results.read_rows(BENCHMARKS / "learning_checks.jsonl")
    table = results.markdown_table(rows).splitlines()
    assert len(table) == 2 + len(results.latest(rows))
    for row in results.latest(rows):
        cells = table_line([row], row["agent"])
        assert (cells[7] == "not recorded") == ("per_seed" not in row["curve"])
