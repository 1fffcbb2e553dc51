"""benchmarks/sbx_speed.py: the medians and ratios its table reports, from rows a run would write."""

from __future__ import annotations

import pytest
from tests.benchmark_scripts import load_benchmark

sbx_speed = load_benchmark("sbx_speed")


def row(library: str, first: float, exec_s: float, import_s: float = 2.0) -> dict:
    return {
        "library": library,
        "run": "sac-64",
        "import_s": import_s,
        "first_call_s": first,
        "exec_s": exec_s,
        "compile_s": first - exec_s,
    }


def test_the_summary_takes_medians_over_rounds_and_divides_sbx_by_ajax():
    rows = [
        row("ajax", 13.0, 7.0),
        row("ajax", 15.0, 8.0),
        row("ajax", 14.0, 9.0),
        row("ajax-warm", 9.0, 7.5),
        row("sbx", 20.0, 18.0, import_s=4.0),
    ]
    (line,) = sbx_speed.summary(rows)
    assert line["ajax"] == {"import_s": 2.0, "first_call_s": 14.0, "exec_s": 8.0, "compile_s": 6.0}
    assert line["ajax_execution_ratio"] == 2.25  # 18 / 8
    assert line["ajax_whole_call_ratio"] == pytest.approx(1.43)  # 20 / 14
    assert line["ajax_with_imports_ratio"] == 1.5  # (4 + 20) / (2 + 14)
    assert line["ajax-warm_whole_call_ratio"] == pytest.approx(2.22)  # 20 / 9


def test_the_peer_python_is_required_and_a_budget_must_reach_the_updates():
    with pytest.raises(SystemExit):
        sbx_speed.parse_args([])
    with pytest.raises(SystemExit):
        sbx_speed.parse_args(["--sbx-python", "python", "--steps", "500"])
    assert sbx_speed.parse_args(["--sbx-python", "python"]).steps == 10_000
