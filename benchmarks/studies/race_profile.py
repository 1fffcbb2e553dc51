"""Where each side of a Brax race spends its device time: Ajax's run and Brax's trainer, profiled.

Issue 59's ant race executes Ajax at 0.74x Brax's `ppo.train` on a TPU v5e, with 32
minibatches of 2,048 segments and with 8 of 8,192 alike, so the gap follows the transitions,
not the optimiser steps. This profiles one race at `brax_race.py`'s settings (its `RACES`,
`--budget-scale` and `--set`), each library in a fresh process, since a TPU admits one:

- Ajax: `train` compiled and run once, then run again under `jax.profiler.trace`, no
  evaluation in it (the race's own timing);
- Brax: `train` traced from its second progress report to its third, one training epoch and
  the evaluation after it, its programs compiled by then.

Each trace is read with JAX's reader (`device_profile.trace_planes`), each device operation is
put in the program (XLA module) it ran in, and each library's operations are summed by kind
(the operation's name less its number: `fusion`, `convolution`, `copy`, `while`, ...) in
milliseconds a thousand environment steps, the evaluation's programs apart, so the two sides
read in one unit. On a CPU the host's threads run the operations and there are no modules.

    python benchmarks/studies/race_profile.py ppo ant --budget-scale 0.02 --top 25
    python benchmarks/studies/race_profile.py ppo ant --budget-scale 0.02 --set num_updates_per_batch=1
"""

from __future__ import annotations

import argparse
import bisect
import collections
import json
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

STUDIES = Path(__file__).resolve().parent
BENCHMARKS = STUDIES.parent
sys.path.insert(0, str(BENCHMARKS))  # brax_race, perf_bench, workers
sys.path.insert(0, str(STUDIES))  # device_profile

from brax_race import RACES, check_settings, parse_overrides, resolve  # noqa: E402

LIBRARIES = ("brax", "ajax")
PER_STEPS = 1_000  # the unit: milliseconds a thousand environment steps
EVALUATION = re.compile(r"eval", re.IGNORECASE)  # a program that evaluates, apart from training
CONTAINERS = frozenset({"while", "cond", "conditional", "call"})  # their time holds their operations'


# Tracing, in a worker ------------------------------------------------------------------------------
def options() -> Any:
    """The profiler's settings: no Python frames and the host's coarsest level, which still holds
    a CPU's thunks (nothing here reads the rest, and over a training epoch it fills the host's
    memory)."""
    import jax

    chosen = jax.profiler.ProfileOptions()
    chosen.python_tracer_level = 0
    chosen.host_tracer_level = 1
    return chosen


def profile_ajax(job: dict[str, Any], trace_dir: Path) -> dict[str, Any]:
    """Ajax's run at the job's settings (and `brax_race.py`'s `--ajax-reset`), compiled and warm,
    traced once: its steps and seconds."""
    import jax

    from brax_race import ajax_agent
    from perf_bench import steps_run

    model, run = ajax_agent(job["agent"], job["env"], job["settings"], job["ajax_reset"])

    def call() -> Any:
        return jax.block_until_ready(model.train(n_timesteps=run.n_timesteps, seed=[run.seed])[0])

    call()
    with jax.profiler.trace(str(trace_dir), profiler_options=options()):
        started = time.perf_counter()
        state = call()
        seconds = time.perf_counter() - started
    return {"steps": steps_run(state), "seconds": round(seconds, 3)}


def profile_brax(job: dict[str, Any], trace_dir: Path) -> dict[str, Any]:
    """Brax's trainer at the job's settings, traced between its second and third progress
    reports: the steps and seconds of that window."""
    import functools

    import jax
    from brax import envs

    from brax_race import brax_call, brax_trainer

    trainer, make_networks = brax_trainer(job["agent"])
    keywords, network = brax_call(job["agent"], job["settings"])
    window: dict[str, Any] = {}

    def progress(step: int, metrics: dict[str, Any]) -> None:
        reports = window.setdefault("reports", [])
        reports.append((int(step), time.perf_counter()))
        if len(reports) == 2:
            jax.profiler.start_trace(str(trace_dir), profiler_options=options())
        elif len(reports) == 3:
            jax.profiler.stop_trace()

    try:
        trainer.train(
            environment=envs.get_environment(job["env"]),
            progress_fn=progress,
            network_factory=functools.partial(make_networks, **network),
            **keywords,
        )
    finally:
        if len(window.get("reports", ())) == 2:  # stopped early: close the trace
            jax.profiler.stop_trace()
    (step_a, time_a), (step_b, time_b) = window["reports"][1:3]
    return {"steps": step_b - step_a, "seconds": round(time_b - time_a, 3)}


def module_ops(trace_dir: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """{program: {operation: {"runs", "ms", "kind"}}}: on an accelerator the "XLA Ops" line's
    operations, each put in the "XLA Modules" event it ran inside; on a CPU the host threads'
    thunks, which name their module."""
    from device_profile import trace_planes

    ops: dict[str, dict[str, dict[str, Any]]] = collections.defaultdict(dict)
    for plane in trace_planes(trace_dir):
        lines = {line.name: line for line in plane.lines}
        modules = sorted((e.start_ns, e.end_ns, e.name) for e in getattr(lines.get("XLA Modules"), "events", ()))
        starts = [start for start, _, _ in modules]
        for line in plane.lines:
            for event in line.events:
                stats = dict(event.stats)
                if "hlo_op" in stats:  # a CPU thunk
                    program = str(stats.get("hlo_module", "unnamed"))
                elif line.name == "XLA Ops":
                    at = bisect.bisect_right(starts, event.start_ns) - 1
                    program = modules[at][2] if at >= 0 and event.start_ns < modules[at][1] else "outside a module"
                else:
                    continue
                op = ops[program].setdefault(
                    event.name, {"runs": 0, "ms": 0.0, "kind": re.sub(r"[.\d]+$", "", event.name)}
                )
                op["runs"] += 1
                op["ms"] += event.duration_ns / 1e6
    return {program: dict(found_ops) for program, found_ops in ops.items()}


def worker(job: dict[str, Any]) -> dict[str, Any]:
    """One library's profile of the race in `job`, in this process."""
    from perf_bench import device_fields

    profile = profile_brax if job["library"] == "brax" else profile_ajax
    with tempfile.TemporaryDirectory() as trace_dir:
        timing = profile(job, Path(trace_dir))
        programs = module_ops(Path(trace_dir))
    return {**job, **device_fields(), **timing, "programs": programs}


# Reading the two profiles ----------------------------------------------------------------------
def is_evaluation(program: str) -> bool:
    return bool(EVALUATION.search(program))


def kinds(row: dict[str, Any]) -> dict[str, float]:
    """A profile's training operations summed by kind, in ms a thousand environment steps (a loop's
    or a branch's own time holds the operations inside it: `report` leaves those out of the sum)."""
    scale = PER_STEPS / max(row["steps"], 1)
    total: collections.Counter = collections.Counter()
    for program, ops in row["programs"].items():
        if not is_evaluation(program):
            for op in ops.values():
                total[op["kind"]] += op["ms"] * scale
    return dict(total.most_common())


def report(rows: Sequence[dict[str, Any]], top: int) -> str:
    """The programs of each profile, then the kinds side by side, then each side's top operations."""
    lines = []
    for row in rows:
        scale = PER_STEPS / max(row["steps"], 1)
        reset = f", Ajax's resets {row['ajax_reset']}" if row["library"] == "ajax" else ""
        traced = f"{row['steps']:,} steps traced in {row['seconds']:.2f} s on {row['device_kind']}"
        lines.append(f"== {row['library']}: {traced}{reset}")
        for program, ops in sorted(row["programs"].items(), key=lambda item: -sum(op["ms"] for op in item[1].values())):
            ms = sum(op["ms"] for op in ops.values())
            apart = " (evaluation, left out below)" if is_evaluation(program) else ""
            lines.append(f"   {ms:10,.1f} ms  {ms * scale:8.3f} ms/1k steps  {program[:80]}{apart}")
    by_kind = {row["library"]: kinds(row) for row in rows}
    names = list(by_kind)
    lines.append(f"== training operations by kind, ms a {PER_STEPS:,} env steps: " + " | ".join(names))
    every = sorted(
        {kind for table in by_kind.values() for kind in table},
        key=lambda k: -max(t.get(k, 0) for t in by_kind.values()),
    )
    for kind in every[:top]:
        holds = " (holds the operations inside it)" if kind in CONTAINERS else ""
        lines.append(
            "   " + "  ".join(f"{by_kind[name].get(kind, 0.0):9.3f}" for name in names) + f"  {kind[:60]}{holds}"
        )
    sums = [sum(ms for kind, ms in by_kind[name].items() if kind not in CONTAINERS) for name in names]
    lines.append("   " + "  ".join(f"{ms:9.3f}" for ms in sums) + "  all, loops and branches left out")
    for row in rows:
        scale = PER_STEPS / max(row["steps"], 1)
        ops = [
            (program, name, op)
            for program, found in row["programs"].items()
            if not is_evaluation(program)
            for name, op in found.items()
        ]
        ops.sort(key=lambda item: -item[2]["ms"])
        lines.append(f"== {row['library']}: top training operations, ms/1k steps, runs")
        for _, name, op in ops[:top]:
            lines.append(f"   {op['ms'] * scale:9.3f} {op['runs']:8d}x  {name[:100]}")
    return "\n".join(lines)


# Orchestration -----------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("agent", choices=sorted({agent for agent, _ in RACES}))
    parser.add_argument("env", choices=sorted({env for _, env in RACES}))
    parser.add_argument("--budget-scale", type=float, default=0.02, help="the race's budget times this (default 0.02)")
    parser.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE", help="brax_race.py's overrides")
    parser.add_argument("--libraries", nargs="+", choices=LIBRARIES, default=list(LIBRARIES))
    parser.add_argument("--ajax-reset", choices=("fresh", "restart"), default="fresh", help="as brax_race.py's")
    parser.add_argument("--top", type=int, default=25, help="kinds and operations printed (default 25)")
    parser.add_argument("--out", type=Path, help="write both profiles here as JSON")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        return args
    if args.budget_scale <= 0:
        parser.error("--budget-scale must be positive.")
    try:
        overrides = parse_overrides(args.set)
    except ValueError as error:
        parser.error(str(error))
    args.settings = resolve(RACES[args.agent, args.env], None, args.budget_scale, None, overrides)
    reason = check_settings(args.agent, args.settings)
    if reason is not None:
        parser.error(reason)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker is not None:
        print(json.dumps(worker(json.loads(Path(args.worker).read_text()))), flush=True)
        return 0
    from workers import SOURCE, worker_env, worker_rows

    rows = []
    for library in args.libraries:
        job = {"library": library, "agent": args.agent, "env": args.env, "settings": args.settings}
        job.update(ajax_reset=args.ajax_reset)
        with tempfile.NamedTemporaryFile("w", suffix=".json") as file:
            json.dump(job, file)
            file.flush()
            command = [sys.executable, __file__, args.agent, args.env, "--worker", file.name]
            (row,) = worker_rows(command, worker_env([BENCHMARKS, SOURCE]), f"{library}'s profile")[-1:]
        rows.append(row)
    print(report(rows, args.top))
    if args.out is not None:
        args.out.write_text(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
