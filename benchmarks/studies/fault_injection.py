"""Kill `ajax train` and `ajax sweep` at random moments; every `--resume` must finish the same run.

Run by hand (minutes per kill on 2 cores); the counts go to docs/checkpoints.md. For each
command, an uninterrupted run fills the compile cache and a second gives the reference
files and its wall time (the trials read their programs from that cache); then each trial
starts the same command in a fresh process, kills it with SIGKILL after a moment drawn
uniformly over that wall time (so kills land in the imports, the compilation, the training,
the checkpoint and the final writes alike), notes what the folder held, runs `--resume`
(or, where the kill came before the folder held a run, the command again) and compares the
finished checkpoint and evaluations byte for byte with the reference. One JSON line per
command goes to `--out`: each trial's moment, phase, resume status and whether it matched.

    JAX_PLATFORMS=cpu python benchmarks/studies/fault_injection.py --trials 20
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "fault_injection.jsonl"
COMMANDS = {
    "train": ["train", "DQN", "CartPole-v1", "--timesteps", "8000", "--n-envs", "4", "--log-frequency", "1000"]
    + ["--param", "architecture=32,relu", "--seeds", "2"],
    "sweep": ["sweep", "DQN", "CartPole-v1", "--grid", "gamma=0.98,0.99", "--timesteps", "8000", "--n-envs", "4"]
    + ["--log-frequency", "1000", "--param", "architecture=32,relu", "--seeds", "2"],
}
COMPARED = ("checkpoint.ckpt", "evaluations.jsonl")


def ajax(*argv: str) -> subprocess.Popen:
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(ROOT / "src")}
    return subprocess.Popen(
        [sys.executable, "-m", "ajax.cli", *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )


def phase(folder: Path) -> str:
    """What the folder held when the kill came."""
    if not (folder / "config.json").exists():
        return "no run folder yet"
    if not (folder / "checkpoint.ckpt").exists():
        return "settings written, no checkpoint"
    if (folder / "learning_curve.png").exists() or (folder / "learning_curves.png").exists():
        return "finished"
    return "mid-run"


def trial(name: str, reference: Path, moment: float, work: Path) -> dict[str, Any]:
    folder = work / f"{name}-{moment:.2f}"
    process = ajax(*COMMANDS[name], "--out", str(folder))
    time.sleep(moment)
    process.send_signal(signal.SIGKILL)
    process.wait()
    held = phase(folder)
    again = ["--resume", str(folder)] if held != "no run folder yet" else [*COMMANDS[name][1:], "--out", str(folder)]
    resumed = ajax(name, *again)
    _, stderr = resumed.communicate()
    matched = resumed.returncode == 0 and all(
        (folder / file).read_bytes() == (reference / file).read_bytes() for file in COMPARED
    )
    shutil.rmtree(folder, ignore_errors=True)
    return {
        "moment_s": round(moment, 2),
        "phase": held,
        "resume_status": resumed.returncode,
        "matched": matched,
        "stderr_tail": stderr.decode()[-300:] if resumed.returncode else "",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--commands", nargs="+", choices=sorted(COMMANDS), default=sorted(COMMANDS))
    parser.add_argument("--seed", type=int, default=0, help="seeds the kill moments")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    draw = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="ajax-faults-"))
    for name in args.commands:
        # Twice: the first run fills the compile cache, which every trial then reads, so the
        # second run's wall time is the one the kill moments are drawn over.
        for reference in (work / f"{name}-warm-up", work / f"{name}-reference"):
            started = time.perf_counter()
            done = ajax(*COMMANDS[name], "--out", str(reference))
            _, stderr = done.communicate()
            if done.returncode != 0:
                raise RuntimeError(f"the uninterrupted {name} failed:\n{stderr.decode()[-2000:]}")
            wall = time.perf_counter() - started
        trials = []
        for _ in range(args.trials):
            trials.append(trial(name, reference, draw.uniform(0.0, wall), work))
            print(json.dumps({"command": name, **trials[-1]}), flush=True)
        record = {
            "timestamp": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "command": ["ajax", *COMMANDS[name]],
            "reference_wall_s": round(wall, 1),
            "trials": trials,
            "resumed": sum(t["resume_status"] == 0 for t in trials),
            "matched": sum(t["matched"] for t in trials),
            "phases": {p: sum(t["phase"] == p for t in trials) for p in sorted({t["phase"] for t in trials})},
        }
        with args.out.open("a") as out:
            out.write(json.dumps(record) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
