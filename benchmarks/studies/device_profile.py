"""Where an accelerator.py run spends its device time: XLA's operations ranked by their summed time.

One run of `benchmarks/accelerator.py` (its settings, a number of seeds and the budget scale)
is compiled and run once, run again untimed to warm it, then run a third time under
`jax.profiler.trace`. The trace's planes are read back with JAX's own reader of XLA's profile
(`jax._src.profiler.ProfileData`, a private module: a benchmark may read it, Ajax does not),
and the events of each device's "XLA Ops" lines are summed by operation: how many times each
ran and its total time, the largest first. Asynchronous copies and slices
("Async XLA Ops") overlap the rest, so the column does not add up to the run's time; an
operation nested in a loop or a conditional is counted in it and in its parent.

On a CPU the host's threads hold the operations, and the ranking is the thunks'. It was
written for the TPU, where it found SAC's replay writes at 1,024 seeds streaming every seed's
ring through the chip's memory (PERFORMANCE_REPORT.md, the tenth section of 2026-12-07).

    python benchmarks/studies/device_profile.py sac --seeds 1024 --budget-scale 0.25 --top 40
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/, for its shared modules

import jax  # noqa: E402

from accelerator import RUNS, build, sweep_point  # noqa: E402

OP_LINES = ("XLA Ops", "Async XLA Ops")


def profiled_run(name: str, n_seeds: int, scale: float, trace_dir: Path) -> float:
    """Seconds of the warm run that was traced into `trace_dir`."""
    run = RUNS[name]
    n_seeds, n_envs, n_timesteps = sweep_point(run, "seeds", n_seeds, scale)
    agent = build(run, n_envs, n_timesteps)
    seeds = list(range(n_seeds))
    for _ in range(2):  # the compile, then a warm call
        jax.block_until_ready(agent.train(seed=seeds, n_timesteps=n_timesteps)[0])
    with jax.profiler.trace(str(trace_dir)):
        started = time.perf_counter()
        jax.block_until_ready(agent.train(seed=seeds, n_timesteps=n_timesteps)[0])
        return time.perf_counter() - started


def trace_planes(trace_dir: Path) -> Any:
    """The planes of the last profile `jax.profiler` wrote under `trace_dir`."""
    from jax._src.profiler import ProfileData

    found = sorted(trace_dir.rglob("*.xplane.pb"))
    if not found:
        raise FileNotFoundError(f"jax.profiler wrote no .xplane.pb under {trace_dir}")
    return ProfileData.from_file(str(found[-1])).planes


def op_times(trace_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """Each plane's operations in `trace_dir`'s profile: name, line, runs and summed milliseconds."""
    planes: dict[str, list[dict[str, Any]]] = {}
    for plane in trace_planes(trace_dir):
        total: collections.Counter = collections.Counter()
        runs: collections.Counter = collections.Counter()
        host = plane.name.startswith("/host:")
        for line in plane.lines:
            if not host and line.name not in OP_LINES:
                continue
            for event in line.events:
                total[(line.name, event.name)] += event.duration_ns
                runs[(line.name, event.name)] += 1
        if total:
            planes[plane.name] = [
                {"line": line, "op": op, "runs": runs[(line, op)], "ms": round(ns / 1e6, 3)}
                for (line, op), ns in total.most_common()
            ]
    return planes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", choices=sorted(RUNS))
    parser.add_argument("--seeds", type=int, default=64)
    parser.add_argument("--budget-scale", type=float, default=0.25)
    parser.add_argument("--top", type=int, default=40, help="operations printed a plane")
    parser.add_argument("--out", type=Path, help="write every plane's operations here as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as trace_dir:
        seconds = profiled_run(args.run, args.seeds, args.budget_scale, Path(trace_dir))
        planes = op_times(Path(trace_dir))
    print(f"{args.run}, {args.seeds} seeds, x{args.budget_scale}: the traced call took {seconds:.2f} s")
    for plane, ops in planes.items():
        device = not plane.startswith("/host:")
        if device or len(planes) == 1:
            print(f"== {plane}: {sum(op['ms'] for op in ops):,.0f} ms over {len(ops)} operations (overlapping)")
            for op in ops[: args.top]:
                print(f"{op['ms']:12,.1f} ms {op['runs']:8d}x  {op['line'][:16]:16s} {op['op'][:140]}")
    if args.out:
        args.out.write_text(json.dumps({"run": args.run, "seeds": args.seeds, "seconds": seconds, "planes": planes}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
