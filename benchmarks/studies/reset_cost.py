"""What Ajax's auto-reset costs on the physics backends, execution apart from compilation.

For each env, `n_envs` copies take `--steps` random-action steps in one jitted scan of
`step_envs` (the collector's own env step), twice: with the default auto-reset, which
computes a fresh reset only on steps where some copy's episode ended, and with
`differentiable_reset=True`, which computes one every step and selects. The episode
length is shortened (`--episode-length`) so resets happen within the run. Separately, one
jitted reset and one jitted step are timed alone: a fresh reset per episode costs
reset / (episode_length x step) of an episode's time.

    JAX_PLATFORMS=cpu AJAX_NO_COMPILE_CACHE=1 python benchmarks/studies/reset_cost.py --out runs/reset_cost.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import jax
import jax.numpy as jnp

from ajax.environments.brax_like import make_brax, make_playground
from ajax.environments.create import prepare_env
from ajax.environments.ids import backend_of
from ajax.environments.interaction import reset_envs, step_envs


def build(env_id: str, episode_length: int, differentiable_reset: bool, n_envs: int):
    make = make_brax if backend_of(env_id) == "brax" else make_playground
    return prepare_env(make(env_id, episode_length, differentiable_reset), n_envs=n_envs)


def scan_program(env_args, steps: int):
    @jax.jit
    def run(key):
        reset_key, run_key = jax.random.split(key)
        _, state = reset_envs(reset_key, env_args)

        def step(state, key):
            action_key, step_key = jax.random.split(key)
            action = jax.random.uniform(action_key, (env_args.n_envs, env_args.action_dim), minval=-1.0, maxval=1.0)
            _, state, reward, terminated, truncated, _ = step_envs(step_key, state, action, env_args)
            return state, jnp.sum(terminated | truncated)

        _, ends = jax.lax.scan(step, state, jax.random.split(run_key, steps))
        return jnp.sum(ends)

    return run


def timed(fn, *args, repeats: int) -> tuple[float, list[float], object]:
    start = time.perf_counter()
    out = jax.block_until_ready(fn(*args))
    first = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return first, times, out


def reset_and_step_times(env_args) -> tuple[list[float], list[float]]:
    """One reset and one step of one copy, each jitted alone, timed 20 times."""
    env, params, key = env_args.env, env_args.env_params, jax.random.PRNGKey(1)
    _, reset_times, (_, state) = timed(jax.jit(lambda key: env.reset_env(key, params)), key, repeats=20)
    step = jax.jit(lambda state: env.step_env(key, state, jnp.zeros(env_args.action_dim), params))
    _, step_times, _ = timed(step, state, repeats=20)
    return reset_times, step_times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=["inverted_pendulum", "CheetahRun"])
    parser.add_argument("--n-envs", type=int, default=4)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--episode-length", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    rows = []
    for env_id in args.envs:
        for differentiable in (False, True):
            env_args = build(env_id, args.episode_length, differentiable, args.n_envs)
            first, times, ends = timed(scan_program(env_args, args.steps), jax.random.PRNGKey(0), repeats=args.repeats)
            rows.append(
                {
                    "env_id": env_id,
                    "what": "scan",
                    "differentiable_reset": differentiable,
                    "n_envs": args.n_envs,
                    "steps": args.steps,
                    "episode_length": args.episode_length,
                    "episodes_ended": int(ends),
                    "compile_and_first_s": first,
                    "exec_s": statistics.median(times),
                    "exec_steps_per_s": args.steps * args.n_envs / statistics.median(times),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
        reset_times, step_times = reset_and_step_times(build(env_id, args.episode_length, False, 1))
        rows.append(
            {
                "env_id": env_id,
                "what": "reset_vs_step",
                "reset_s": statistics.median(reset_times),
                "step_s": statistics.median(step_times),
                "reset_over_step": statistics.median(reset_times) / statistics.median(step_times),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


if __name__ == "__main__":
    main()
