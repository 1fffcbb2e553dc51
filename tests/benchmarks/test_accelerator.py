"""benchmarks/accelerator.py: the matrix FLOPs it counts, its sweeps' budgets, its tables."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from tests.benchmark_scripts import load_benchmark

accelerator = load_benchmark("accelerator")


def jaxpr_of(fn, *shapes):
    return jax.make_jaxpr(fn)(*(jax.ShapeDtypeStruct(shape, jnp.float32) for shape in shapes))


def test_a_product_counts_two_flops_per_multiply_add():
    jaxpr = jaxpr_of(lambda a, b: a @ b, (4, 8), (8, 3))
    assert accelerator.matmul_flops(jaxpr) == 2 * 4 * 8 * 3


def test_a_batched_product_counts_every_batch():
    jaxpr = jaxpr_of(jax.vmap(lambda a, b: a @ b), (5, 4, 8), (5, 8, 3))
    assert accelerator.matmul_flops(jaxpr) == 5 * 2 * 4 * 8 * 3


def test_a_scan_body_counts_as_often_as_it_runs_and_the_run_loop_as_often_as_told():
    def scanned(a, b):
        return jax.lax.scan(lambda carry, _: (carry, a @ b), 0.0, length=10)[1]

    assert accelerator.matmul_flops(jaxpr_of(scanned, (4, 8), (8, 3))) == 10 * 2 * 4 * 8 * 3

    def run_loop(a):  # the outermost while is the run's loop over iterations; the inner one counts once
        def inner(x):
            return jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] @ c[1]), (0, x))[1]

        return jax.lax.while_loop(lambda c: c[0] < 7, lambda c: (c[0] + 1, inner(c[1])), (0, a))[1]

    assert accelerator.matmul_flops(jaxpr_of(run_loop, (4, 4)), outer_trips=7) == 7 * 2 * 4 * 4 * 4


def test_a_cond_counts_its_larger_branch():
    def gated(a, flag):
        return jax.lax.cond(flag > 0, lambda x: x @ x @ x, lambda x: x @ x, a)

    assert accelerator.matmul_flops(jaxpr_of(gated, (4, 4), ())) == 2 * (2 * 4 * 4 * 4)


def test_a_convolution_counts_its_kernel_once_per_output():
    def conv(image, kernel):
        return jax.lax.conv_general_dilated(image, kernel, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    # A 10x10x4 board through sixteen 3x3x4 kernels: 8x8x16 outputs of 36 multiply-adds each.
    assert accelerator.matmul_flops(jaxpr_of(conv, (2, 10, 10, 4), (3, 3, 4, 16))) == 2 * 2 * 8 * 8 * 16 * 36


def test_ppo_at_pure_jaxrls_settings_counts_its_networks_work_per_step():
    """Two 64-64 tanh networks on CartPole: 8,896 multiply-adds forward, so 2 x 8,896 FLOPs to act and
    about 3 x 2 x 8,896 per sample and epoch to learn: 4 epochs make about 231k FLOPs an env step. What
    a run does once (outside its loop) drops out of the difference between two budgets."""
    run = accelerator.RUNS["ppo"]
    agent = accelerator.build(run, run.n_envs, run.n_timesteps)
    short, long = 8 * 512, 16 * 512  # rollouts of 4 envs x 128 steps
    per_step = (accelerator.run_flops(agent, 2, long) - accelerator.run_flops(agent, 2, short)) / (2 * (long - short))
    assert per_step == pytest.approx((2 + 4 * 6) * 8_896, rel=0.05)


def test_a_replay_run_holds_the_run_s_steps_as_rejax_s_buffer_does():
    """Rejax's buffer_size is the run's steps; Ajax's replay agents get the same ring, not REPLAY_FLOOR's."""
    _, _, n_timesteps = accelerator.sweep_point(accelerator.RUNS["sac"], "seeds", 64, scale=0.25)
    assert accelerator.build(accelerator.RUNS["sac"], 4, n_timesteps).agent_config.buffer_size == n_timesteps == 5_000
    assert accelerator.build(accelerator.RUNS["dqn"], 4, 12_500).agent_config.buffer_size == 12_500
    assert not hasattr(accelerator.build(accelerator.RUNS["ppo"], 4, 32_768).agent_config, "buffer_size")


def test_the_env_sweep_keeps_the_iterations_and_the_seed_sweep_the_budget():
    run = accelerator.RUNS["ppo"]
    assert accelerator.sweep_point(run, "seeds", 64) == (64, 4, 131_072)
    assert accelerator.sweep_point(run, "envs", 64) == (1, 64, 131_072 * 16)
    assert accelerator.sweep_point(run, "seeds", 8, scale=0.25) == (8, 4, 32_768)
    assert accelerator.ppo_kwargs(64)["batch_size"] == 64 * 128 // 4  # still 4 minibatches an epoch


def row(library: str, n_seeds: int, steps_per_s: float, compile_s: float = 10.0, **extra) -> dict:
    return {
        "device_kind": "TPU v5 lite",
        "library": library,
        "run": "ppo",
        "sweep": "seeds",
        "n_seeds": n_seeds,
        "n_envs": 4,
        "exec_steps_per_s": steps_per_s,
        "compile_spans_s": compile_s,
        "trace_s": 1.0,
        "lower_s": 0.5,
        "backend_compile_s": compile_s - 1.5,
        **extra,
    }


def test_the_race_divides_ajax_by_rejax_at_each_seed_count_both_measured_the_latest_row_winning():
    rows = [
        row("ajax", 64, 1.0e6),
        row("ajax", 64, 3.0e6, compile_s=12.0),
        row("rejax", 64, 2.0e6, compile_s=20.0),
        row("ajax", 1024, 4.0e6),
        row("rejax", 1024, 0.0, error="XlaRuntimeError: RESOURCE_EXHAUSTED"),
    ]
    (line,) = accelerator.race(rows)
    assert line == {
        "device_kind": "TPU v5 lite",
        "run": "ppo",
        "n_seeds": 64,
        "execution_ratio": 1.5,
        "ajax_compile_s": 12.0,
        "rejax_compile_s": 20.0,
    }
    table = accelerator.report(rows)
    assert "| TPU v5 lite | ajax | ppo | 64 | 4 | 3,000,000 | 12.0 (1.0 / 0.5 / 10.5) | - | - |" in table
    assert "RESOURCE_EXHAUSTED" in table


def test_a_generator_other_than_threefry_reaches_both_workers_and_races_apart(monkeypatch):
    seen = []

    class Worker:
        def __init__(self, command, stdout, stderr, text, env):
            seen.append(env["JAX_DEFAULT_PRNG_IMPL"])
            self.stdout, self.returncode = iter(['{"n_seeds": 64}\n']), 0

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(accelerator.subprocess, "Popen", Worker)
    rows = list(accelerator.in_fresh_process("python3", "rejax", "ppo", "seeds", [64], 0, 1.0, 0.0, prng="rbg"))
    assert seen == ["rbg"] and rows == [{"n_seeds": 64}]

    rbg = [row("ajax", 64, 3.0e6, prng="rbg"), row("rejax", 64, 1.0e6, prng="rbg")]
    default = [row("ajax", 64, 2.0e6), row("rejax", 64, 2.0e6)]
    lines = {line["run"]: line["execution_ratio"] for line in accelerator.race(rbg + default)}
    assert lines == {"ppo (rbg)": 3.0, "ppo": 1.0}


def test_the_plot_draws_both_sweeps(tmp_path):
    rows = [row("ajax", 1, 1e5), row("ajax", 64, 5e6), row("rejax", 64, 4e6)]
    rows.append({**row("ajax", 1, 2e5), "sweep": "envs", "n_envs": 64})
    rows.append(row("ajax", 64, 3e6, prng="rbg"))  # another generator's rows stay out of the lines
    accelerator.plot(rows, tmp_path / "scaling.png")
    assert (tmp_path / "scaling.png").stat().st_size > 10_000


@pytest.mark.parametrize(
    "argv",
    [[], ["--out", "x.jsonl", "--seeds", "0"], ["--out", "x.jsonl", "--budget-scale", "0"], ["--runs", "a2c"]],
)
def test_bad_arguments_stop_with_usage(argv):
    with pytest.raises(SystemExit):
        accelerator.parse_args(argv)
