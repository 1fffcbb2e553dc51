"""8 seeds of PPO (the comparison settings) on 1 device against 4 forced host devices.

    XLA_FLAGS=--xla_force_host_platform_device_count=4 python benchmarks/studies/device_overhead.py [--steps N]

On a CPU the forced devices share the same cores, so this measures what spreading costs
(the per-device programs, the padding, the gathers), not a speed-up. Each placement is timed
on its first call (with compilation) and on a second call (execution alone).
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

from ajax.agents.registry import AGENTS  # noqa: E402
from comparison_runs import RUNS  # noqa: E402

SEEDS = list(range(8))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().with_suffix(".jsonl"))
    args = parser.parse_args()
    jax.config.update("jax_enable_compilation_cache", False)
    agent_name, env_id, kwargs, *_ = RUNS["ppo"]
    record = {"agent": agent_name, "env": env_id, "seeds": len(SEEDS), "steps_per_seed": args.steps}
    for devices in (1, None):
        agent = AGENTS[agent_name](env_id, **kwargs)
        times = []
        for _ in range(2):
            start = time.perf_counter()
            agent.train(seed=SEEDS, n_timesteps=args.steps, devices=devices)
            times.append(round(time.perf_counter() - start, 2))
        label = f"{jax.device_count() if devices is None else devices}_devices"
        record[f"{label}_first_call_s"], record[f"{label}_run_s"] = times
    record["machine"] = f"{platform.machine()}, {jax.devices()[0].platform}, {jax.device_count()} device(s)"
    print(json.dumps(record))
    with args.out.open("a") as file:
        file.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
