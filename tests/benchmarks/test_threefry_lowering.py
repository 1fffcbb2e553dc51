"""benchmarks/studies/threefry_lowering.py: the two lowerings give the same bits; calls are inlined."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.benchmark_scripts import load_benchmark

threefry_lowering = load_benchmark("studies/threefry_lowering")

MODULE = """
module @jit_run {
  func.func public @main(%arg0: tensor<2xui32>) -> tensor<2xui32> {
    %0 = call @threefry2x32(%arg0) : (tensor<2xui32>) -> tensor<2xui32>
    %1 = call @step(%0) : (tensor<2xui32>) -> tensor<2xui32>
    return %1 : tensor<2xui32>
  }
  func.func private @step(%arg0: tensor<2xui32>) -> tensor<2xui32> {
    %0 = call @threefry2x32_3(%arg0) : (tensor<2xui32>) -> tensor<2xui32>
    %1 = call @threefry2x32_3(%0) : (tensor<2xui32>) -> tensor<2xui32>
    return %1 : tensor<2xui32>
  }
  func.func private @threefry2x32(%arg0: tensor<2xui32>) -> tensor<2xui32> {
    %0 = call @closed_call(%arg0) : (tensor<2xui32>) -> tensor<2xui32>
    return %0 : tensor<2xui32>
  }
  func.func private @threefry2x32_3(%arg0: tensor<2xui32>) -> tensor<2xui32> {
    return %arg0 : tensor<2xui32>
  }
  func.func private @closed_call(%arg0: tensor<2xui32>) -> tensor<2xui32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<2xui32>
    return %0 : tensor<2xui32>
  }
}
"""


def test_every_call_is_counted_as_inlined_with_the_hash_and_its_loop_body_apart():
    counts = threefry_lowering.inlined_counts(MODULE)
    # main 3 lines; step 3; the hash reached three times: twice its 1-line copy, once the
    # 2-line one whose loop body (2 lines) is the hash's too.
    assert counts == {"lines": 3 + 3 + 1 + 1 + 2 + 2, "hash_lines": 1 + 1 + 2 + 2, "hash_sites": 3}


def test_the_rolled_and_unrolled_hashes_draw_the_same_bits_and_only_the_size_differs():
    # In a fresh process: a lowering registered here would stay registered for the tests after.
    code = textwrap.dedent(
        """
        import jax, numpy as np
        from tests.benchmark_scripts import load_benchmark
        study = load_benchmark("studies/threefry_lowering")

        def draws(key):
            a, b = jax.random.split(key)
            return jax.random.bits(a, (64,)), jax.random.normal(b, (8,)), jax.random.permutation(b, 16)

        key = jax.random.key(7)
        size = lambda program: study.inlined_counts(program.lower(key).as_text())
        rolled = jax.jit(draws)  # JAX's CPU lowering: drawn and sized before the other is registered
        rolled_draws, rolled_size = rolled(key), size(rolled)
        study.lower_threefry("unrolled", "cpu")
        unrolled = jax.jit(lambda key: draws(key))  # a new program, lowered afresh
        for one, other in zip(rolled_draws, unrolled(key)):
            np.testing.assert_array_equal(np.asarray(one), np.asarray(other))
        unrolled_size = size(unrolled)
        print(rolled_size["lines"], unrolled_size["lines"], rolled_size["hash_sites"], unrolled_size["hash_sites"])
        """
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    rolled_lines, unrolled_lines, rolled_sites, unrolled_sites = map(int, done.stdout.split()[-4:])
    assert rolled_sites == unrolled_sites > 0
    assert rolled_lines < unrolled_lines
