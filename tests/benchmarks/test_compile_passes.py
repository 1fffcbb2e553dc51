"""benchmarks/studies/compile_passes.py: a pass's time is the gap between its dump and the one before."""

from __future__ import annotations

import os

from tests.benchmark_scripts import load_benchmark

compile_passes = load_benchmark("studies/compile_passes")


def test_each_pass_is_timed_by_the_gap_to_the_dump_before_it_and_codegen_apart(tmp_path):
    dumps = [
        ("before_optimizations", 0.0),
        ("0001.simplification.after_algsimp.before_dce", 0.5),
        ("0002.fusion.after_fusion.before_dce", 2.5),
        ("0003.simplification.after_algsimp.before_dce", 3.0),
        ("after_optimizations", 3.25),
        ("after_codegen", 7.25),
    ]
    for stage, seconds in dumps:
        path = tmp_path / f"module_0042.jit_resume.cl_1.{stage}.txt"
        path.write_text("HloModule")
        os.utime(path, ns=(int(1e18 + seconds * 1e9),) * 2)
    (tmp_path / "unrelated.txt").write_text("")

    (module,) = compile_passes.pass_times(tmp_path)
    assert module["module"] == "0042.jit_resume" and module["dumps"] == 6
    assert module["codegen_s"] == 4.0
    passes = module["slowest_passes_s"]
    assert passes["fusion.after_fusion.before_dce"] == 2.0
    assert passes["simplification.after_algsimp.before_dce"] == 1.0  # two dumps of one pass, summed
    assert module["hlo_passes_s"] == 3.25 - 0.0  # every gap up to the optimised module, codegen apart
