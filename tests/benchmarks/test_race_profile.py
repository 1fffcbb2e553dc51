"""benchmarks/studies/race_profile.py: a profile's operations land in their programs, and two
libraries' profiles read side by side in one unit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from tests.benchmark_scripts import load_benchmark

race_profile = load_benchmark("studies/race_profile")


def test_a_traced_program_has_its_operations(tmp_path):
    @jax.jit
    def product(x):
        return jnp.tanh(x @ x).sum()

    x = jnp.ones((64, 64))
    product(x).block_until_ready()
    with jax.profiler.trace(str(tmp_path)):
        product(x).block_until_ready()
    programs = race_profile.module_ops(tmp_path)
    (name,) = [program for program in programs if "product" in program]
    ops = programs[name].values()
    assert ops and all(op["runs"] >= 1 and op["ms"] >= 0 and not op["kind"][-1].isdigit() for op in ops)


def test_the_report_puts_both_libraries_in_ms_a_thousand_steps_without_their_evaluations():
    def row(library, steps, ms):
        ops = {
            "fusion.1": {"runs": 4, "ms": ms, "kind": "fusion"},
            "while.2": {"runs": 1, "ms": 10 * ms, "kind": "while"},
        }
        evaluation = {"fusion.9": {"runs": 1, "ms": 1e6, "kind": "fusion"}}
        programs = {"jit_train": ops, "jit_generate_eval_unroll": evaluation}
        return {
            "library": library,
            "steps": steps,
            "seconds": 1.0,
            "device_kind": "cpu",
            "programs": programs,
            "ajax_reset": "fresh",
        }

    brax, ajax = row("brax", 2_000, 4.0), row("ajax", 4_000, 12.0)
    assert race_profile.kinds(brax) == {"while": 20.0, "fusion": 2.0}
    assert race_profile.kinds(ajax) == {"while": 30.0, "fusion": 3.0}
    printed = race_profile.report([brax, ajax], top=5)
    assert "jit_generate_eval_unroll (evaluation, left out below)" in printed
    assert "2.000      3.000  all, loops and branches left out" in printed
    assert "(holds the operations inside it)" in printed
