"""What the expert features cost: each variant against the same agent without it.

Pendulum-v1, 4 envs, 8,000 steps, learning from step 1,000 (the agent benchmark's run), a
400-step warm-up call first, then `--trials` calls on fresh agents; execution apart from
compilation (`agent_bench.timed_train`). Variants:

- SAC + ImitationLoss (an extra actor forward pass and the expert on every batch);
- SAC + OnlineCloning (that, plus two critic passes for the Q-filter);
- SAC + IBRLTargets (a target-critic pass on the expert's next action in every target, and
  two online-critic passes to choose each collected action);
- SAC + ResidualPolicy, JSRLCurriculum, EDGEExploration (the expert on every collected step);
- SAC with expert_policy= and evaluations every 1,000 steps (the expert's own evaluation
  episodes beside the agent's), against SAC with the same evaluations;
- TD3 + CloningPretrain(n_steps=1,000, epochs=2): a one-off cost in the fresh state, timed
  as `train(n_timesteps=0)`, which builds and pretrains it.

    JAX_PLATFORMS=cpu AJAX_NO_COMPILE_CACHE=1 python benchmarks/studies/extension_cost.py \
        --out runs/extension_cost.jsonl

`--only SAC SAC+IBRLTargets ...` runs those variants (and no fresh-state timing).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/, for its shared modules

from agent_bench import timed_train  # noqa: E402
from ajax import SAC, TD3  # noqa: E402
from ajax.environments.controllers import pendulum_pd  # noqa: E402
from ajax.extensions.expert import ImitationLoss  # noqa: E402
from ajax.extensions.expert_actions import EDGEExploration, JSRLCurriculum, ResidualPolicy  # noqa: E402
from ajax.extensions.ibrl import IBRLTargets  # noqa: E402
from ajax.extensions.online_cloning import OnlineCloning  # noqa: E402
from ajax.extensions.pretrain import CloningPretrain  # noqa: E402
from ajax.logging.wandb_logging import LoggingConfig  # noqa: E402


def logged(agent, seeds, n_timesteps):
    """`timed_train` with evaluations every 1,000 steps."""
    train = agent.train
    agent.train = lambda **kwargs: train(**kwargs, logging_config=LoggingConfig(log_frequency=1_000))
    return timed_train(agent, seeds, n_timesteps)


def sac_with(extension):
    return lambda: SAC("Pendulum-v1", n_envs=4, learning_starts=1_000, extensions=(extension,))


VARIANTS = {
    "SAC": (lambda: SAC("Pendulum-v1", n_envs=4, learning_starts=1_000), timed_train),
    "SAC+ImitationLoss": (sac_with(ImitationLoss(pendulum_pd)), timed_train),
    "SAC+OnlineCloning": (sac_with(OnlineCloning(pendulum_pd)), timed_train),
    "SAC+IBRLTargets": (sac_with(IBRLTargets(pendulum_pd)), timed_train),
    "SAC+ResidualPolicy": (sac_with(ResidualPolicy(pendulum_pd)), timed_train),
    "SAC+JSRLCurriculum": (sac_with(JSRLCurriculum(pendulum_pd)), timed_train),
    "SAC+EDGEExploration": (sac_with(EDGEExploration(pendulum_pd)), timed_train),
    "SAC logged": (lambda: SAC("Pendulum-v1", n_envs=4, learning_starts=1_000), logged),
    "SAC logged+expert_policy": (
        lambda: SAC("Pendulum-v1", n_envs=4, learning_starts=1_000, expert_policy=pendulum_pd),
        logged,
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", nargs="+", choices=sorted(VARIANTS), help="run these variants only")
    args = parser.parse_args()
    rows = []
    for name, (build, run) in VARIANTS.items():
        if args.only and name not in args.only:
            continue
        warmup = run(build(), [0], 400)
        for trial in range(args.trials):
            result = run(build(), [0], 8_000)
            exec_s = result["measured_s"] - result["compile_spans_s"]
            rows.append(
                {
                    "variant": name,
                    "trial": trial,
                    "compile_s": warmup["measured_s"],
                    "exec_s": exec_s,
                    "exec_steps_per_s": result["steps"] / exec_s,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    pretrain_variants = {
        "TD3": (),
        "TD3+CloningPretrain": (CloningPretrain(pendulum_pd, n_steps=1_000, epochs=2),),
    }
    for name, extensions in () if args.only else pretrain_variants.items():
        times = []
        for _ in range(args.trials + 1):
            agent = TD3("Pendulum-v1", n_envs=4, learning_starts=1_000, extensions=extensions)
            start = time.perf_counter()
            agent.train(seed=0, n_timesteps=0)
            times.append(time.perf_counter() - start)
        rows.append({"variant": name, "fresh_state_s": statistics.median(times[1:]), "first_s": times[0]})
        print(json.dumps(rows[-1]), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("".join(json.dumps(row) + "\n" for row in rows))


if __name__ == "__main__":
    main()
