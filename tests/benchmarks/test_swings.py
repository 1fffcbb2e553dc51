"""benchmarks/world_models/swings.py: a check's falls of the return, and its statistics' correlations."""

from __future__ import annotations

import json
import math

import pytest
from tests.benchmark_scripts import load_benchmark

swings = load_benchmark("world_models/swings")

NAN = float("nan")


def row() -> dict:
    """Two seeds, five evaluations: the entropy follows the return, the loss against it, and
    neither is logged at the first evaluation (before training)."""
    returns = [[10.0, 400.0, 100.0, 450.0, 480.0], [12.0, 300.0, 320.0, 90.0, 350.0]]
    entropy = [[NAN, 0.4, 0.05, 0.5, 0.6], [NAN, 0.3, 0.32, 0.02, 0.38]]
    loss = [[NAN, *(-e for e in seed[1:])] for seed in entropy]
    return {
        "name": "cartpole",
        "check": "DreamerV3:CartPole-v1",
        "commit": "abc1234",
        "machine": {"backend": "tpu"},
        "seeds": [5, 6],
        "curve": {"timestep": [1000, 2000, 3000, 4000, 5000], "per_seed": returns},
        "diagnostics_per_seed": {"behaviour/entropy": entropy, "behaviour/value_loss": loss},
    }


def test_every_fall_past_the_drop_is_found_with_its_statistics():
    found = swings.falls(row(), drop=150)
    assert [(f["seed"], f["timestep"], f["return"]) for f in found] == [
        (5, 3000, (400.0, 100.0)),
        (6, 4000, (320.0, 90.0)),
    ]
    assert found[0]["changes"]["behaviour/entropy"] == (0.4, 0.05)
    assert swings.falls(row(), drop=500) == []


def test_the_correlations_skip_the_unlogged_evaluations_and_keep_their_sign():
    result = swings.correlations(row())
    assert result["behaviour/entropy"] == pytest.approx((1.0, 1.0))
    assert result["behaviour/value_loss"] == pytest.approx((-1.0, -1.0))
    assert all(not math.isnan(value) for pair in result.values() for value in pair)


def test_a_statistics_falls_are_counted_across_the_returns_falls_rises_and_every_interval():
    counts = swings.fell_across(row(), drop=150)
    # Seed 5's intervals: +390 (entropy unlogged before), -300 (entropy 0.4 -> 0.05), +350, +30;
    # seed 6's: +288 (unlogged), +20, -230 (0.32 -> 0.02), +260 (0.02 -> 0.38).
    assert counts["behaviour/entropy"] == {"falls": (2, 2), "rises": (0, 2), "all": (2, 6)}
    assert counts["behaviour/value_loss"] == {"falls": (0, 2), "rises": (2, 2), "all": (4, 6)}


def test_the_report_reads_the_last_row_with_per_seed_diagnostics(tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    older = {**row(), "diagnostics_per_seed": {}}
    rows.write_text(json.dumps(older) + "\n" + json.dumps(row()) + "\n")
    assert swings.main(["--file", str(rows)]) == 0
    printed = capsys.readouterr().out
    assert "seed 5 at row 3,000: 400 -> 100" in printed and "| behaviour/entropy | +1.00 | +1.00 |" in printed
    assert "| behaviour/entropy | 2 of 2 | 0 of 2 | 2 of 6 |" in printed
    with pytest.raises(SystemExit, match="no catch row"):
        swings.main(["--file", str(rows), "--check", "catch"])
