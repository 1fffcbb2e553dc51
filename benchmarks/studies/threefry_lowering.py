"""How much of a TPU program is JAX's random-number hash, and what rolling it up buys (issue 58).

JAX lowers its threefry hash (`threefry2x32`, behind every split, fold and draw under the
default generator) two ways: on the CPU as a loop of five steps of four rounds, elsewhere
with the twenty rounds written out, inlined at every call site. The unrolled form is what a
TPU compiles, and on PPO's run it is about half the module (the Performance page, "Random
numbers are half of a TPU program"). Both forms compute the same bits: they are one
sequence of 32-bit additions, rotations and exclusive ors.

A run is one of `accelerator.py`'s (ppo, pqn, sac, dqn, pqn-minatar) or of the world models'
`throughput.py` (dreamerv3-1m, dreamerv3-12m, tdmpc2-5m). `--count` (any machine: JAX lowers
for a TPU without one) lowers each run's program for the TPU twice, JAX's lowering and the
rolled one, and counts the StableHLO lines with every call inlined as XLA inlines them: all,
the hash's, and its call sites. `--measure` (on a TPU) measures each run as its script does,
in fresh processes under each lowering, its rows with a `threefry` field: does the smaller
module compile faster, and does the loop cost the run's execution? Rows go to `--out`.

    python benchmarks/studies/threefry_lowering.py --count --runs ppo sac dreamerv3-1m --out runs/threefry.jsonl
    python benchmarks/studies/threefry_lowering.py --measure --runs ppo --seeds 64 --out runs/threefry.jsonl

The rolled lowering is registered here, in the study, from JAX's private modules: Ajax itself
does not change how JAX lowers anything. Measured on one TPU v5e chip (2026-12-07, code at
34ef419, rows in benchmarks/studies/threefry_lowering.jsonl), the rolled form shortens XLA's
compile by 2.6 to 4.1 s at 64 seeds (PPO 13.0 to 10.4 s) and by 5.6 and 11.9 s for DreamerV3
and TD-MPC2, and slows execution 1.3 to 3.5 times (PPO 7.32M to 2.12M steps a second): a
loop on the TPU does not fuse with the arithmetic around the draw, so JAX's lowering stays.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[1]  # the shared modules: accelerator, provenance
ROOT = BENCHMARKS.parent
sys.path.insert(0, str(BENCHMARKS))
sys.path.insert(0, str(BENCHMARKS / "world_models"))  # throughput.py's runs

LOWERINGS = ("unrolled", "rolled")
FUNCTION = re.compile(r"^\s*func\.func (?:public |private )?@([\w.\-]+)")
CALL = re.compile(r"call @([\w.\-]+)")
HASH = "threefry2x32"  # the hash's out-of-line function, and its numbered copies


def lower_threefry(form: str, platform: str = "tpu") -> None:
    """Lower the threefry hash on `platform` in `form`: "rolled" as JAX lowers it on the CPU (a
    five-step loop), "unrolled" as elsewhere. A program lowered before keeps its lowering."""
    from jax._src.random import threefry2x32 as threefry  # private: a study may read JAX's internals
    from jax.interpreters import mlir

    rules = {"rolled": threefry._threefry2x32_cpu_lowering_rule, "unrolled": threefry._threefry2x32_lowering_rule}
    mlir.register_lowering(threefry.threefry2x32_p, rules[form], platform=platform)


def inlined_counts(module: str) -> dict[str, int]:
    """A StableHLO module's lines with each call replaced by its callee's lines, as XLA inlines
    them: all of them, the hash's, and how many times the hash is reached."""
    lines: Counter[str] = Counter()
    calls: dict[str, list[str]] = defaultdict(list)
    function = None
    for line in module.splitlines():
        match = FUNCTION.match(line)
        if match:
            function = match[1]
        elif function is not None and line.strip() not in ("", "}"):
            lines[function] += 1
            calls[function] += CALL.findall(line)

    def is_hash(name: str) -> bool:
        return name == HASH or name.startswith(HASH + "_")

    @functools.cache
    def reach(name: str) -> tuple[int, int, int]:
        total, hashed, sites = lines[name], 0, 0
        for callee in calls[name]:
            below = reach(callee)
            total, hashed, sites = total + below[0], hashed + below[1], sites + below[2]
        if is_hash(name):  # the hash's loop body, when rolled, is its own
            return total, total, 1
        return total, hashed, sites

    total, hashed, sites = reach("main")
    return {"lines": total, "hash_lines": hashed, "hash_sites": sites}


def run_program(name: str, args: argparse.Namespace) -> Any:
    """The run program the run's script compiles, traced at its state's shapes."""
    import throughput

    from accelerator import RUNS, build, sweep_point, traced_run
    from ajax.agents.registry import AGENTS

    if name in throughput.RUNS:
        agent_name, env_id, kwargs = throughput.RUNS[name]
        agent, n_seeds, n_timesteps = AGENTS[agent_name](env_id, **kwargs), args.seeds[0], args.warmup + args.steps
    else:
        n_seeds, n_envs, n_timesteps = sweep_point(RUNS[name], "seeds", args.seeds[0], args.budget_scale)
        agent = build(RUNS[name], n_envs, n_timesteps)
    return traced_run(agent, n_seeds, n_timesteps)[0]


def count(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """The run's TPU module's counts under this process's lowering."""
    module = run_program(name, args).lower(lowering_platforms=("tpu",)).as_text()
    return {"run": name, "n_seeds": args.seeds[0], "lowered_for": "tpu", **inlined_counts(module)}


def measure(name: str, args: argparse.Namespace) -> None:
    """Print the run's rows as its script measures it, in this process."""
    import throughput

    from accelerator import worker

    if name in throughput.RUNS:
        print(json.dumps(throughput.measure(name, args.seeds[0], args.warmup, args.steps)), flush=True)
    else:
        worker("ajax", name, "seeds", args.seeds, args.repeats, args.budget_scale, args.until)


def in_fresh_processes(task: str, names: Sequence[str], args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    """`task`'s rows for each run under each lowering, in a fresh process apiece (JAX keeps a
    program's lowering once made, so a lowering registered later would not reach it): a run's
    two rows side by side, so that a call stopped by its time limit keeps whole pairs."""
    from workers import SOURCE, worker_env, worker_rows

    until = time.time() + 60 * args.minutes
    for name, lowering in itertools.product(names, LOWERINGS):
        if time.time() > until:
            return
        command = [sys.executable, __file__, "--worker", task, lowering, name]
        command += [
            "--seeds",
            *map(str, args.seeds),
            "--repeats",
            str(args.repeats),
            "--budget-scale",
            str(args.budget_scale),
        ]
        command += ["--warmup", str(args.warmup), "--steps", str(args.steps), "--until", str(until)]
        found = worker_rows(command, worker_env([BENCHMARKS, SOURCE]), f"{task} under the {lowering} lowering")
        yield from ({**row, "threefry": lowering} for row in found)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--count", action="store_true", help="count the TPU module's lines under each lowering")
    mode.add_argument("--measure", action="store_true", help="compile and run each point under each lowering")
    mode.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)  # TASK LOWERING RUN: one process's rows
    parser.add_argument(
        "--runs", nargs="+", default=["ppo"], help="accelerator.py's or throughput.py's runs (default: ppo)"
    )
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=[64], help="seed counts (a world model and --count: the first)"
    )
    parser.add_argument("--repeats", type=int, default=1, help="as accelerator.py's")
    parser.add_argument("--budget-scale", type=float, default=0.25, help="as accelerator.py's (default: 0.25)")
    parser.add_argument("--warmup", type=int, default=4_096, help="as throughput.py's (default: 4,096)")
    parser.add_argument("--steps", type=int, default=2_048, help="as throughput.py's (default: 2,048)")
    parser.add_argument("--minutes", type=float, default=9.0, help="--measure starts no point after this")
    parser.add_argument("--until", type=float, default=float("inf"), help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help="append the rows here")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker:
        task, lowering, name = args.worker
        lower_threefry(lowering)
        if task == "count":
            print(json.dumps(count(name, args)), flush=True)
        else:
            measure(name, args)
        return 0
    from provenance import git_commit, report_row

    commit = git_commit()
    for row in in_fresh_processes("count" if args.count else "measure", args.runs, args):
        report_row({"commit": commit, **row}, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
