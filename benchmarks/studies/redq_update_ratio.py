"""REDQ's step against one ensemble update: is G critic updates per step G times one?

REDQ's 10 critics are one vmapped network and its G = 20 critic updates one `lax.scan`
over minibatches drawn together, so an update step should cost close to G times a step
with G = 1 (which also makes the one actor and temperature step both make). Three runs of
REDQ's default sizes on Pendulum-v1, 4 envs, execution time only (compile spans taken out,
as agent_bench.py does):

    collect  learning_starts past the run: collection and uniform actions only
    G=1      one critic update per tick, from step 0
    G=20     REDQ's default, from step 0

ratio = (G=20 - collect) / (G=1 - collect), per tick. It would be 20 if the actor step cost
nothing; the actor and temperature steps, made once per tick in both, pull it below 20.

    JAX_PLATFORMS=cpu AJAX_NO_COMPILE_CACHE=1 .venv/bin/python benchmarks/studies/redq_update_ratio.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from agent_bench import timed_train  # noqa: E402

N_TIMESTEPS, N_ENVS = 1_000, 4


def execution_seconds(**kwargs) -> float:
    from ajax import REDQ

    best = float("inf")
    for _ in range(2):  # the minimum of two trials, each a fresh agent (traced and compiled again)
        result = timed_train(REDQ("Pendulum-v1", n_envs=N_ENVS, **kwargs), [0], N_TIMESTEPS)
        best = min(best, result["measured_s"] - result["compile_spans_s"])
    return best


def main() -> None:
    ticks = N_TIMESTEPS // N_ENVS
    collect = execution_seconds(learning_starts=N_TIMESTEPS + 1)
    one = execution_seconds(learning_starts=0, utd_ratio=1)
    twenty = execution_seconds(learning_starts=0, utd_ratio=20)
    for label, seconds in (("collect", collect), ("G=1", one), ("G=20", twenty)):
        print(f"{label:8s} {seconds:8.3f} s  {1e3 * seconds / ticks:8.3f} ms/tick")
    print(f"ratio (G=20 - collect) / (G=1 - collect) = {(twenty - collect) / (one - collect):.2f}")


if __name__ == "__main__":
    main()
