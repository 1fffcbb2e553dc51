"""The world models' learning checks: does DreamerV3 learn on a CPU at a small preset?

Run by hand, never by the tests. Each named check (`--check`) trains DreamerV3 on one gymnax
task on several seeds as one compiled program (the seeds vmapped), evaluating every
`--eval-every` rows with `--num-episode-test` episodes of the mode policy on the posterior's
mode (with `--sampled-evaluation`, of sampled actions on a sampled posterior, as the reference
evaluates). A seed's score is its mean evaluation over the window's rows; the row also
carries the interquartile mean of those scores over seeds and its 95% bootstrap interval
(`benchmarks/intervals.py`). One JSON line goes to `--out`: the machine, the settings, the
minutes, each seed's window mean and curve, the result and the verdict.

- `catch` (the default): Catch-bsuite, the 1m model, 4 envs, 8 x 16 sequences, train ratio
  128 (one update per row, the rate of the reference's bsuite setting), 5,000 rows. Bar: a
  mean of +0.5 over rows 4k-5k (a random policy scores about -0.6, the optimum +1).
- `cartpole-small`: CartPole-v1 at the same settings, 10,000 rows, window 8k-10k.
- `pendulum-small`: Pendulum-v1 (continuous actions) at the same settings, 10,000 rows.
- `cartpole`: the first gate: CartPole-v1 with 16 envs, 16 x 64 sequences and train ratio 512,
  the setting the reference itself was measured at on a CPU (a mean of about 313 over rows
  12k-24k on 5 seeds, about 70 minutes per seed on 14 cores); bar 156, half of that.

Every other setting (learning rate, warm-up, imagination horizon, lambda, entropy) is the
agent's default, the reference's, unless given. The buffer holds the whole run (the budget,
rounded up to a multiple of the env count): the reference's replay (5e6 rows) never evicts
at these budgets either.

    JAX_PLATFORMS=cpu python benchmarks/world_models/learning_checks.py --check catch --seeds 3
    python benchmarks/world_models/learning_checks.py --check catch --seeds 1 --timesteps 300 \
        --eval-every 100 --window 100 300 --out /tmp/smoke.jsonl --table-out /tmp/smoke_table.jsonl
    python benchmarks/world_models/learning_checks.py --check cartpole --seeds 5 \
        --checkpoint-dir /tmp/gate --minutes 8      # on an accelerator: rerun until the row is written

With `--checkpoint-dir` the run trains one evaluation period a call, checkpointing the state
and keeping the evaluations after each, and `--minutes` stops it between calls (exit code 2):
a run longer than an accelerator's call limit spans several commands, as one run. The gate's
state with its replay is 350 MB, 3.6 to 4 s to write on the TPU host against 16 s for a call:
`--save-minutes M` checkpoints only once M minutes have passed since the last checkpoint,
and where the command stops or the run ends.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # this folder's shared modules

from chunks import (  # noqa: E402
    Chunk,
    Clock,
    add_evaluations,
    add_save_minutes,
    fresh_progress,
    open_checkpoint,
    timed_chunk,
    train_in_chunks,
)

from ajax import DreamerV3  # noqa: E402
from ajax._compile_cache import cpu_model  # noqa: E402
from ajax.logging.wandb_logging import LoggingConfig  # noqa: E402
from intervals import iqm, iqm_interval, learning_summary  # noqa: E402
from provenance import append_row, git_commit, machine_name  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "learning_checks.jsonl"
TABLE = ROOT / "benchmarks" / "learning_checks.jsonl"  # the learning table every agent's rows join
RETURN = "Eval/episodic mean reward"


@dataclass(frozen=True)
class WorldModelCheck:
    """One check: a task, DreamerV3's settings for it, the budget, the window scored and its bar."""

    env_id: str
    settings: dict[str, Any]
    timesteps: int
    window: tuple[int, int]
    bar: float
    eval_every: int
    num_episode_test: int
    reference: float | None = None  # the reference's own result at this setting, where measured


# One update per row: 8 x 16 rows replayed per 128 collected, 4 envs (the reference's bsuite rate).
SMALL = {"model_size": "1m", "n_envs": 4, "train_ratio": 128.0, "batch_size": 8, "batch_length": 16}
CHECKS = {
    "catch": WorldModelCheck("Catch-bsuite", SMALL, 5_000, (4_000, 5_000), 0.5, 250, 20),
    "cartpole-small": WorldModelCheck("CartPole-v1", SMALL, 10_000, (8_000, 10_000), 100.0, 500, 10),
    "pendulum-small": WorldModelCheck("Pendulum-v1", SMALL, 10_000, (8_000, 10_000), -800.0, 500, 10),
    "cartpole": WorldModelCheck(
        "CartPole-v1",
        {"model_size": "1m", "n_envs": 16, "train_ratio": 512.0, "batch_size": 16, "batch_length": 64},
        24_000,
        (12_000, 24_000),
        156.0,  # half the reference's 313 at this setting
        1_000,
        10,
        reference=313.0,
    ),
}


def machine() -> dict[str, Any]:
    """Where the hours were spent: they mean little without it."""
    return {
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "n_cpus": os.cpu_count(),
        "load_avg_1m": os.getloadavg()[0],
        "backend": jax.default_backend(),
        "device": jax.devices()[0].device_kind,
        "jax": jax.__version__,
        "python": platform.python_version(),
    }


DIAGNOSED = ("world_model/", "behaviour/")  # the logged losses and statistics a row keeps


def window_means(timesteps: np.ndarray, returns: np.ndarray, window: tuple[int, int]) -> np.ndarray:
    """Each seed's mean evaluation over the evaluations made inside `window` (rows, both ends in)."""
    low, high = window
    inside = (timesteps[0] >= low) & (timesteps[0] <= high)
    if not inside.any():
        raise ValueError(f"No evaluation fell in rows {low}-{high}: lower --eval-every or move --window.")
    return returns[:, inside].mean(axis=1)


# What a checkpoint was made with, and the flags that set each.
FLAGS = {
    "check": "--check",
    "settings": "the settings' flags (--n-envs, --train-ratio, ..., --buffer-size)",
    "seeds": "--seeds or --first-seed",
    "n_timesteps": "--timesteps",
    "eval_every": "--eval-every",
    "num_episode_test": "--num-episode-test",
}


def train(
    agent: DreamerV3, identity: dict[str, Any], checkpoint_dir: Path | None, clock: Clock
) -> tuple[Any, dict[str, np.ndarray], float] | None:
    """The run `identity` describes: one call, or with `checkpoint_dir` one evaluation period a
    call, checkpointed there (`benchmarks/world_models/chunks.py`) so that a run longer than an
    accelerator's call limit spans several commands. Returns the state, the evaluations as one
    call returns them (seeds by evaluations) and the seconds of the training calls of every
    command together; None when `clock`'s minutes ran out first.
    """
    identity = json.loads(json.dumps(identity))  # as the progress file reads it back
    checkpoint, progress = open_checkpoint(checkpoint_dir, identity["check"], identity, FLAGS, "learning_checks.py")
    progress = progress or fresh_progress(identity, seconds=0.0, evaluations={})
    options = {
        "seed": identity["seeds"],
        "total_timesteps": identity["n_timesteps"],
        "num_episode_test": identity["num_episode_test"],
        "logging_config": LoggingConfig(log_frequency=identity["eval_every"]),
    }

    def call(**kwargs: Any) -> Chunk:
        """One `train` call, its compile apart from its execution (so a chunk's line says which)."""
        return timed_chunk(lambda: agent.train(**options, **kwargs))[0]

    def record(progress: dict[str, Any], chunk: Chunk) -> None:
        add_evaluations(progress, chunk.evaluations, len(identity["seeds"]))
        progress["seconds"] += chunk.compile_s + chunk.exec_s

    state = train_in_chunks(
        call,
        progress,
        identity["n_timesteps"],
        identity["eval_every"],
        clock,
        checkpoint,
        agent,
        record,
        identity["check"],
    )
    if state is None:
        return None
    evaluations = {name: np.asarray(values) for name, values in progress["evaluations"].items()}
    return state, evaluations, progress["seconds"]


def run(args: argparse.Namespace) -> dict[str, Any] | None:
    check = CHECKS[args.check]
    window = tuple(args.window) if args.window is not None else check.window
    n_timesteps = args.timesteps if args.timesteps is not None else window[1]
    eval_every = args.eval_every or check.eval_every
    num_episode_test = args.num_episode_test or check.num_episode_test
    bar = args.bar if args.bar is not None else check.bar
    settings = dict(check.settings)
    overridable = ("n_envs", "train_ratio", "batch_size", "batch_length", "learning_rate", "warmup_updates")
    for name in (*overridable, "actor_entropy", "representation_scale", "free_nats"):
        if getattr(args, name) is not None:
            settings[name] = getattr(args, name)
    if args.sampled_evaluation:
        settings["sampled_evaluation"] = True
    settings["buffer_size"] = args.buffer_size or -(-n_timesteps // settings["n_envs"]) * settings["n_envs"]
    agent = DreamerV3(check.env_id, **settings)
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    identity = {"check": args.check, "settings": settings, "seeds": seeds, "n_timesteps": n_timesteps}
    identity |= {"eval_every": eval_every, "num_episode_test": num_episode_test}
    trained = train(agent, identity, args.checkpoint_dir, Clock(args.minutes, args.save_minutes))
    if trained is None:
        return None
    state, evaluations, wall = trained
    timesteps, returns = np.asarray(evaluations["timestep"]), np.asarray(evaluations[RETURN])
    filled = timesteps[0] >= 0
    per_seed = window_means(timesteps, returns, window)
    result = float(per_seed.mean())
    interval = iqm_interval(per_seed)
    logged = {name: np.asarray(values)[:, filled] for name, values in evaluations.items() if name.startswith(DIAGNOSED)}
    diagnostics = {name: [round(float(x), 4) for x in values.mean(axis=0)] for name, values in logged.items()}
    # Each seed's own, so a seed's dip in return can be read beside its own entropy and scale.
    per_seed_diagnostics = {
        name: [[round(float(x), 4) for x in seed] for seed in values] for name, values in logged.items()
    }
    return {
        "check": f"DreamerV3:{check.env_id}",
        "name": args.check,
        "timestamp": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "machine": machine(),
        "settings": settings,
        "n_timesteps": n_timesteps,
        "seeds": seeds,
        "eval_every": eval_every,
        "num_episode_test": num_episode_test,
        "window": list(window),
        "n_updates": int(np.asarray(state.n_updates).reshape(-1)[0]),
        "minutes": round(wall / 60, 2),
        "minutes_per_seed": round(wall / 60 / len(seeds), 2),
        "seed_window_means": [round(float(x), 3) for x in per_seed],
        "result": round(result, 3),
        "iqm": round(iqm(per_seed), 3),
        "iqm_ci": None if interval is None else [round(x, 3) for x in interval],
        "bar": bar,
        "passed": bool(result >= bar),
        "reference": check.reference,
        "curve": {
            "timestep": [int(t) for t in timesteps[0][filled]],
            "mean": [round(float(x), 3) for x in returns[:, filled].mean(axis=0)],
            "per_seed": [[round(float(x), 3) for x in seed] for seed in returns[:, filled]],
        },
        "diagnostics": diagnostics,
        "diagnostics_per_seed": per_seed_diagnostics,
    }


def table_row(row: dict[str, Any]) -> dict[str, Any]:
    """The check as a row of the learning table (`benchmarks/learning_checks.py --table`).

    The table scores each seed by its last evaluations, as it does every agent's; this
    script's own verdict, the window mean, stays in its full row.
    """
    per_seed = np.asarray(row["curve"]["per_seed"])
    finals = per_seed[:, -1]
    check = CHECKS[row["name"]]
    backend = row["machine"]["backend"]
    name = machine_name(backend, row["machine"].get("device", backend.upper()))
    changed = [
        f"{name}={value:g}" if isinstance(value, int | float) and not isinstance(value, bool) else f"{name}={value}"
        for name, value in row["settings"].items()
        if name != "buffer_size" and check.settings.get(name) != value
    ]
    if row["n_timesteps"] != check.timesteps:
        changed.append(f"{row['n_timesteps']:,} rows")
    if row["seeds"][0] != 0:  # held-out seeds: the table must not read as the same run twice
        changed.append(f"seeds {row['seeds'][0]}-{row['seeds'][-1]}")
    return {
        "agent": "DreamerV3",
        "env_id": row["check"].split(":", 1)[1],
        "settings": f"check {row['name']}" + (f" ({', '.join(changed)})" if changed else ""),
        "n_timesteps": row["n_timesteps"],
        "seeds": row["seeds"],
        "num_episode_test": row["num_episode_test"],
        "final_returns": [round(float(x), 2) for x in finals],
        "mean": round(float(finals.mean()), 2),
        "std": round(float(finals.std()), 2),
        "published": None,
        "target": None,
        "seeds_at_target": None,
        "curve": row["curve"],
        **learning_summary(per_seed),
        "wall_s": round(row["minutes"] * 60, 1),
        **({} if name is None else {"machine": name}),
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", choices=sorted(CHECKS), default="catch", help="which check (default: catch)")
    parser.add_argument("--seeds", type=int, default=3, help="how many seeds, trained together (default: 3)")
    parser.add_argument("--first-seed", type=int, default=0, help="the first seed (default: 0)")
    parser.add_argument("--n-envs", type=int, default=None, help="env copies per seed (default: the check's)")
    parser.add_argument("--train-ratio", type=float, default=None, help="replayed rows per collected row")
    parser.add_argument("--batch-size", type=int, default=None, help="sequences per update")
    parser.add_argument("--batch-length", type=int, default=None, help="trained rows per sequence")
    parser.add_argument("--learning-rate", type=float, default=None, help="default: the agent's (4e-5)")
    parser.add_argument("--warmup-updates", type=int, default=None, help="default: the agent's (1000)")
    parser.add_argument("--actor-entropy", type=float, default=None, help="default: the agent's (3e-4)")
    parser.add_argument("--representation-scale", type=float, default=None, help="default: the agent's (0.1)")
    parser.add_argument("--free-nats", type=float, default=None, help="default: the agent's (1.0)")
    parser.add_argument(
        "--sampled-evaluation",
        action="store_true",
        help="evaluate on sampled latents and actions, as the reference does (default: their modes)",
    )
    parser.add_argument("--buffer-size", type=int, default=None, help="rows over all envs (default: the budget)")
    parser.add_argument("--timesteps", type=int, default=None, help="rows per seed (default: the window's end)")
    parser.add_argument("--eval-every", type=int, default=None, help="rows between evaluations")
    parser.add_argument("--num-episode-test", type=int, default=None, help="episodes per evaluation")
    parser.add_argument("--window", type=int, nargs=2, default=None, metavar=("START", "END"), help="rows averaged")
    parser.add_argument("--bar", type=float, default=None, help="the mean the check asks for")
    parser.add_argument(
        "--checkpoint-dir", type=Path, help="train an evaluation period a call, resumable from here (a long run)"
    )
    parser.add_argument("--minutes", type=float, help="with --checkpoint-dir: start no call after this many minutes")
    add_save_minutes(parser)
    parser.add_argument("--out", type=Path, default=OUT, help="append the JSON line here (default: %(default)s)")
    parser.add_argument(
        "--table-out", type=Path, default=TABLE, help="append the learning table's row here (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    if args.window is not None:
        low, high = args.window
        if not 0 <= low <= high:
            parser.error(f"--window {low} {high}: START must be at least 0 and at most END.")
    high = (args.window or CHECKS[args.check].window)[1]
    if args.timesteps is not None and args.timesteps < high:
        parser.error(f"--timesteps {args.timesteps} ends before the window's end, {high}.")
    if (args.minutes is not None or args.save_minutes) and args.checkpoint_dir is None:
        parser.error("--minutes and --save-minutes act between calls, so they need --checkpoint-dir.")
    if args.save_minutes < 0:
        parser.error("--save-minutes cannot be negative.")
    if args.seeds < 1 or (args.eval_every is not None and args.eval_every < 1):
        parser.error("--seeds and --eval-every must be positive.")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Exit code 0 when the check passes, 1 when it fails, so a script can chain on it."""
    args = parse_args(argv)
    row = run(args)
    if row is None:  # stopped between calls; the next command resumes it
        return 2
    print(json.dumps(row), flush=True)
    append_row(args.out, row)
    append_row(args.table_out, table_row(row))
    low, high = row["window"]
    verdict = "PASS" if row["passed"] else "FAIL"
    print(
        f"{verdict}: mean evaluation {row['result']:.2f} over rows {low:,}-{high:,} (bar {row['bar']:g}), "
        f"IQM {row['iqm']:.2f} {row['iqm_ci']}, {row['minutes']:.1f} min; appended to {args.out}"
    )
    return 0 if row["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
