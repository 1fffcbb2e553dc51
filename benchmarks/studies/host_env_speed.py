"""One task four ways: in JAX (gymnax), Gymnasium on the host, EnvPool through a host call per
step, and EnvPool through its XLA interface.

Two measures, 2 seeds each:

- the env alone (`--steps` random-action loop steps of 4 copies per seed in one jitted scan of
  the collector's `step_envs`): microseconds a loop step, so the host call's overhead is the
  difference from gymnax's;
- each agent on `CartPole-v1` (PPO, DQN) and `Pendulum-v1` (SAC) with the same settings and
  seeds, each run timed twice in one process: the second call is execution alone (the first
  adds compilation; programs holding host calls are never served by the compile cache).

Host calls come from the pool's counter: one a loop step for `gymnasium:` and `envpool:`,
one at each reset and each step where an episode ended for `envpool-xla:`.

    JAX_PLATFORMS=cpu python benchmarks/studies/host_env_speed.py --out benchmarks/studies/host_env_speed.jsonl
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
import jax.numpy as jnp

from ajax.agents.registry import AGENTS
from ajax.environments.create import prepare_env
from ajax.environments.interaction import reset_envs, step_envs

RUNS = {
    "PPO": ("CartPole-v1", {"n_envs": 4}, 50_000),
    "DQN": ("CartPole-v1", {"n_envs": 4, "learning_starts": 1_000}, 20_000),
    "SAC": ("Pendulum-v1", {"n_envs": 2, "learning_starts": 1_000}, 5_000),
}
PREFIXES = ("", "gymnasium:", "envpool:", "envpool-xla:")


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


def env_alone(env_id: str, steps: int, seeds: int) -> dict:
    """Microseconds a loop step of 4 copies a seed, random actions, in one jitted scan (second call)."""
    env_args = prepare_env(env_id, n_envs=4)

    def one(key):
        reset_key, run_key = jax.random.split(key)
        _, state = reset_envs(reset_key, env_args)

        def step(state, key):
            if env_args.continuous:
                action = jax.random.uniform(key, (4, env_args.action_dim), minval=-1.0, maxval=1.0)
            else:
                action = jax.random.randint(key, (4,), 0, env_args.action_dim)
            _, state, reward, *_ = step_envs(key, state, action, env_args)
            return state, jnp.sum(reward)

        return jnp.sum(jax.lax.scan(step, state, jax.random.split(run_key, steps))[1])

    run = jax.jit(jax.vmap(one))
    keys = jax.random.split(jax.random.PRNGKey(0), seeds)
    jax.block_until_ready(run(keys))
    started = time.perf_counter()
    jax.block_until_ready(run(keys))
    return {
        "env_id": env_id,
        "seeds": seeds,
        "steps": steps,
        "us_per_step": round(1e6 * (time.perf_counter() - started) / steps, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", nargs="*", default=list(RUNS))
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=2_000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    def record(row: dict) -> None:
        print(json.dumps(row), flush=True)
        if args.out is not None:
            with args.out.open("a") as out:
                out.write(json.dumps(row) + "\n")

    for task in ("Pendulum-v1", "CartPole-v1"):
        for prefix in PREFIXES:
            record(env_alone(prefix + task, args.steps, args.seeds))
    for name in args.agents:
        task, settings, n_timesteps = RUNS[name]
        for prefix in PREFIXES:
            record(timed(name, prefix + task, settings, n_timesteps, list(range(args.seeds))))


if __name__ == "__main__":
    main()
