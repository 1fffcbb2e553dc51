"""SAC scenarios measured one process per measurement: compilation apart from steady state, peak device memory.

A fresh process per measurement is the only way to read two things honestly: the compile
time a user pays in a new interpreter (nothing compiled or cached carries over; Ajax's
compile cache is off), and the device's peak memory, which JAX reports as a high-water
mark over the process's life. Each worker builds the agent, calls `train` once (the first
call: tracing, lowering, backend compilation and the run), then `--repeats` more times on
the same agent (execution alone: its programs are compiled by then). A row splits the first
call by the spans JAX reports for each stage (`trace_s`, `lower_s`, `backend_compile_s`),
and holds the execution's median, the steps per second over every seed, the device kind and
the device's peak bytes in use (None where the runtime does not say, as on a CPU).

    python benchmarks/perf_bench.py pendulum --seeds 1 4 16 32 --out runs/perf.jsonl
    python benchmarks/perf_bench.py pendulum --seeds 1 4 16 32 --out benchmarks/seed_scaling.jsonl
    python benchmarks/seed_scaling_report.py benchmarks/seed_scaling.jsonl

Scenarios (SAC at its paper's defaults, 256-unit networks, but learning from step 1,000):

    pendulum       Pendulum-v1, 1 env, 20,000 steps a seed
    plane3dcircle  TargetGym's Plane3DCircle (the `targetgym` extra), 1 env, 20,000 steps a seed

The seed-scaling table of the Performance page is the first scenario at 1, 4, 16 and 32
seeds: time per seed against the number of seeds (`seed_scaling_report.py`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the sibling benchmark modules, imported where needed


@dataclass(frozen=True)
class Scenario:
    """An agent, its task, its keywords and the steps each seed runs."""

    agent: str
    env_id: str
    n_timesteps: int
    kwargs: dict[str, Any] = field(default_factory=dict)


SCENARIOS = {
    "pendulum": Scenario("SAC", "Pendulum-v1", 20_000, {"n_envs": 1, "learning_starts": 1_000}),
    "plane3dcircle": Scenario("SAC", "Plane3DCircle", 20_000, {"n_envs": 1, "learning_starts": 1_000}),
}


def device_fields() -> dict[str, Any]:
    """What the run ran on: the backend, the device kind and count, JAX's version."""
    import jax

    device = jax.devices()[0]
    return {
        "backend": jax.default_backend(),
        "device_kind": device.device_kind,
        "n_devices": jax.device_count(),
        "jax": jax.__version__,
    }


def peak_bytes() -> int | None:
    """The first device's peak bytes in use over this process's life (None where not reported)."""
    import jax

    stats = jax.devices()[0].memory_stats()
    return None if not stats else stats.get("peak_bytes_in_use")


def steps_run(state: Any) -> int:
    """Every seed's steps: a PPO-like run ends on a whole rollout, past the budget."""
    import numpy as np

    return int(np.atleast_1d(np.asarray(state.collector_state.timestep)).sum())


def timed(call: Callable[[], Any], repeats: int) -> dict[str, Any]:
    """`call()`'s first call split by compile stage, and its execution (`out`: what the first returned).

    The execution is the median of `repeats` further calls (their programs compiled by then),
    or with `repeats=0` the first call less the union of its compile spans, which saves a
    second run of a long budget; the row says which (`exec_from`).
    """
    import jax

    from compile_spans import STAGES, CompileSpans

    with CompileSpans() as spans, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        out = jax.block_until_ready(call())
        first_call_s = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(call())
        times.append(time.perf_counter() - start)
    compile_spans_s = min(spans.total(), first_call_s)
    return {
        "out": out,
        "first_call_s": round(first_call_s, 3),
        **{name: round(spans.total(event), 3) for name, event in STAGES.items()},
        "compile_spans_s": round(compile_spans_s, 3),
        "exec_s": round(statistics.median(times) if times else max(first_call_s - compile_spans_s, 1e-9), 4),
        "exec_from": "repeats" if times else "first call less its compile spans",
        "exec_times_s": [round(t, 4) for t in times],
    }


def measure(agent: Any, n_seeds: int, n_timesteps: int, repeats: int = 1) -> dict[str, Any]:
    """`agent`'s `train` for `n_seeds` seeds timed (`timed`), with the steps and the device's peak memory."""
    seeds = list(range(n_seeds))
    result = timed(lambda: agent.train(seed=seeds, n_timesteps=n_timesteps)[0], repeats)
    steps = steps_run(result.pop("out"))
    return {
        "n_seeds": n_seeds,
        "n_timesteps": n_timesteps,
        "steps": steps,
        **result,
        "exec_steps_per_s": round(steps / result["exec_s"], 1),
        "whole_call_steps_per_s": round(steps / result["first_call_s"], 1),
        "peak_bytes": peak_bytes(),
    }


def measure_scenario(name: str, n_seeds: int, repeats: int, n_timesteps: int | None = None) -> dict[str, Any]:
    """One scenario at `n_seeds`, in this process."""
    from ajax.agents.registry import AGENTS

    scenario = SCENARIOS[name]
    agent = AGENTS[scenario.agent](scenario.env_id, **scenario.kwargs)
    row = measure(agent, n_seeds, n_timesteps or scenario.n_timesteps, repeats)
    return {"scenario": name, "agent": scenario.agent, "env_id": scenario.env_id, **row, **device_fields()}


def in_fresh_process(name: str, n_seeds: int, repeats: int, n_timesteps: int | None) -> dict[str, Any]:
    """One measurement in a new interpreter, Ajax's source first on the path and its compile cache off."""
    from workers import SOURCE, worker_env, worker_rows

    command = [sys.executable, __file__, name, "--worker", "--seeds", str(n_seeds), "--repeats", str(repeats)]
    if n_timesteps is not None:
        command += ["--timesteps", str(n_timesteps)]
    return worker_rows(command, worker_env([SOURCE]), f"{name} with {n_seeds} seeds")[-1]


def stamp(row: dict[str, Any]) -> dict[str, Any]:
    """A row with when and on which commit it was measured (`provenance`: the parent starts no JAX)."""
    from provenance import git_commit

    return {"timestamp": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "commit": git_commit(), **row}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenario", choices=sorted(SCENARIOS), help="which SAC scenario")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 4, 16, 32], help="seed counts, one process each")
    parser.add_argument("--repeats", type=int, default=1, help="execution-only calls after the first (default: 1)")
    parser.add_argument("--timesteps", type=int, help="steps a seed (default: the scenario's)")
    parser.add_argument("--out", type=Path, help="append one JSON line per measurement here")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if min(args.seeds) < 1 or args.repeats < 0 or (args.timesteps is not None and args.timesteps < 1):
        parser.error("--seeds and --timesteps must be positive, --repeats at least 0.")
    if not args.worker and args.out is None:
        parser.error("--out is required: name the file the rows are appended to.")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        print(json.dumps(measure_scenario(args.scenario, args.seeds[0], args.repeats, args.timesteps)))
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for n_seeds in args.seeds:
        row = stamp(in_fresh_process(args.scenario, n_seeds, args.repeats, args.timesteps))
        with args.out.open("a") as file:
            file.write(json.dumps(row) + "\n")
        print(
            f"{args.scenario} {n_seeds:4d} seeds: first call {row['first_call_s']:7.2f} s (trace {row['trace_s']:.1f}, "
            f"lower {row['lower_s']:.1f}, compile {row['backend_compile_s']:.1f}), execution {row['exec_s']:.2f} s, "
            f"{row['exec_steps_per_s']:,.0f} steps/s, peak {row['peak_bytes']}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
