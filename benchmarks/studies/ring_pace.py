"""Does DreamerV3's replay ring set its update pace on an accelerator, and at how many seeds?

On the TPU v5e (2026-12-07, code at 34ef419) the CartPole gate of
`benchmarks/world_models/learning_checks.py` (five seeds, a 24,000-row horizon) stalled at its
first chunk with updates: about 500 updates unfinished after eight minutes, where a one-call
run of the same settings to 4,000 rows had made its 977 in well under a minute, and seeds 0-4
had run the whole gate in 7.2 minutes at d618dde. A run shorter than `buffer_size` allocates
only the rows it writes (`replay_capacity`), so that short run's rings held 250 rows an env
copy where the gate's hold 1,500: the ring's size was never the same in the two. Since
d618dde the rings' row writes became one slice update over all the seeds (`ajax.lockstep`),
while DreamerV3 still writes its trained latents back at each seed's own sampled rows.
What the TPU answered (rows in ring_pace.jsonl): at five seeds the 1,500-row rings stalled
only with both writes on the entries' ring; `row_collector.write_rows` now writes that leaf
per seed.

This study holds the gate's settings and horizon (the 1m model, 16 envs, 16 x 64 sequences,
train ratio 512, 24,000 rows) and varies the seeds and `buffer_size`: each configuration in a
fresh process, a first call to `--warmup` rows (training starts at 2,048), then a timed call
of `--rows` more, its updates a second; `--eval-every` compiles and runs the gate's evaluations
too (the program the gate runs). `--source` runs another checkout's Ajax in the
workers (its `src` folder), to set a commit beside another on the same chip. A worker past
`--limit` seconds is stopped and its row says so.

    python benchmarks/studies/ring_pace.py --seeds 1 5 --buffer-sizes 4000 24000
    python benchmarks/studies/ring_pace.py --seeds 5 --buffer-sizes 24000 --source /tmp/old/src
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[1]
ROOT = BENCHMARKS.parent
sys.path.insert(0, str(BENCHMARKS))

HORIZON = 24_000  # the gate's rows a seed
GATE = {"model_size": "1m", "n_envs": 16, "train_ratio": 512.0, "batch_size": 16, "batch_length": 64}


def measure(
    n_seeds: int, buffer_size: int, warmup: int, rows: int, settings: dict[str, Any], eval_every: int | None = None
) -> dict[str, Any]:
    """One configuration: the timed call's updates a second, after a first call to `warmup` rows;
    with `eval_every`, the gate's evaluations (10 episodes) compiled into the program and run."""
    import jax
    import numpy as np

    from ajax import DreamerV3
    from ajax.logging.wandb_logging import LoggingConfig

    agent = DreamerV3("CartPole-v1", **settings, buffer_size=buffer_size)
    logged = {"logging_config": None if eval_every is None else LoggingConfig(log_frequency=eval_every)}

    def updates(state: Any) -> int:
        return int(np.asarray(state.n_updates).reshape(-1)[0])

    began = time.perf_counter()
    state, _ = agent.train(seed=list(range(n_seeds)), n_timesteps=warmup, total_timesteps=HORIZON, **logged)
    jax.block_until_ready(state)
    first_call_s = time.perf_counter() - began
    before = updates(state)
    began = time.perf_counter()
    state, _ = agent.train(initial_state=state, n_timesteps=rows, total_timesteps=HORIZON, **logged)
    jax.block_until_ready(state)
    timed_s = time.perf_counter() - began
    made = updates(state) - before
    ring = np.asarray(state.collector_state.buffer_state.is_first).shape[-1]
    return {
        "n_seeds": n_seeds,
        "buffer_size": buffer_size,
        "ring_rows_per_env": int(ring),
        "settings": settings,
        "eval_every": eval_every,
        "first_call_s": round(first_call_s, 2),
        "timed_s": round(timed_s, 3),
        "updates": made,
        "updates_per_s": round(made / timed_s, 2),
        "backend": jax.default_backend(),
        "device_kind": jax.devices()[0].device_kind,
        "jax": jax.__version__,
    }


def in_fresh_processes(args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    """Each configuration's row, measured in a process of its own (its program compiled there)."""
    from provenance import git_commit
    from workers import SOURCE, worker_env

    env = worker_env([BENCHMARKS, args.source or SOURCE])
    commit = git_commit() if args.source is None else archived_commit(args.source)
    for n_seeds in args.seeds:
        for buffer_size in args.buffer_sizes:
            yield {"commit": commit, **configuration(n_seeds, buffer_size, args, env)}


def archived_commit(source: Path) -> str:
    """The commit of another checkout's `source` folder, as `git archive` stamped it beside it
    (`benchmarks/archive_commit`), or the folder's path where it was not stamped."""
    stamp = source.resolve().parent / "benchmarks" / "archive_commit"
    text = stamp.read_text().strip() if stamp.is_file() else ""
    return text if text and not text.startswith("$Format") else f"source at {source}"


def configuration(n_seeds: int, buffer_size: int, args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    """One configuration's row from its worker, or where the worker ran past `--limit` a row saying so."""
    from workers import worker_rows

    command = [sys.executable, __file__, "--worker", str(n_seeds), str(buffer_size)]
    command += ["--warmup", str(args.warmup), "--rows", str(args.rows), "--settings", json.dumps(args.settings)]
    command += [] if args.eval_every is None else ["--eval-every", str(args.eval_every)]
    try:
        return worker_rows(command, env, f"{n_seeds} seeds, buffer_size {buffer_size}", timeout=args.limit)[-1]
    except TimeoutError:
        return {"n_seeds": n_seeds, "buffer_size": buffer_size, "timed_out": True, "limit_s": args.limit}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 5], help="seed counts (default: 1 5)")
    parser.add_argument("--buffer-sizes", type=int, nargs="+", default=[4_000, HORIZON], help="rows over all envs")
    parser.add_argument("--warmup", type=int, default=2_112, help="rows of the first call (default: 2,112)")
    parser.add_argument("--rows", type=int, default=1_024, help="rows of the timed call (default: 1,024)")
    parser.add_argument("--limit", type=float, default=150.0, help="seconds a configuration may take (default: 150)")
    parser.add_argument("--source", type=Path, help="another checkout's src folder, for its Ajax in the workers")
    parser.add_argument("--settings", type=json.loads, default=GATE, help="DreamerV3's keywords (default: the gate's)")
    parser.add_argument("--eval-every", type=int, help="evaluate every this many rows, as the gate (1000) does")
    parser.add_argument("--out", type=Path, help="append the rows here as JSON lines")
    parser.add_argument("--worker", nargs=2, type=int, metavar=("SEEDS", "BUFFER_SIZE"), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker is not None:
        print(json.dumps(measure(*args.worker, args.warmup, args.rows, args.settings, args.eval_every)), flush=True)
        return 0
    from provenance import report_row

    for row in in_fresh_processes(args):
        report_row(row, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
