"""Ajax and SBX on the same Gymnasium environments with the same hyperparameters: speed and returns.

A user who has Gymnasium envs and SBX today should be able to move to Ajax and get the same
learning, at least as fast, and faster with several seeds. This script trains both on the
same Gymnasium envs (Ajax through `"gymnasium:<id>"`, stepped on the host from inside its
compiled run), each in its own fresh process, the libraries taking turns. SBX is never a
dependency of Ajax: install it in a throwaway virtual environment and pass its Python.

    python -m venv /tmp/sbx-venv
    /tmp/sbx-venv/bin/pip install torch==2.13.0 sbx-rl==0.28.0 jax==0.10.2 "gymnasium[mujoco]==1.3.0"
    JAX_PLATFORMS=cpu python benchmarks/gymnasium_peers.py --sbx-python /tmp/sbx-venv/bin/python

Each run trains `--seeds` seeds: SBX one after another (it trains one seed per model), Ajax
in one call (the seeds vmapped), then again for one seed alone. A process trains twice: the
first call includes tracing and compilation (`first_call_s`), the second is the same work
with everything compiled (`exec_s`); `--calls 1` keeps only the first, for long runs.
Returns are each seed's mean over 10 deterministic episodes at the end. Steps per second
count every seed's environment steps.

    sac-pendulum     SAC, Pendulum-v1, 20,000 steps (the RL Zoo's budget), learning rate 1e-3
                     (the Zoo's), two 256-unit relu layers, batch 256, updates from step 1,000.
    sac-halfcheetah  SAC, HalfCheetah-v5, 50,000 steps, SB3's defaults (learning rate 3e-4,
                     two 256-unit layers, batch 256), updates from step 10,000 (the Zoo's).
    tqc-pendulum     TQC, Pendulum-v1, 20,000 steps, the Zoo's preset: sb3-contrib's defaults (2
                     critics of 25 quantiles, 2 dropped each, two 256-unit relu layers, batch
                     256, updates from step 100) with learning rate 1e-3.
    crossq-pendulum  CrossQ, Pendulum-v1, 20,000 steps, the paper's settings (learning rate 1e-3,
                     Adam b1 0.5, actor and temperature every 3rd update, batch renormalisation
                     with momentum 0.99 after 100,000 passes) but for a 256-256 critic and
                     updates from step 1,000: the learning table's CrossQ row.
    ppo-cartpole     PPO, CartPole-v1, 100,000 steps, the Zoo's settings (8 envs x 32 steps,
                     20 epochs of 256, lambda 0.8, gamma 0.98, learning rate 1e-3, no entropy
                     bonus), two 64-unit tanh layers.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the sibling benchmark modules, imported where needed
OUT = HERE / "gymnasium_peers.jsonl"
EPISODES = 10


RUNS: dict[str, dict[str, Any]] = {
    "sac-pendulum": {"agent": "SAC", "env": "Pendulum-v1", "steps": 20_000, "lr": 1e-3, "starts": 1_000},
    "sac-halfcheetah": {"agent": "SAC", "env": "HalfCheetah-v5", "steps": 50_000, "lr": 3e-4, "starts": 10_000},
    "tqc-pendulum": {"agent": "TQC", "env": "Pendulum-v1", "steps": 20_000, "lr": 1e-3, "starts": 100},
    "crossq-pendulum": {"agent": "CrossQ", "env": "Pendulum-v1", "steps": 20_000, "lr": 1e-3, "starts": 1_000},
    "ppo-cartpole": {"agent": "PPO", "env": "CartPole-v1", "steps": 100_000, "lr": 1e-3},
}
PPO_SETTINGS = {"n_envs": 8, "n_steps": 32, "batch_size": 256, "n_epochs": 20, "gae_lambda": 0.8, "gamma": 0.98}


def ajax_train(run: str, seeds: list[int]) -> list[float]:
    """Train Ajax on `run` for every seed in one call; each seed's final mean return."""
    import numpy as np

    from ajax import PPO
    from ajax.agents.registry import AGENTS

    spec = RUNS[run]
    env_id = "gymnasium:" + spec["env"]
    if spec["agent"] != "PPO":
        relu = ("256", "relu", "256", "relu")
        # CrossQ keeps its own Adam b1 and policy delay; TQC keeps sb3-contrib's quantiles.
        extra = {"n_critics": 2} if spec["agent"] == "TQC" else {}
        agent = AGENTS[spec["agent"]](
            env_id,
            **extra,
            actor_learning_rate=spec["lr"],
            critic_learning_rate=spec["lr"],
            alpha_learning_rate=spec["lr"],
            actor_architecture=relu,
            critic_architecture=relu,
            learning_starts=spec["starts"],
            batch_size=256,
        )
    else:
        tanh = ("64", "tanh", "64", "tanh")
        agent = PPO(
            env_id,
            **PPO_SETTINGS,
            actor_learning_rate=spec["lr"],
            critic_learning_rate=spec["lr"],
            ent_coef=0.0,
            clip_range=0.2,
            actor_architecture=tanh,
            critic_architecture=tanh,
        )
    # Trained, then evaluated where the run ends, as SBX's side is: an evaluation logged in the
    # run lands on a log_frequency boundary, which PPO's whole rollouts may pass without meeting.
    state, _ = agent.train(seed=seeds, n_timesteps=spec["steps"])
    returns = np.asarray(agent.evaluate(state, num_episode_test=EPISODES)["Eval/episodic mean reward"])
    return [float(r) for r in returns]


def sbx_train(run: str, seeds: list[int]) -> list[float]:
    """Train SBX on `run`, one seed after another; each seed's final mean return."""
    import gymnasium
    import sbx
    from sbx import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy

    spec = RUNS[run]
    finals = []
    for seed in seeds:
        if spec["agent"] != "PPO":
            model = getattr(sbx, spec["agent"])(
                "MlpPolicy",
                spec["env"],
                learning_rate=spec["lr"],
                learning_starts=spec["starts"],
                batch_size=256,
                policy_kwargs={"net_arch": [256, 256]},
                seed=seed,
            )
        else:
            settings = {k: v for k, v in PPO_SETTINGS.items() if k != "n_envs"}
            env = make_vec_env(spec["env"], n_envs=PPO_SETTINGS["n_envs"], seed=seed)
            model = PPO(
                "MlpPolicy",
                env,
                **settings,
                learning_rate=spec["lr"],
                ent_coef=0.0,
                clip_range=0.2,
                policy_kwargs={"net_arch": [64, 64]},
                seed=seed,
            )
        model.learn(total_timesteps=spec["steps"])
        mean, _ = evaluate_policy(model, gymnasium.make(spec["env"]), n_eval_episodes=EPISODES, deterministic=True)
        finals.append(float(mean))
    return finals


def worker(library: str, run: str, seeds: list[int], calls: int = 2) -> dict[str, Any]:
    """The same training `calls` times in this process: the first compiles, a second only runs."""
    train = ajax_train if library == "ajax" else sbx_train
    started = time.perf_counter()
    finals = train(run, seeds)
    first = time.perf_counter() - started
    steps = RUNS[run]["steps"] * len(seeds)
    row = {
        "library": library,
        "run": run,
        "seeds": seeds,
        "first_call_s": round(first, 2),
        "steps_per_s_first_call": round(steps / first, 1),
        "final_returns": [round(x, 1) for x in finals],
    }
    if calls > 1:
        started = time.perf_counter()
        train(run, seeds)
        again = time.perf_counter() - started
        row |= {
            "exec_s": round(again, 2),
            "compile_s": round(first - again, 2),
            "steps_per_s_exec": round(steps / again, 1),
        }
    return row


def in_fresh_process(python: str, library: str, run: str, seeds: list[int], calls: int = 2) -> dict[str, Any]:
    """One measurement in a new interpreter, so no compiled program or cache carries over."""
    from workers import SOURCE, worker_env, worker_rows

    command = [python, __file__, "--worker", library, run, ",".join(map(str, seeds)), "--calls", str(calls)]
    env = worker_env([SOURCE] if library == "ajax" else [], JAX_PLATFORMS="cpu")
    return worker_rows(command, env, f"{library} {run}")[-1]


def versions(python: str) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json; "
        "print(json.dumps({p: m.version(p) for p in ('sbx-rl', 'stable_baselines3', 'jax', 'flax', 'torch', "
        "'gymnasium')}))"
    )
    return json.loads(subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sbx-python", default=None, help="the Python of a virtual environment with SBX installed")
    parser.add_argument("--runs", nargs="+", choices=sorted(RUNS), default=list(RUNS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--calls", type=int, default=2, help="trainings per process: 1 skips the execution-only one")
    parser.add_argument("--worker", nargs=3, metavar=("LIBRARY", "RUN", "SEEDS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        library, run, seeds = args.worker
        print(json.dumps(worker(library, run, [int(s) for s in seeds.split(",")], args.calls)))
        return 0
    if args.sbx_python is None:
        parser.error("--sbx-python is required: the Python of a virtual environment with SBX installed")
    seeds = list(range(args.seeds))
    record = {
        "timestamp": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip(),
        "n_cpus": os.cpu_count(),
        "load_avg_1m": os.getloadavg()[0],
        "sbx_versions": versions(args.sbx_python),
        "rows": [],
    }
    for run in args.runs:
        for library, python, group in (
            ("sbx", args.sbx_python, seeds),
            ("ajax", sys.executable, seeds),
            ("ajax", sys.executable, seeds[:1]),
        ):
            row = in_fresh_process(python, library, run, group, args.calls)
            print(json.dumps(row), flush=True)
            record["rows"].append(row)
    with args.out.open("a") as out:
        out.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
