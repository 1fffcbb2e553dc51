"""TD-MPC2 on MuJoCo Playground's DM Control tasks at the paper's settings, beside its published curves (issue 60).

For each task asked for, one command trains `TDMPC2(task, action_repeat=2)` (the defaults are
the reference's: the 5M model, the full planner; the reference's DMC wrapper repeats every
action twice, docs/agents/tdmpc2.md) on `--seeds` seeds vmapped in one program, for
`--env-steps` env steps (the reference's x-axis counts env steps, two a decision),
evaluating every `--eval-every` env steps inside the run, and appends two JSON lines:

- to `--out` (default `dmc_rows.jsonl` beside this script, made by the first run): the task;
  the agent's keywords; `env_steps` and `n_timesteps` (decisions, env steps over the repeat);
  the seeds; the curve (env steps, each seed's return at each evaluation, their mean); the
  final returns and `learning_summary`'s fields (the mean of each seed's last three
  evaluations, their IQM and its bootstrap interval); `published`, the reference's mean at
  the same env steps over its three seeds, with `published_seeds` and `published_source`;
  the compilation by stage apart from the execution; the device, the commit and the minutes;
- to `--table-out` (default `benchmarks/learning_checks.jsonl`), the learning table's row.

The published points are read from nicklashansen/tdmpc2's score files, TD-MPC2's evaluation
return at 100,000 env steps for each of its seeds 1-3: `results/cartpole-balance.csv`,
`results/cartpole-swingup.csv` and `results/walker-walk.csv` at b67b21c,
`results/tdmpc2/pendulum-swingup.csv` at add30b5. At another `--env-steps` the row's
`published` is null (the files step every 100,000: add the points when a budget needs them).

Playground's DM Control episodes are 1,000 env steps (500 decisions at the repeat), rewards
in [0, 1] a step, as dm_control's, so returns compare with the reference's directly.

    python benchmarks/world_models/dmc_rows.py --tasks PendulumSwingup --minutes 9      # a TPU call
    JAX_PLATFORMS=cpu python benchmarks/world_models/dmc_rows.py --tasks CartpoleBalance --seeds 2 \\
        --env-steps 400 --eval-every 200 --set model_size=1 num_samples=16 num_elites=4 num_pi_trajs=2 \\
        iterations=1 batch_size=8 seed_steps=50 episode_length=100 \\
        --out runs/dmc.jsonl --table-out runs/dmc_table.jsonl                        # a CPU smoke run
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # benchmarks/, for its shared modules

from brax_race import parse_overrides  # noqa: E402
from intervals import interval_text  # noqa: E402
from perf_bench import stamp  # noqa: E402
from provenance import append_row, machine_name  # noqa: E402
from results_page import scores_of  # noqa: E402

OUT = HERE / "dmc_rows.jsonl"
TABLE_OUT = HERE.parent / "learning_checks.jsonl"
RETURN = "Eval/episodic mean reward"
ACTION_REPEAT = 2  # the reference's DMC wrapper
PUBLISHED_AT = 100_000  # env steps of the published points below
SETTINGS = "the paper's (5M, planner, action repeat 2)"


@dataclass(frozen=True)
class Task:
    """A Playground DM Control task and TD-MPC2's published returns at PUBLISHED_AT env steps."""

    name: str
    published_seeds: tuple[float, ...]
    source: str


SCORES = "nicklashansen/tdmpc2 {path} at {commit}, step 100000, seeds 1-3"
TASKS = {
    task.name: task
    for task in (
        Task(
            "CartpoleBalance",
            (997.9, 997.0, 998.4),
            SCORES.format(path="results/cartpole-balance.csv", commit="b67b21c"),
        ),
        Task(
            "CartpoleSwingup",
            (860.5, 789.8, 867.9),
            SCORES.format(path="results/cartpole-swingup.csv", commit="b67b21c"),
        ),
        Task(
            "PendulumSwingup",
            (563.7, 852.2, 756.0),
            SCORES.format(path="results/tdmpc2/pendulum-swingup.csv", commit="add30b5"),
        ),
        Task("WalkerWalk", (966.7, 947.7, 971.3), SCORES.format(path="results/walker-walk.csv", commit="b67b21c")),
    )
}


def published(task: Task, env_steps: int) -> float | None:
    """The reference's mean over its seeds at `env_steps`, where it published one."""
    return round(sum(task.published_seeds) / len(task.published_seeds), 1) if env_steps == PUBLISHED_AT else None


def keywords(overrides: dict[str, Any]) -> dict[str, Any]:
    """TD-MPC2's keywords: the defaults at the reference's action repeat, with `--set`'s overrides."""
    return {"action_repeat": ACTION_REPEAT, **overrides}


def run_task(task: Task, settings: dict[str, Any], n_seeds: int, env_steps: int, eval_every: int) -> dict[str, Any]:
    """TD-MPC2 on `task` for `n_seeds` seeds: the full row (less its stamp)."""
    import numpy as np

    from ajax import TDMPC2
    from ajax.logging.wandb_logging import LoggingConfig
    from compile_spans import CompileSpans
    from intervals import learning_summary
    from perf_bench import device_fields, peak_bytes, timed

    started = time.perf_counter()
    repeat = settings["action_repeat"]
    agent = TDMPC2(task.name, **settings)
    seeds = list(range(n_seeds))
    outputs: dict[str, Any] = {}

    def call() -> Any:
        outputs["state"], outputs["evaluations"] = agent.train(
            seed=seeds,
            n_timesteps=env_steps // repeat,
            logging_config=LoggingConfig(log_frequency=eval_every // repeat),
        )
        return outputs["state"]

    with CompileSpans():
        timing = timed(call, repeats=0)
    timing.pop("out")
    at, returns = np.asarray(outputs["evaluations"]["timestep"]), np.asarray(outputs["evaluations"][RETURN])
    filled = at[0] >= 0
    per_seed = returns[:, filled]
    fields = device_fields()
    name = machine_name(fields["backend"], fields["device_kind"])
    return {
        "task": task.name,
        "agent": "TDMPC2",
        "settings": settings,
        "env_steps": env_steps,
        "n_timesteps": env_steps // repeat,
        "seeds": seeds,
        "curve": {
            "env_steps": [int(t) * repeat for t in at[0][filled]],
            "mean": [round(float(x), 2) for x in per_seed.mean(axis=0)],
            "per_seed": [[round(float(x), 2) for x in seed] for seed in per_seed],
        },
        "final_returns": [round(float(x), 2) for x in per_seed[:, -1]],
        "mean": round(float(per_seed[:, -1].mean()), 2),
        "std": round(float(per_seed[:, -1].std()), 2),
        **learning_summary(per_seed),
        "published": published(task, env_steps),
        "published_seeds": list(task.published_seeds) if env_steps == PUBLISHED_AT else None,
        "published_source": task.source,
        "compile_s": timing["compile_spans_s"],
        "trace_s": timing["trace_s"],
        "lower_s": timing["lower_s"],
        "backend_compile_s": timing["backend_compile_s"],
        "exec_s": timing["exec_s"],
        "minutes": round((time.perf_counter() - started) / 60, 3),
        **fields,
        "peak_bytes": peak_bytes(),
        **({} if name is None else {"machine": name}),
    }


def table_row(row: dict[str, Any]) -> dict[str, Any]:
    """The full row as a row of the learning table (`learning_checks.py`'s format), in decisions."""
    differs = {key: value for key, value in row["settings"].items() if key != "action_repeat"}
    label = SETTINGS + (f" ({', '.join(f'{k}={v}' for k, v in differs.items())})" if differs else "")
    curve = row["curve"]
    return {
        "agent": "TDMPC2",
        "env_id": row["task"],
        "settings": label,
        "n_timesteps": row["n_timesteps"],
        "curve": {
            "timestep": [t // ACTION_REPEAT for t in curve["env_steps"]],
            "mean": curve["mean"],
            "per_seed": curve["per_seed"],
        },
        **scores_of(row),
    }


def summary(row: dict[str, Any]) -> str:
    """One line: the task's returns beside the published one, and its time."""
    ci = interval_text(row["iqm_ci"])
    reference = "none at this budget" if row["published"] is None else f"{row['published']:g}"
    return (
        f"TDMPC2 {row['task']}: IQM {row['iqm']:.1f} {ci} over {len(row['seeds'])} seeds at {row['env_steps']:,} "
        f"env steps (published {reference}); compile {row['compile_s']:.1f} s, exec {row['exec_s']:.1f} s, "
        f"{row['minutes']:.1f} min on {row['device_kind']}"
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", choices=sorted(TASKS), default=list(TASKS), help="default: all")
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1, vmapped in one program (default: 3)")
    parser.add_argument("--env-steps", type=int, default=PUBLISHED_AT, help="env steps a seed (default: 100,000)")
    parser.add_argument("--eval-every", type=int, default=10_000, help="env steps between evaluations")
    parser.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE", help="TDMPC2 keywords, e.g. model_size=1")
    parser.add_argument("--minutes", type=float, help="start no task after this many minutes")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--table-out", type=Path, default=TABLE_OUT)
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.env_steps < ACTION_REPEAT or args.eval_every < ACTION_REPEAT:
        parser.error("--seeds must be positive, and --env-steps and --eval-every at least the action repeat.")
    try:
        args.overrides = parse_overrides(args.set)
    except ValueError as error:
        parser.error(str(error))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    settings = keywords(args.overrides)
    for name in args.tasks:
        if args.minutes is not None and time.perf_counter() - started > 60 * args.minutes:
            print(f"stopped before {name}: --minutes {args.minutes:g} passed")
            break
        row = run_task(TASKS[name], settings, args.seeds, args.env_steps, args.eval_every)
        stamped = stamp(row)
        append_row(args.out, stamped)
        append_row(args.table_out, table_row(stamped))
        print(summary(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
