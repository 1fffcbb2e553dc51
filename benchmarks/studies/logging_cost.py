"""What a logging backend costs a run, and what the compile cache saves a second process.

The run: DQN on CartPole-v1, 4 envs, learning_starts 1,000, 2 seeds, `--timesteps` steps a
seed, evaluated (5 episodes) every `--log-frequency` steps. "Unlogged" has a LoggingConfig without
a backend (it evaluates and returns the same rows); "tensorboard" adds `use_tensorboard`.

    exec    one process, one agent: each variant's first call compiles its program, then
            the same calls are repeated `--repeats` times, the variants taking turns. Of a
            logged call, `close_s` is the wait for its worker once the program has finished
            (the worker's start-up and last writes), `run_s` the rest. Run it with the
            compile cache off, so that `compile_s` is a real compilation. A last row times
            a worker alone, started and closed with nothing to write.
    cache   the whole of a fresh process training the run: a cold cache (an empty
            directory) against a warm one (the directory the previous process filled).
            `wall_s` is the process, `train_s` its train() call.

    JAX_PLATFORMS=cpu AJAX_NO_COMPILE_CACHE=1 python benchmarks/studies/logging_cost.py exec
    JAX_PLATFORMS=cpu python benchmarks/studies/logging_cost.py cache
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SEEDS = [0, 1]
VARIANTS = ("unlogged", "tensorboard")


def timed_call(variant: str, timesteps: int, log_frequency: int, folder: str, agent: Any = None) -> dict[str, float]:
    """One train() call; for a logged one, the time its worker's `close` took as well."""
    from ajax import DQN
    from ajax.logging import worker
    from ajax.logging.wandb_logging import LoggingConfig

    agent = agent or DQN("CartPole-v1", n_envs=4, learning_starts=1_000)
    config = LoggingConfig(
        log_frequency=log_frequency, folder=folder, run_name=variant, use_tensorboard=variant == "tensorboard"
    )
    closing: list[float] = []
    close = worker.LoggingWorker.close

    def timed_close(self: worker.LoggingWorker, *args: Any) -> None:
        started = time.perf_counter()
        close(self, *args)
        closing.append(time.perf_counter() - started)

    worker.LoggingWorker.close = timed_close
    try:
        started = time.perf_counter()
        agent.train(seed=SEEDS, n_timesteps=timesteps, num_episode_test=5, logging_config=config)
        total = time.perf_counter() - started
    finally:
        worker.LoggingWorker.close = close
    return {"train_s": total, "close_s": sum(closing), "run_s": total - sum(closing)}


def exec_mode(args: argparse.Namespace) -> list[dict[str, Any]]:
    from ajax import DQN

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        agents = {variant: DQN("CartPole-v1", n_envs=4, learning_starts=1_000) for variant in VARIANTS}
        settings = (args.timesteps, args.log_frequency, folder)
        first = {variant: timed_call(variant, *settings, agents[variant]) for variant in VARIANTS}
        calls: dict[str, list[dict[str, float]]] = {variant: [] for variant in VARIANTS}
        for _ in range(args.repeats):
            for variant in VARIANTS:
                calls[variant].append(timed_call(variant, *settings, agents[variant]))
        for variant in VARIANTS:
            median = {key: statistics.median(call[key] for call in calls[variant]) for key in calls[variant][0]}
            rows.append(
                {
                    "mode": "exec",
                    "variant": variant,
                    "timesteps": args.timesteps,
                    "log_frequency": args.log_frequency,
                    "evaluations": args.timesteps // args.log_frequency,
                    "compile_s": first[variant]["train_s"] - median["train_s"],
                    **{f"median_{key}": value for key, value in median.items()},
                    "train_s_per_call": [round(call["train_s"], 3) for call in calls[variant]],
                    "run_s_per_call": [round(call["run_s"], 3) for call in calls[variant]],
                    "load_avg_1m": os.getloadavg()[0],
                }
            )
        rows.append({"mode": "exec", "variant": "worker alone", **worker_alone(folder, args.repeats)})
    return rows


def worker_alone(folder: str, repeats: int) -> dict[str, Any]:
    """A TensorBoard worker for two seeds started and closed at once: its start-up, exit included."""
    from ajax.logging.wandb_logging import LoggingConfig
    from ajax.logging.worker import LoggingWorker, worker_plan

    plan = worker_plan(LoggingConfig(folder=folder, run_name="alone", use_tensorboard=True), SEEDS)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        LoggingWorker(plan).close()
        times.append(time.perf_counter() - started)
    return {"median_s": statistics.median(times), "s_per_call": [round(t, 3) for t in times]}


def cache_mode(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    for variant in VARIANTS:
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as folder:
                env = {**os.environ, "AJAX_JAX_COMPILE_CACHE_DIR": cache, "AJAX_NO_COMPILE_CACHE": ""}
                for state in ("cold", "warm"):
                    command = [sys.executable, __file__, "one", variant, folder, str(args.timesteps)]
                    command.append(str(args.log_frequency))
                    started = time.perf_counter()
                    result = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
                    wall = time.perf_counter() - started
                    train = json.loads(result.stdout.strip().splitlines()[-1])["train_s"]
                    rows.append(
                        {
                            "mode": "cache",
                            "variant": variant,
                            "cache": state,
                            "wall_s": wall,
                            "train_s": train,
                            "load_avg_1m": os.getloadavg()[0],
                        }
                    )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("exec", "cache", "one"))
    parser.add_argument("rest", nargs="*", help=argparse.SUPPRESS)  # `one VARIANT FOLDER TIMESTEPS LOG_FREQUENCY`
    parser.add_argument("--timesteps", type=int, default=100_000)
    parser.add_argument("--log-frequency", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="append the rows to this JSON-lines file")
    args = parser.parse_args(argv)
    if args.mode == "one":  # a fresh process of `cache` mode
        variant, folder, timesteps, log_frequency = args.rest
        print(json.dumps(timed_call(variant, int(timesteps), int(log_frequency), folder)))
        return 0
    rows = exec_mode(args) if args.mode == "exec" else cache_mode(args)
    for row in rows:
        print(json.dumps(row))
    if args.out is not None:
        with args.out.open("a") as file:
            file.writelines(json.dumps(row) + "\n" for row in rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
