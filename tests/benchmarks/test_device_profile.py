"""benchmarks/studies/device_profile.py: a traced run's operations are read back and ranked."""

from __future__ import annotations

import json

from tests.benchmark_scripts import load_benchmark

device_profile = load_benchmark("studies/device_profile")


def test_a_profiled_run_ranks_the_operations_it_ran(tmp_path, capsys):
    out = tmp_path / "ops.json"
    assert device_profile.main(["dqn", "--seeds", "1", "--budget-scale", "0.01", "--top", "3", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "dqn, 1 seeds" in printed and " ms " in printed
    planes = json.loads(out.read_text())["planes"]
    ops = [op for plane in planes.values() for op in plane]
    assert ops and all(op["runs"] >= 1 and op["ms"] >= 0 for op in ops)
    times = [op["ms"] for op in next(iter(planes.values()))]
    assert times == sorted(times, reverse=True)  # the largest first
