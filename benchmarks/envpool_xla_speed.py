"""One task three ways: gymnax in JAX, EnvPool through a host call per step, EnvPool's XLA interface.

Each agent trains on `CartPole-v1` (PPO, DQN) and `Pendulum-v1` (SAC) from gymnax, from
`envpool:` and from `envpool-xla:`, with the same settings and seeds; each run is timed
twice in one process, so the second call is execution alone (the first adds compilation,
and the EnvPool programs, which hold host calls, are never served by the compile cache).
Host calls per run come from the pool's counter: one a loop step for `envpool:`, one at each
reset and each step where an episode ended for `envpool-xla:`.

    JAX_PLATFORMS=cpu python benchmarks/envpool_xla_speed.py --out benchmarks/envpool_xla_speed.jsonl
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax

from ajax.agents.registry import AGENTS

RUNS = {
    "PPO": ("CartPole-v1", {"n_envs": 4}, 50_000),
    "DQN": ("CartPole-v1", {"n_envs": 4, "learning_starts": 1_000}, 20_000),
    "SAC": ("Pendulum-v1", {"n_envs": 2, "learning_starts": 1_000}, 5_000),
}
PREFIXES = ("", "envpool:", "envpool-xla:")


def timed(agent_name: str, env_id: str, settings: dict, n_timesteps: int, seeds: list[int]) -> dict:
    agent = AGENTS[agent_name](env_id, **settings)
    calls = []
    for _ in range(2):
        started = time.perf_counter()
        state, _ = agent.train(seed=seeds, n_timesteps=n_timesteps)
        jax.block_until_ready(state)
        calls.append(time.perf_counter() - started)
    pool = getattr(agent.env_args.env, "pool", None)
    return {
        "agent": agent_name,
        "env_id": env_id,
        "n_timesteps": n_timesteps,
        "seeds": len(seeds),
        "first_call_s": round(calls[0], 2),
        "second_call_s": round(calls[1], 2),
        "steps_per_s": round(n_timesteps * len(seeds) / calls[1]),
        "host_calls": None if pool is None else pool.calls,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", nargs="*", default=list(RUNS))
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    for name in args.agents:
        task, settings, n_timesteps = RUNS[name]
        for prefix in PREFIXES:
            row = timed(name, prefix + task, settings, n_timesteps, list(range(args.seeds)))
            print(json.dumps(row), flush=True)
            if args.out is not None:
                with args.out.open("a") as out:
                    out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
