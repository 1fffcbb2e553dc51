"""The world models' learning gate: does DreamerV3 learn CartPole on a CPU at a small preset?

Run by hand, never by the tests: at the defaults it trains for hours. It trains DreamerV3 on
gymnax CartPole-v1 at the reference's 1m model with 16 envs, sequences of 16 x 64 rows and
train ratio 512, the setting the reference itself was measured at on a CPU (a mean
evaluation of about 313 over rows 12k-24k on 5 seeds, about 70 minutes per seed on 14
cores). The seeds train as one compiled program (vmapped), evaluating every
`--eval-every` rows with `--num-episode-test` episodes of the mode policy on the posterior's
mode. The result is the mean of the evaluations whose timestep lies in the window (12,000 to
24,000 rows), over every seed; the check passes at the bar (156, half the reference's 313)
or above. One JSON line goes to `--out`: the machine, the settings, the hours, each seed's
window mean, the curve, the result and the verdict.

The buffer holds the whole run by default (the budget, rounded up to a multiple of
`--n-envs`): the reference's replay (5e6 rows) never evicts a row at this budget either,
and the agent's default of a million rows would cost 2.6 GB per seed for nothing.

    JAX_PLATFORMS=cpu python benchmarks/world_models/learning_checks.py
    python benchmarks/world_models/learning_checks.py --seeds 1 --train-ratio 32 --timesteps 300 \
        --n-envs 4 --batch-size 4 --batch-length 16 --eval-every 100 --window 100 300 --out /tmp/smoke.jsonl
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from ajax import DreamerV3
from ajax._compile_cache import cpu_model
from ajax.logging.wandb_logging import LoggingConfig

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "learning_checks.jsonl"
RETURN = "Eval/episodic mean reward"
ENV_ID = "CartPole-v1"
BAR = 156.0  # half the reference's 313 at this setting
REFERENCE = 313.0  # the reference's mean evaluation over rows 12k-24k, 5 seeds


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        return "unknown"
    return out.stdout.strip() or "unknown"


def machine() -> dict[str, Any]:
    """Where the hours were spent: they mean little without it."""
    return {
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "n_cpus": os.cpu_count(),
        "load_avg_1m": os.getloadavg()[0],
        "backend": jax.default_backend(),
        "jax": jax.__version__,
        "python": platform.python_version(),
    }


def window_means(timesteps: np.ndarray, returns: np.ndarray, window: tuple[int, int]) -> np.ndarray:
    """Each seed's mean evaluation over the evaluations made inside `window` (rows, both ends in)."""
    low, high = window
    inside = (timesteps[0] >= low) & (timesteps[0] <= high)
    if not inside.any():
        raise ValueError(f"No evaluation fell in rows {low}-{high}: lower --eval-every or move --window.")
    return returns[:, inside].mean(axis=1)


def run(args: argparse.Namespace) -> dict[str, Any]:
    n_timesteps = args.timesteps if args.timesteps is not None else args.window[1]
    buffer_size = args.buffer_size or -(-n_timesteps // args.n_envs) * args.n_envs
    settings = {
        "model_size": args.model_size,
        "n_envs": args.n_envs,
        "train_ratio": args.train_ratio,
        "batch_size": args.batch_size,
        "batch_length": args.batch_length,
        "buffer_size": buffer_size,
    }
    agent = DreamerV3(ENV_ID, **settings)
    seeds = list(range(args.seeds))
    started = time.perf_counter()
    state, evaluations = agent.train(
        seed=seeds,
        n_timesteps=n_timesteps,
        num_episode_test=args.num_episode_test,
        logging_config=LoggingConfig(log_frequency=args.eval_every),
    )
    jax.block_until_ready(state)
    wall = time.perf_counter() - started
    timesteps, returns = np.asarray(evaluations["timestep"]), np.asarray(evaluations[RETURN])
    filled = timesteps[0] >= 0
    per_seed = window_means(timesteps, returns, tuple(args.window))
    result = float(per_seed.mean())
    return {
        "check": f"DreamerV3:{ENV_ID}",
        "timestamp": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "machine": machine(),
        "settings": settings,
        "n_timesteps": n_timesteps,
        "seeds": seeds,
        "eval_every": args.eval_every,
        "num_episode_test": args.num_episode_test,
        "window": list(args.window),
        "n_updates": int(np.asarray(state.n_updates).reshape(-1)[0]),
        "hours": round(wall / 3600, 4),
        "hours_per_seed": round(wall / 3600 / len(seeds), 4),
        "seed_window_means": [round(float(x), 2) for x in per_seed],
        "result": round(result, 2),
        "bar": args.bar,
        "passed": bool(result >= args.bar),
        "reference": REFERENCE,
        "curve": {
            "timestep": [int(t) for t in timesteps[0][filled]],
            "mean": [round(float(x), 2) for x in returns[:, filled].mean(axis=0)],
        },
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1, trained together (default: 5)")
    parser.add_argument("--model-size", default="1m", help="DreamerV3's model_size (default: 1m)")
    parser.add_argument("--n-envs", type=int, default=16, help="env copies per seed (default: 16)")
    parser.add_argument("--train-ratio", type=float, default=512.0, help="replayed rows per collected row (512)")
    parser.add_argument("--batch-size", type=int, default=16, help="sequences per update (default: 16)")
    parser.add_argument("--batch-length", type=int, default=64, help="trained rows per sequence (default: 64)")
    parser.add_argument("--buffer-size", type=int, default=None, help="rows over all envs (default: the budget)")
    parser.add_argument("--timesteps", type=int, default=None, help="rows per seed (default: the window's end)")
    parser.add_argument("--eval-every", type=int, default=1_000, help="rows between evaluations (default: 1000)")
    parser.add_argument("--num-episode-test", type=int, default=10, help="episodes per evaluation (default: 10)")
    parser.add_argument(
        "--window",
        type=int,
        nargs=2,
        default=(12_000, 24_000),
        metavar=("START", "END"),
        help="rows averaged (default: 12000 24000)",
    )
    parser.add_argument("--bar", type=float, default=BAR, help=f"the mean the check asks for (default: {BAR:g})")
    parser.add_argument("--out", type=Path, default=OUT, help="append the JSON line here (default: %(default)s)")
    args = parser.parse_args(argv)
    low, high = args.window
    if not 0 <= low <= high:
        parser.error(f"--window {low} {high}: START must be at least 0 and at most END.")
    if args.timesteps is not None and args.timesteps < high:
        parser.error(f"--timesteps {args.timesteps} ends before the window's end, {high}.")
    if args.seeds < 1 or args.eval_every < 1:
        parser.error("--seeds and --eval-every must be positive.")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Exit code 0 when the check passes, 1 when it fails, so a script can chain on it."""
    args = parse_args(argv)
    row = run(args)
    print(json.dumps(row), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("a") as file:
        file.write(json.dumps(row) + "\n")
    low, high = row["window"]
    verdict = "PASS" if row["passed"] else "FAIL"
    print(
        f"{verdict}: mean evaluation {row['result']:.1f} over rows {low:,}-{high:,} (bar {row['bar']:g}), "
        f"{row['hours']:.3f} h; appended to {args.out}"
    )
    return 0 if row["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
