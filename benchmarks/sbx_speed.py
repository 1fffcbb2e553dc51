"""Ajax's SAC against SBX's on Pendulum, 10,000 steps: execution, compilation and the whole call.

The issue's comparison with SBX (Stable-Baselines3 in JAX): the same SAC, each library on
its own footing. SBX steps Gymnasium's Pendulum-v1 from Python, one env, and calls its
jitted update once a step; Ajax runs the whole training as one compiled program on
gymnax's Pendulum-v1 (the same dynamics). SBX is never a dependency of Ajax: install it in
a throwaway virtual environment (`benchmarks/peers.py` builds one) and pass its Python:

    JAX_PLATFORMS=cpu python benchmarks/sbx_speed.py --sbx-python /tmp/peers/sbx/bin/python

Both sides: one env, batches of 256, updates from step 100 (SB3's default), one update a
step, learning rates 3e-4, tau 0.005, gamma 0.99, a 1e6 buffer, the temperature learned
from 1.0. A process imports its library (`import_s`), builds the agent, trains `--steps`
(`first_call_s`: tracing, compilation and the run), then trains the same again (`exec_s`:
everything compiled); `compile_s` is the difference. Ajax runs twice a round: with its
compile cache off (`ajax`, a cold process, the fair comparison) and again in a fresh
process over a cache that a first process filled (`ajax-warm`: what a second run of the
same settings, other seeds included, pays). Rounds alternate which library goes first.

    sac-64    two 64-unit relu layers for the actor and each critic
    sac-256   two 256-unit relu layers (SB3's default)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_speed import append_record  # noqa: E402
from workers import SOURCE, worker_env, worker_rows  # noqa: E402

OUT = Path(__file__).resolve().parent / "sbx_speed.jsonl"
RUNS = {"sac-64": 64, "sac-256": 256}
LIBRARIES = ("ajax", "ajax-warm", "sbx")


def measure(library: str, run: str, steps: int, calls: int = 2) -> dict[str, Any]:
    """In this process: import, build, train `calls` times (2: the first and an execution-only one)."""
    width = RUNS[run]
    start = time.perf_counter()
    if library == "sbx":
        import gymnasium as gym
        from sbx import SAC

        import_s = time.perf_counter() - start
        model = SAC(
            "MlpPolicy",
            gym.make("Pendulum-v1"),
            batch_size=256,
            learning_starts=100,
            policy_kwargs={"net_arch": [width, width]},
            seed=0,
        )

        def call() -> None:
            model.learn(total_timesteps=steps)
    else:
        import jax

        from ajax import SAC

        import_s = time.perf_counter() - start
        layers = (str(width), "relu", str(width), "relu")
        agent = SAC(
            "Pendulum-v1", batch_size=256, learning_starts=100, actor_architecture=layers, critic_architecture=layers
        )

        def call() -> None:
            jax.block_until_ready(agent.train(seed=0, n_timesteps=steps)[0])

    times = []
    for _ in range(calls):
        begin = time.perf_counter()
        call()
        times.append(time.perf_counter() - begin)
    if calls == 1:
        return {"library": library, "run": run, "first_call_s": round(times[0], 2)}
    first, second = times
    return {
        "library": library,
        "run": run,
        "steps": steps,
        "import_s": round(import_s, 2),
        "first_call_s": round(first, 2),
        "exec_s": round(second, 2),
        "compile_s": round(first - second, 2),
        "exec_steps_per_s": round(steps / second, 1),
    }


def in_fresh_process(python: str, library: str, run: str, steps: int, cache: Path) -> dict[str, Any]:
    """One measurement in a new interpreter; for `ajax-warm`, a process of its own first fills `cache`
    with the run's programs (once: later rounds find them there)."""
    command = [python, __file__, "--worker", library, run, "--steps", str(steps)]
    if library == "ajax-warm":
        cache_on = {"AJAX_NO_COMPILE_CACHE": "", "AJAX_JAX_COMPILE_CACHE_DIR": str(cache / run)}
        env = worker_env([SOURCE], JAX_PLATFORMS="cpu", **cache_on)
        if not (cache / run).exists():
            worker_rows([*command, "--calls", "1"], env, f"filling the cache for {run}")
    else:
        env = worker_env([SOURCE] if library == "ajax" else [], JAX_PLATFORMS="cpu")
    return worker_rows(command, env, f"{library} {run}")[-1]


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per run and library, medians over rounds; Ajax's ratios to SBX (above 1: Ajax ahead)."""
    table = []
    for run in dict.fromkeys(row["run"] for row in rows):
        medians = {}
        for library in LIBRARIES:
            mine = [row for row in rows if row["run"] == run and row["library"] == library]
            if mine:
                keys = ("import_s", "first_call_s", "exec_s", "compile_s")
                medians[library] = {key: statistics.median(row[key] for row in mine) for key in keys}
        sbx = medians["sbx"]
        line: dict[str, Any] = {"run": run, **medians}
        for library in ("ajax", "ajax-warm"):
            if library in medians:
                ajax = medians[library]
                line[f"{library}_execution_ratio"] = round(sbx["exec_s"] / ajax["exec_s"], 2)
                line[f"{library}_whole_call_ratio"] = round(sbx["first_call_s"] / ajax["first_call_s"], 2)
                whole_process = (sbx["import_s"] + sbx["first_call_s"]) / (ajax["import_s"] + ajax["first_call_s"])
                line[f"{library}_with_imports_ratio"] = round(whole_process, 2)
        table.append(line)
    return table


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sbx-python", help="the Python of a virtual environment that has SBX")
    parser.add_argument("--only", nargs="+", choices=RUNS, default=list(RUNS), help="which runs (default: both)")
    parser.add_argument("--steps", type=int, default=10_000, help="environment steps a call (default: 10,000)")
    parser.add_argument("--rounds", type=int, default=2, help="fresh processes per library and run (default: 2)")
    parser.add_argument("--out", type=Path, default=OUT, help="append the JSON line here (default: %(default)s)")
    parser.add_argument("--worker", nargs=2, metavar=("LIBRARY", "RUN"), help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=2, choices=(1, 2), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is None and args.sbx_python is None:
        parser.error("--sbx-python is required: the Python of a virtual environment with SBX installed.")
    if args.rounds < 1 or args.steps < 1_000:
        parser.error("--rounds must be positive and --steps at least 1,000 (updates start at step 100).")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker is not None:
        print(json.dumps(measure(*args.worker, args.steps, args.calls)))
        return 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="ajax-sbx-speed-") as cache:
        for round_index in range(args.rounds):
            for run in args.only:
                order = LIBRARIES if round_index % 2 == 0 else LIBRARIES[::-1]
                for library in order:
                    python = args.sbx_python if library == "sbx" else sys.executable
                    row = in_fresh_process(python, library, run, args.steps, Path(cache))
                    rows.append({**row, "round": round_index, "load_avg_1m": round(os.getloadavg()[0], 2)})
                    print(json.dumps(rows[-1]), flush=True)
    record = append_record(args.out, rows, summary(rows), rounds=args.rounds, steps=args.steps)
    for line in record["summary"]:
        print(
            f"{line['run']}: Ajax executes {line['ajax_execution_ratio']}x SBX's rate; whole call "
            f"{line['ajax_whole_call_ratio']}x cold, {line.get('ajax-warm_whole_call_ratio')}x over a warm "
            f"compile cache; compile {line['ajax']['compile_s']:.1f} s against {line['sbx']['compile_s']:.1f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
