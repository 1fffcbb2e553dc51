"""Where a world model's first call spends its host time: Python's profiler over the compiling call.

Issue 60 found DreamerV3's and TD-MPC2's programs tracing in about 20 s on a TPU v5e host
against 1.9 s on the 2-core CPU for the same program. This runs one of
`benchmarks/world_models/throughput.py`'s runs for `--steps` env steps a seed, its compile
cache off, under `cProfile`, and prints JAX's compile spans by stage, the backend compiles by
program (many small ones are eager operations, each compiled on the device), and the
functions that took the most time, by their own time and with what they called.

    python benchmarks/studies/trace_profile.py tdmpc2-5m --steps 600 --top 30
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import time
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BENCHMARKS))  # compile_spans
sys.path.insert(0, str(BENCHMARKS / "world_models"))  # throughput's runs

import jax  # noqa: E402
from throughput import RUNS  # noqa: E402

from compile_spans import STAGES, CompileSpans  # noqa: E402


def ranked(profile: cProfile.Profile, key: str, top: int) -> str:
    """The profile's `top` functions by `key`, as pstats prints them."""
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats(key).print_stats(top)
    return text.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", choices=list(RUNS))
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--steps", type=int, default=600, help="env steps a seed of the profiled first call")
    parser.add_argument("--top", type=int, default=30, help="functions listed in each ranking")
    args = parser.parse_args()
    os.environ.setdefault("AJAX_NO_COMPILE_CACHE", "1")  # read when Ajax is first imported, just below

    from ajax.agents.registry import AGENTS

    agent_name, env_id, kwargs = RUNS[args.run]
    profile = cProfile.Profile()
    started = time.perf_counter()
    with CompileSpans() as spans:
        profile.enable()
        agent = AGENTS[agent_name](env_id, **kwargs)
        state, _ = agent.train(seed=list(range(args.seeds)), n_timesteps=args.steps)
        jax.block_until_ready(state)
        profile.disable()
    summary = {
        "run": args.run,
        "backend": jax.default_backend(),
        "first_call_s": round(time.perf_counter() - started, 3),
        **{stage: round(spans.total(event), 3) for stage, event in STAGES.items()},
        "backend_compiles": len(spans.by_event.get(STAGES["backend_compile_s"], [])),
        "backend_compile_s_by_program": {
            name: round(seconds, 3) for name, seconds in sorted(spans.by_program.items(), key=lambda kv: -kv[1])
        },
    }
    print(json.dumps(summary, indent=1))
    print(ranked(profile, "tottime", args.top))
    print(ranked(profile, "cumulative", args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
