"""Where a backend compile's time goes, pass by pass, for a run of `accelerator.py` at several seed counts.

Issue 58 found Ajax's programs compiling slower on the TPU as seeds grow (PPO 18 s at one
seed, 32 s at 64) while their HLO barely changes size. XLA reports no per-pass times, so each
seed count runs in a fresh process that dumps the module after every HLO pass
(`--xla_dump_hlo_pass_re=.*`): a pass's time is the gap between its dump's modification time
and the one before it (the dump's own writing included, alike for every pass), and the gap
from the last HLO dump to `after_codegen` is the code generation that follows the passes.
Each JSON row is one module at one seed count: its backend compile as JAX timed it, the sum
over the HLO passes, the code generation, and the slowest passes.

    python benchmarks/studies/compile_passes.py --run ppo --seeds 1 64 --out runs/passes.jsonl

The env-copy sweep found PPO's backend compile on the TPU growing with the copies of one seed
instead (11 s at 4 copies, 108 s at 4,096) while the CPU's stays at about 4 s; `--envs` profiles
one seed at each copy count, its steps grown with the copies as the sweep's budget is.

    python benchmarks/studies/compile_passes.py --run ppo --seeds --envs 4 1024 4096
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[1]  # the shared modules: accelerator, compile_spans, provenance
ROOT = BENCHMARKS.parent
# The programs a call to `train` compiles: its initial state and its run.
MODULES = "jit__lambda|jit_resume"
DUMP_NAME = re.compile(r"^module_(\d+)\.(\w+)\.[^.]+\.(.*)\.txt$")


def pass_times(dump: Path) -> list[dict[str, Any]]:
    """Each dumped module's passes, timed by the gaps between their dumps' modification times."""
    by_module: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
    for path in dump.iterdir():
        match = DUMP_NAME.match(path.name)
        if match:
            by_module[match[1], match[2]].append((path.stat().st_mtime_ns, match[3]))
    modules = []
    for (number, name), dumps in sorted(by_module.items()):
        dumps.sort()
        steps = [(stage, (now - before) / 1e9) for (before, _), (now, stage) in zip(dumps, dumps[1:], strict=False)]
        passes = [(stage, seconds) for stage, seconds in steps if ".after_" in stage or stage.startswith("after_")]
        codegen = sum(seconds for stage, seconds in steps if stage.endswith("after_codegen"))
        by_pass: dict[str, float] = defaultdict(float)
        for stage, seconds in passes:
            if not stage.endswith("after_codegen"):
                by_pass[re.sub(r"^\d+\.", "", stage)] += seconds
        slowest = sorted(by_pass.items(), key=lambda item: -item[1])[:12]
        modules.append(
            {
                "module": f"{number}.{name}",
                "dumps": len(dumps),
                "hlo_passes_s": round(sum(by_pass.values()), 3),
                "codegen_s": round(codegen, 3),
                "slowest_passes_s": {stage: round(seconds, 3) for stage, seconds in slowest},
            }
        )
    return modules


def worker(run_name: str, n_seeds: int, n_envs: int, n_timesteps: int) -> None:
    """Train the run once at `n_seeds` and `n_envs` and print the backend compiles JAX timed, in order."""
    sys.path.insert(0, str(BENCHMARKS))
    from accelerator import RUNS, build
    from compile_spans import STAGES, CompileSpans

    agent = build(RUNS[run_name], n_envs, n_timesteps)
    with CompileSpans() as spans:
        agent.train(seed=list(range(n_seeds)), n_timesteps=n_timesteps)
    compiles = [round(end - start, 3) for start, end in spans.by_event.get(STAGES["backend_compile_s"], [])]
    print(json.dumps({"backend_compiles_s": compiles}), flush=True)


def measure(run_name: str, n_seeds: int, n_envs: int, n_timesteps: int) -> dict[str, Any]:
    """One seed and copy count in a fresh process with the per-pass dump on; its modules' pass times."""
    with tempfile.TemporaryDirectory() as dump:
        flags = f"--xla_dump_to={dump} --xla_dump_hlo_pass_re=.* --xla_dump_hlo_module_re={MODULES}"
        env = {**os.environ, "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} {flags}".strip()}
        env["AJAX_NO_COMPILE_CACHE"] = "1"
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
        command = [sys.executable, __file__, "--worker", run_name, str(n_seeds), str(n_envs), str(n_timesteps)]
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{run_name} at {n_seeds} seeds x {n_envs} envs failed:\n{done.stderr[-3000:]}")
        timed = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("{")))
        return {"run": run_name, "n_seeds": n_seeds, "n_envs": n_envs, **timed, "modules": pass_times(Path(dump))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", default="ppo", help="a run of benchmarks/accelerator.py (default: ppo)")
    parser.add_argument("--seeds", type=int, nargs="*", default=[1, 64], help="seed counts (default: 1 64)")
    parser.add_argument("--envs", type=int, nargs="*", default=[], help="copy counts of one seed (default: none)")
    parser.add_argument("--steps", type=int, default=2_048, help="steps a seed at the run's copies (default: 2,048)")
    parser.add_argument("--out", type=Path, help="append the rows here")
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker[0], *(int(value) for value in args.worker[1:]))
        return 0
    sys.path.insert(0, str(BENCHMARKS))
    from accelerator import RUNS
    from provenance import git_commit, report_row

    run_envs = RUNS[args.run].n_envs
    points = [(n_seeds, run_envs) for n_seeds in args.seeds] + [(1, n_envs) for n_envs in args.envs]
    for n_seeds, n_envs in points:
        steps = args.steps * n_envs // run_envs  # the env sweep's rule: the run's iterations kept
        report_row({"commit": git_commit(), **measure(args.run, n_seeds, n_envs, steps)}, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
