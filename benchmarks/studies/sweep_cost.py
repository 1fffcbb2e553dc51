"""A sweep of 8 configurations x 4 seeds as one program against 8 separate `train` calls.

    python benchmarks/studies/sweep_cost.py [--only ppo|sac] [--steps N] [--out benchmarks/studies/sweep_cost.jsonl]

PPO and SAC at the comparison settings (`comparison_runs.py`), 8 learning rates log-spaced
from 1e-4 to 3e-3. Each side is timed twice: with its compilation (the first call, cold
in-process, the persistent compile cache off) and its execution alone (the same compiled
program called again). The sweep's compile and execution are timed apart on its two
programs (the initial state's and the run's).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/, for its shared modules

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from ajax.agents.registry import AGENTS  # noqa: E402
from ajax.sweep import SweepProgram, configurations  # noqa: E402
from comparison_runs import RUNS  # noqa: E402

SEEDS = [0, 1, 2, 3]
RATES = [float(rate) for rate in np.geomspace(1e-4, 3e-3, 8)]
PRESETS = {"ppo": ("ppo", "actor_learning_rate", 100_000), "sac": ("sac", "critic_learning_rate", 2_000)}


def timed(fn, *args):
    start = time.perf_counter()
    result = jax.block_until_ready(fn(*args))
    return result, time.perf_counter() - start


def separate(agent_cls, env_id, kwargs, name, steps):
    """8 agents, each trained twice: the first call compiles, the second runs its compiled program."""
    with_compile = execution = 0.0
    for rate in RATES:
        agent = agent_cls(env_id, **{**kwargs, name: rate})
        start = time.perf_counter()
        agent.train(seed=SEEDS, n_timesteps=steps)
        with_compile += time.perf_counter() - start
        start = time.perf_counter()
        agent.train(seed=SEEDS, n_timesteps=steps)
        execution += time.perf_counter() - start
    return with_compile, execution


def swept(agent_cls, env_id, kwargs, name, steps):
    """The sweep's two programs, compiled (timed) then run twice (the second run timed)."""
    agents = [agent_cls(env_id, **kwargs, **config) for config in configurations({name: RATES}, None)]
    run, _ = agents[0].run_settings(0, steps, 10, None, None)
    program = SweepProgram.build(agents, run)
    keys = jnp.repeat(jnp.stack([jax.random.PRNGKey(s) for s in SEEDS])[None], len(RATES), 0)
    zeros = jnp.zeros_like(keys, dtype=jnp.uint32)
    start = time.perf_counter()
    fresh = jax.jit(program.fresh).lower(program.values, keys).compile()
    state = jax.block_until_ready(fresh(program.values, keys))
    train = jax.jit(program.run).lower(program.values, zeros, state).compile()
    compile_s = time.perf_counter() - start
    _, first = timed(train, program.values, zeros, state)
    _, second = timed(lambda: train(program.values, zeros, fresh(program.values, keys)))
    return compile_s, first, second


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=sorted(PRESETS), default=None)
    parser.add_argument("--steps", type=int, default=None, help="steps per run (default: the preset's)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().with_suffix(".jsonl"))
    args = parser.parse_args()
    jax.config.update("jax_enable_compilation_cache", False)
    for key in [args.only] if args.only else sorted(PRESETS):
        preset, name, steps = PRESETS[key]
        steps = args.steps or steps
        agent_name, env_id, kwargs, *_ = RUNS[preset]
        agent_cls = AGENTS[agent_name]
        kwargs = {key: value for key, value in kwargs.items() if key != name}  # the swept one is the grid's
        compile_s, first_run, run_s = swept(agent_cls, env_id, kwargs, name, steps)
        separate_total, separate_run = separate(agent_cls, env_id, kwargs, name, steps)
        record = {
            "agent": agent_name,
            "env": env_id,
            "swept": name,
            "configurations": len(RATES),
            "seeds": len(SEEDS),
            "steps_per_run": steps,
            "sweep_compile_s": round(compile_s, 1),
            "sweep_first_run_s": round(first_run, 1),
            "sweep_run_s": round(run_s, 1),
            "sweep_total_s": round(compile_s + first_run, 1),
            "separate_total_s": round(separate_total, 1),
            "separate_run_s": round(separate_run, 1),
            "machine": f"{platform.machine()}, {jax.devices()[0].platform}, {jax.device_count()} device(s)",
            "jax": jax.__version__,
        }
        print(json.dumps(record))
        with args.out.open("a") as file:
            file.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
