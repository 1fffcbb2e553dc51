"""benchmarks/perf_bench.py and seed_scaling_report.py: the timing split, the scaling table, the arguments."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from tests.benchmark_scripts import load_benchmark

perf_bench = load_benchmark("perf_bench")
report = load_benchmark("seed_scaling_report")


def test_a_timed_call_splits_its_first_call_by_stage_and_times_the_repeats_apart():
    program = jax.jit(lambda x: jnp.tanh(x @ x).sum())
    x = jnp.ones((16, 16))
    result = perf_bench.timed(lambda: program(x), repeats=2)
    assert result["out"] == pytest.approx(16 * 16 * float(jnp.tanh(16.0)))
    assert result["exec_from"] == "repeats" and len(result["exec_times_s"]) == 2
    assert result["backend_compile_s"] > 0 and result["trace_s"] > 0
    assert result["compile_spans_s"] <= result["first_call_s"]


def test_without_repeats_the_execution_is_the_first_call_less_its_compile_spans():
    program = jax.jit(lambda x: x * 2)
    result = perf_bench.timed(lambda: program(jnp.ones(3)), repeats=0)
    assert result["exec_from"] == "first call less its compile spans"
    assert result["exec_s"] == pytest.approx(result["first_call_s"] - result["compile_spans_s"], abs=2e-3)


def test_the_cpu_reports_no_peak_memory_and_names_its_device():
    assert perf_bench.peak_bytes() is None
    assert perf_bench.device_fields()["backend"] == "cpu"


def scaling_row(n_seeds: int, first: float, exec_s: float, device: str = "TPU v5 lite") -> dict:
    return {"scenario": "pendulum", "device_kind": device, "n_seeds": n_seeds, "first_call_s": first, "exec_s": exec_s}


def test_the_seed_scaling_table_gives_the_throughput_against_one_seed_the_latest_row_winning():
    rows = [
        scaling_row(1, 9.81, 2.0),
        scaling_row(32, 20.0, 3.0),
        scaling_row(32, 11.08, 2.5),
        scaling_row(4, 5.0, 1.0, device="cpu"),
    ]
    table = report.scaling_table(rows)
    lines = {(line["device_kind"], line["n_seeds"]): line for line in table}
    assert lines[("TPU v5 lite", 32)]["whole_call_gain"] == pytest.approx(32 * 9.81 / 11.08)  # the seed page's 28x
    assert lines[("TPU v5 lite", 32)]["exec_gain"] == pytest.approx(32 * 2.0 / 2.5)
    assert lines[("TPU v5 lite", 32)]["exec_per_seed_s"] == pytest.approx(2.5 / 32)
    assert lines[("cpu", 4)]["whole_call_gain"] is None  # no one-seed row on that device
    markdown = report.render(table, markdown=True)
    assert "| pendulum | TPU v5 lite | 32 | 11.08 | 2.50 | 0.078 | 28.3x | 25.6x |" in markdown


def test_perf_bench_needs_a_file_for_its_rows_and_positive_counts():
    with pytest.raises(SystemExit):
        perf_bench.parse_args(["pendulum"])
    with pytest.raises(SystemExit):
        perf_bench.parse_args(["pendulum", "--seeds", "0", "--out", "x.jsonl"])
    assert perf_bench.parse_args(["pendulum", "--out", "x.jsonl"]).seeds == [1, 4, 16, 32]


def test_the_compile_spans_add_each_programs_backend_compile_under_its_name():
    compile_spans = load_benchmark("compile_spans")

    def doubled_on_purpose(x):
        return x * 2

    with compile_spans.CompileSpans() as spans:
        jax.jit(doubled_on_purpose)(jnp.ones(5))
    assert spans.by_program["jit(doubled_on_purpose)"] > 0
    assert sum(spans.by_program.values()) == pytest.approx(spans.total(compile_spans.STAGES["backend_compile_s"]))
    slowest = spans.slowest_programs(1)
    assert len(slowest) == 1 and max(spans.by_program.values()) == pytest.approx(next(iter(slowest.values())), abs=1e-3)
