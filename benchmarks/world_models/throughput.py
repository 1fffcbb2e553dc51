"""The world models' speed on whatever device JAX sees: updates and env steps a second, compilation apart.

Issue 60 asks for DreamerV3's updates a second at the reference's default size (1m since its
December 2024 configs) and at 12m, and TD-MPC2's at its 5M default. Each run is measured in a
fresh process (Ajax's compile cache off) in two calls of one program: the first trains
`--warmup` env steps a seed (past the uniform seed steps, so the updates have started) and
pays the compilation, split by stage as `compile_spans.py` reports it; the second resumes
from that state for `--steps` more through the same compiled program (both calls share the
horizon, so the replay's shape does not change), and its whole time is execution. A row's
`updates_per_s` counts every seed's updates in the resumed call per second of it.

    dreamerv3-1m    the CartPole gate of learning_checks.py: 1m model, 16 envs, 16 x 64
                    sequences, train ratio 512, every other setting the agent's default
    dreamerv3-12m   the same at the 12m model (the April 2024 reference's DMC size)
    tdmpc2-5m       TD-MPC2 at its defaults (5M parameters, the full planner) on Pendulum-v1

    python benchmarks/world_models/throughput.py --out runs/world_model_throughput.jsonl
    JAX_PLATFORMS=cpu python benchmarks/world_models/throughput.py --runs dreamerv3-1m --warmup 1200 --steps 64

The first command's rows on one TPU v5e chip (2026-12-07) are kept in
`benchmarks/world_models/throughput.jsonl`; docs/world_models.md tables them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[1]  # compile_spans, perf_bench, provenance, workers
sys.path.insert(0, str(BENCHMARKS))
GATE = {"n_envs": 16, "train_ratio": 512.0, "batch_size": 16, "batch_length": 64}
RUNS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "dreamerv3-1m": ("DreamerV3", "CartPole-v1", {"model_size": "1m", **GATE}),
    "dreamerv3-12m": ("DreamerV3", "CartPole-v1", {"model_size": "12m", **GATE}),
    "tdmpc2-5m": ("TDMPC2", "Pendulum-v1", {"model_size": 5}),
}


def measure(name: str, n_seeds: int, warmup: int, steps: int) -> dict[str, Any]:
    """One run in this process: the compiling first call, then the resumed call timed whole."""
    import jax

    from ajax.agents.registry import AGENTS
    from compile_spans import STAGES, CompileSpans
    from perf_bench import device_fields, peak_bytes

    agent_name, env_id, kwargs = RUNS[name]
    agent = AGENTS[agent_name](env_id, **kwargs)
    seeds, horizon = list(range(n_seeds)), warmup + steps
    started = time.perf_counter()
    with CompileSpans() as spans:
        state, _ = agent.train(seed=seeds, n_timesteps=warmup, total_timesteps=horizon)
        jax.block_until_ready(state)
    first_call = time.perf_counter() - started
    updates_before = int(jax.device_get(state.n_updates).sum())
    steps_before = int(jax.device_get(state.collector_state.timestep)[0])
    started = time.perf_counter()
    with CompileSpans() as resumed_spans:
        state, _ = agent.train(initial_state=state, n_timesteps=steps, total_timesteps=horizon)
        jax.block_until_ready(state)
    resumed = time.perf_counter() - started
    updates = int(jax.device_get(state.n_updates).sum()) - updates_before
    env_steps = (int(jax.device_get(state.collector_state.timestep)[0]) - steps_before) * n_seeds
    return {
        "run": name,
        "agent": agent_name,
        "env_id": env_id,
        "settings": dict(kwargs),
        "n_seeds": n_seeds,
        "warmup_steps": warmup,
        "steps": steps,
        **device_fields(),
        "first_call_s": round(first_call, 3),
        **{stage: round(spans.total(event), 3) for stage, event in STAGES.items()},
        "compile_spans_s": round(spans.total(), 3),
        "resumed_call_s": round(resumed, 3),
        # 0 when the resumed call reran the first call's program, as it should (its few small traces aside).
        "resumed_backend_compile_s": round(resumed_spans.total(STAGES["backend_compile_s"]), 3),
        "updates": updates,
        "updates_per_s": round(updates / resumed, 2),
        "env_steps_per_s": round(env_steps / resumed, 1),
        "peak_bytes": peak_bytes(),
    }


def in_fresh_process(name: str, n_seeds: int, warmup: int, steps: int) -> dict[str, Any]:
    from workers import SOURCE, worker_env, worker_rows

    command = [sys.executable, __file__, "--worker", name, str(n_seeds), str(warmup), str(steps)]
    return worker_rows(command, worker_env([BENCHMARKS, SOURCE]), name)[0]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", nargs="+", choices=list(RUNS), default=list(RUNS), help="which runs (default: all)")
    parser.add_argument("--seeds", type=int, default=1, help="seeds in one vmapped program (default: 1)")
    parser.add_argument("--warmup", type=int, default=4_096, help="env steps a seed of the compiling call")
    parser.add_argument("--steps", type=int, default=2_048, help="env steps a seed of the timed, resumed call")
    parser.add_argument("--out", type=Path, help="append the rows here")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        name, n_seeds, warmup, steps = args.worker
        print(json.dumps(measure(name, int(n_seeds), int(warmup), int(steps))), flush=True)
        return 0
    from provenance import append_row, git_commit

    for name in args.runs:
        row = {"commit": git_commit(), **in_fresh_process(name, args.seeds, args.warmup, args.steps)}
        print(
            f"{name}: {row['updates_per_s']:,.1f} updates/s, {row['env_steps_per_s']:,.0f} env steps/s, "
            f"compile {row['compile_spans_s']} s ({row['device_kind']})",
            flush=True,
        )
        if args.out:
            append_row(args.out, row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
