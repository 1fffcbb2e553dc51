"""TD-MPC2 and DreamerV3 on Playground's DM Control tasks at their references' settings, beside their published returns.

For each task asked for, one command trains `--agent` (default TDMPC2) on `--seeds` seeds
vmapped in one program, for `--env-steps` env steps (the references' x-axis counts env steps,
two a decision at their action repeat of 2), evaluating every `--eval-every` env steps inside
the run, and appends two JSON lines:

- to `--out` (default `dmc_rows.jsonl` beside this script, made by the first run): the task;
  the agent and its keywords; `env_steps` and `n_timesteps` (decisions, env steps over the
  repeat); the seeds; the curve (env steps, each seed's return at each evaluation, their
  mean); the final returns and `learning_summary`'s fields (the mean of each seed's last
  three evaluations, their IQM and its bootstrap interval); `published`, the reference's
  mean at the same env steps over its three seeds, with `published_seeds` and
  `published_source`; the compilation by stage apart from the execution, each summed over
  the `chunks` calls the run took; the device, the commit and the minutes;
- to `--table-out` (default `benchmarks/learning_checks.jsonl`), the learning table's row.

The agents' settings:

- TDMPC2: `TDMPC2(task, action_repeat=2)`, the paper's (the defaults are the reference's:
  the 5M model, the full planner; the reference's DMC wrapper repeats every action twice,
  docs/agents/tdmpc2.md).
- DreamerV3: the DMC proprio preset of the April 2024 reference (danijar/dreamerv3 2411f7d,
  `dmc_proprio` in its configs.yaml): the 12m model, train ratio 512, 16 envs, 16 sequences
  of 64 rows after a context row (its `batch_length: 65`), action repeat 2 (its
  `env.dmc.repeat`); every other setting Ajax's default, the reference's. (The December
  2024 reference trains DMC proprio at the 1m model, ratio 1024 and repeat 1; the returns
  below were published at repeat 2.) A decision is one row of one env copy, so 100,000 env
  steps are 50,000 rows over the 16 copies, as the reference counts its steps.

`--set KEY=VALUE` overrides or adds the agent's keywords. Both agents' published points are
read from nicklashansen/tdmpc2's score files, each seed's evaluation return at 100,000 env
steps for its seeds 1-3 (the source of each is in `TASKS`): TD-MPC2's from
`results/cartpole-balance.csv`, `results/cartpole-swingup.csv` and `results/walker-walk.csv`
at b67b21c and `results/tdmpc2/pendulum-swingup.csv` at add30b5; DreamerV3's from
`results/dreamerv3/<task>.csv` (cartpole-balance and cartpole-swingup at add30b5,
pendulum-swingup and walker-walk at 88095e7). At another `--env-steps` the row's `published`
is null (the files step every 100,000: add the points when a budget needs them), as it is
for a task whose file has no point at 100,000.

A task's run does not fit one ten-minute accelerator call (its compilation alone takes
minutes), so `--checkpoint-dir DIR` trains it in chunks of `--eval-every` env steps, one
`train` call each, resuming the previous state with the whole run as every call's horizon
(so every schedule, and the replay's size, are the one call's: the run is the one call's
exactly). After each chunk (with `--save-minutes M`, only once M minutes have passed since
the last, and where the command stops or the task ends) it replaces the task's checkpoint in DIR
(`<agent>-<task>.ckpt`, written atomically) and its progress file (`<agent>-<task>.json`:
the evaluations so far, the compile and execution seconds so far, the chunks and the
settings). A command given a task whose progress file is there resumes it, and refuses one
saved with other settings (naming the flag: `--agent`, `--set`, `--seeds`, `--env-steps`,
`--eval-every`). With `--minutes`, it stops between chunks, never before the command's
first: not once the minutes have passed, nor when the next chunk would carry it past them,
reckoned from the last chunk's execution and checkpoint and, before another task, its compilation
(`--minutes 0`: one chunk a command). The chunk that reaches `--env-steps` writes
the task's two rows and marks its progress file done, so running the command again writes
nothing twice. Without `--checkpoint-dir` each task is one call, and `--minutes` starts no
task after the minutes have passed.

Playground's DM Control episodes are 1,000 env steps (500 decisions at the repeat), rewards
in [0, 1] a step, as dm_control's, so returns compare with the references' directly.

    python benchmarks/world_models/dmc_rows.py --tasks PendulumSwingup \\
        --checkpoint-dir runs/dmc_ckpt --minutes 8                                  # a TPU call, repeated
    python benchmarks/world_models/dmc_rows.py --agent DreamerV3 --tasks WalkerWalk \\
        --checkpoint-dir runs/dmc_ckpt --minutes 8                                  # DreamerV3's, the same way
    JAX_PLATFORMS=cpu python benchmarks/world_models/dmc_rows.py --tasks CartpoleBalance --seeds 2 \\
        --env-steps 400 --eval-every 200 --set model_size=1 num_samples=16 num_elites=4 num_pi_trajs=2 \\
        iterations=1 batch_size=8 seed_steps=50 episode_length=100 \\
        --out runs/dmc.jsonl --table-out runs/dmc_table.jsonl                        # a CPU smoke run
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # benchmarks/, for its shared modules
sys.path.insert(0, str(HERE))  # and this folder's

from chunks import (  # noqa: E402
    Checkpoint,
    CheckpointMismatchError,
    Chunk,
    Clock,
    add_save_minutes,
    filled_per_seed,
    read_progress,
    timed_chunk,
    train_in_chunks,
    write_json,
)
from chunks import fresh_progress as fresh_run  # noqa: E402

from brax_race import parse_overrides  # noqa: E402
from intervals import interval_text  # noqa: E402
from perf_bench import stamp  # noqa: E402
from provenance import append_row, machine_name  # noqa: E402
from results_page import scores_of  # noqa: E402

OUT = HERE / "dmc_rows.jsonl"
TABLE_OUT = HERE.parent / "learning_checks.jsonl"
RETURN = "Eval/episodic mean reward"
ACTION_REPEAT = 2  # both references' DMC wrappers
PUBLISHED_AT = 100_000  # env steps of the published points below
AGENTS = ("TDMPC2", "DreamerV3")
# Each agent's keywords at its reference's DMC settings (`--set` adds to or overrides them).
KEYWORDS: dict[str, dict[str, Any]] = {
    "TDMPC2": {"action_repeat": ACTION_REPEAT},
    "DreamerV3": {
        "action_repeat": ACTION_REPEAT,
        "model_size": "12m",
        "train_ratio": 512.0,
        "n_envs": 16,
        "batch_size": 16,
        "batch_length": 64,
    },
}
SETTINGS = {
    "TDMPC2": "the paper's (5M, planner, action repeat 2)",
    "DreamerV3": (
        "the April 2024 reference's DMC proprio (12m, train ratio 512, 16 envs, 16 x 64 sequences, action repeat 2)"
    ),
}


@dataclass(frozen=True)
class Published:
    """An agent's published returns on a task at PUBLISHED_AT env steps, one a seed (None: the
    reference's file has no point there), and where they were read."""

    seeds: tuple[float, ...] | None
    source: str


@dataclass(frozen=True)
class Task:
    """A Playground DM Control task and each agent's published returns at PUBLISHED_AT env steps."""

    name: str
    published: Mapping[str, Published]


SCORES = "nicklashansen/tdmpc2 {path} at {commit}, step 100000, seeds 1-3"


def _scores(path: str, commit: str, *seeds: float) -> Published:
    return Published(tuple(seeds), SCORES.format(path=path, commit=commit))


TASKS = {
    task.name: task
    for task in (
        Task(
            "CartpoleBalance",
            {
                "TDMPC2": _scores("results/cartpole-balance.csv", "b67b21c", 997.9, 997.0, 998.4),
                "DreamerV3": _scores("results/dreamerv3/cartpole-balance.csv", "add30b5", 839.7, 951.2, 946.9),
            },
        ),
        Task(
            "CartpoleSwingup",
            {
                "TDMPC2": _scores("results/cartpole-swingup.csv", "b67b21c", 860.5, 789.8, 867.9),
                "DreamerV3": _scores("results/dreamerv3/cartpole-swingup.csv", "add30b5", 637.2, 718.6, 674.4),
            },
        ),
        Task(
            "PendulumSwingup",
            {
                "TDMPC2": _scores("results/tdmpc2/pendulum-swingup.csv", "add30b5", 563.7, 852.2, 756.0),
                "DreamerV3": _scores("results/dreamerv3/pendulum-swingup.csv", "88095e7", 457.1, 811.7, 829.1),
            },
        ),
        Task(
            "WalkerWalk",
            {
                "TDMPC2": _scores("results/walker-walk.csv", "b67b21c", 966.7, 947.7, 971.3),
                "DreamerV3": _scores("results/dreamerv3/walker-walk.csv", "88095e7", 669.2, 651.8, 569.4),
            },
        ),
    )
}


def published_seeds(task: Task, env_steps: int, agent: str = "TDMPC2") -> list[float] | None:
    """Each of the reference's seeds' return at `env_steps`, where it published them."""
    seeds = task.published[agent].seeds
    return list(seeds) if env_steps == PUBLISHED_AT and seeds is not None else None


def published(task: Task, env_steps: int, agent: str = "TDMPC2") -> float | None:
    """The reference's mean over its seeds at `env_steps`, where it published one."""
    seeds = published_seeds(task, env_steps, agent)
    return None if seeds is None else round(sum(seeds) / len(seeds), 1)


def keywords(overrides: dict[str, Any], agent: str = "TDMPC2") -> dict[str, Any]:
    """`agent`'s keywords: its reference's DMC settings, with `--set`'s overrides."""
    return {**KEYWORDS[agent], **overrides}


# Checkpoints ---------------------------------------------------------------------------------
# What a checkpoint was made with, and the flag that sets each.
FLAGS = {
    "agent": "--agent",
    "task": "--tasks",
    "settings": "--set",
    "seeds": "--seeds",
    "env_steps": "--env-steps",
    "eval_every": "--eval-every",
}
TIMING = ("compile_s", "trace_s", "lower_s", "backend_compile_s", "exec_s")


def run_identity(
    agent: str, task: str, settings: dict[str, Any], n_seeds: int, env_steps: int, eval_every: int
) -> dict[str, Any]:
    """What a task's checkpoint must have been made with to be resumed, as its JSON reads back."""
    identity = {
        "agent": agent,
        "task": task,
        "settings": settings,
        "seeds": list(range(n_seeds)),
        "env_steps": env_steps,
        "eval_every": eval_every,
    }
    return json.loads(json.dumps(identity, default=repr))


def checkpoint_paths(directory: Path, agent: str, task: str) -> tuple[Path, Path]:
    """The task's state checkpoint and its progress file in `directory`."""
    return directory / f"{agent}-{task}.ckpt", directory / f"{agent}-{task}.json"


def fresh_progress(identity: dict[str, Any]) -> dict[str, Any]:
    """The progress of a run not yet started: nothing trained, evaluated or timed."""
    return fresh_run(
        identity,
        curve={"timestep": [], "per_seed": [[] for _ in identity["seeds"]]},
        timing={**dict.fromkeys(TIMING, 0.0), "minutes": 0.0},
        done=False,
    )


# Training ------------------------------------------------------------------------------------
def add_evaluations(progress: dict[str, Any], evaluations: dict[str, Any]) -> None:
    """One call's evaluations onto the curve: their timesteps are the run's (absolute), and an
    unfilled slot (timestep -1) is no evaluation."""
    filled = filled_per_seed({"timestep": evaluations["timestep"], RETURN: evaluations[RETURN]})
    curve = progress["curve"]
    new = [int(t) for t in filled["timestep"][0]]
    if curve["timestep"] and new and new[0] <= curve["timestep"][-1]:
        raise RuntimeError(f"A call evaluated at timesteps {new}, not past the curve's last, {curve['timestep'][-1]}.")
    curve["timestep"] += new
    for seed, values in zip(curve["per_seed"], filled[RETURN], strict=True):
        seed += values


def add_timing(progress: dict[str, Any], timing: dict[str, Any]) -> None:
    """One call's compilation by stage and its execution, onto the run's sums."""
    sums = progress["timing"]
    sums["compile_s"] += timing["compile_spans_s"]
    for key in ("trace_s", "lower_s", "backend_compile_s", "exec_s"):
        sums[key] += timing[key]


def train_task(
    task: Task,
    agent_name: str,
    settings: dict[str, Any],
    n_seeds: int,
    env_steps: int,
    eval_every: int,
    clock: Clock,
    checkpoint_dir: Path | None = None,
) -> dict[str, Any] | None:
    """`agent_name` on `task` for `n_seeds` seeds: the full row (less its stamp), or None when
    the clock stopped it between chunks (its checkpoint and progress file kept in `checkpoint_dir`)."""
    from ajax import TDMPC2, DreamerV3
    from ajax.logging.wandb_logging import LoggingConfig

    started = time.perf_counter()
    repeat = settings["action_repeat"]
    horizon, every = env_steps // repeat, eval_every // repeat
    agent = {"TDMPC2": TDMPC2, "DreamerV3": DreamerV3}[agent_name](task.name, **settings)
    seeds = list(range(n_seeds))
    logging_config = LoggingConfig(log_frequency=every)
    identity = run_identity(agent_name, task.name, settings, n_seeds, env_steps, eval_every)
    checkpoint, progress = None, None
    if checkpoint_dir is not None:
        checkpoint = Checkpoint(*checkpoint_paths(checkpoint_dir, agent_name, task.name))
        progress = read_progress(checkpoint.progress, identity, FLAGS)
    progress = progress or fresh_progress(identity)
    minutes_before = progress["timing"]["minutes"]

    def call(**kwargs: Any) -> Chunk:
        """One `train` call on every seed with the run's horizon and evaluations, timed by stage."""
        chunk, timing = timed_chunk(
            lambda: agent.train(seed=seeds, total_timesteps=horizon, logging_config=logging_config, **kwargs)
        )
        add_timing(progress, timing)
        return chunk

    def record(progress: dict[str, Any], chunk: Chunk) -> None:
        add_evaluations(progress, chunk.evaluations)
        progress["timing"]["minutes"] = round(minutes_before + (time.perf_counter() - started) / 60, 3)

    state = train_in_chunks(
        call,
        progress,
        horizon,
        every,
        clock,
        checkpoint,
        agent,
        record,
        f"{agent_name} {task.name}",
        scale=repeat,
        unit="env steps",
    )
    if state is None:
        return None
    return full_row(task, agent_name, settings, env_steps, progress)


def full_row(
    task: Task, agent_name: str, settings: dict[str, Any], env_steps: int, progress: dict[str, Any]
) -> dict[str, Any]:
    """A finished run's row (less its stamp), from its progress."""
    import numpy as np

    from intervals import learning_summary
    from perf_bench import device_fields, peak_bytes

    repeat = settings["action_repeat"]
    curve = progress["curve"]
    per_seed = np.asarray(curve["per_seed"], dtype=np.float32).reshape(len(curve["per_seed"]), -1)
    timing = progress["timing"]
    fields = device_fields()
    name = machine_name(fields["backend"], fields["device_kind"])
    return {
        "task": task.name,
        "agent": agent_name,
        "settings": settings,
        "env_steps": env_steps,
        "n_timesteps": env_steps // repeat,
        "seeds": progress["identity"]["seeds"],
        "curve": {
            "env_steps": [t * repeat for t in curve["timestep"]],
            "mean": [round(float(x), 2) for x in per_seed.mean(axis=0)],
            "per_seed": [[round(float(x), 2) for x in seed] for seed in per_seed],
        },
        "final_returns": [round(float(x), 2) for x in per_seed[:, -1]],
        "mean": round(float(per_seed[:, -1].mean()), 2),
        "std": round(float(per_seed[:, -1].std()), 2),
        **learning_summary(per_seed),
        "published": published(task, env_steps, agent_name),
        "published_seeds": published_seeds(task, env_steps, agent_name),
        "published_source": task.published[agent_name].source,
        "chunks": progress["chunks"],
        **{key: round(timing[key], 3 if key != "exec_s" else 4) for key in TIMING},
        "minutes": round(timing["minutes"], 3),
        **fields,
        "peak_bytes": peak_bytes(),
        **({} if name is None else {"machine": name}),
    }


def table_row(row: dict[str, Any]) -> dict[str, Any]:
    """The full row as a row of the learning table (`learning_checks.py`'s format), in decisions."""
    agent = row["agent"]
    base = KEYWORDS[agent]
    differs = {key: value for key, value in row["settings"].items() if key not in base or base[key] != value}
    label = SETTINGS[agent] + (f" ({', '.join(f'{k}={v}' for k, v in differs.items())})" if differs else "")
    curve, repeat = row["curve"], row["settings"]["action_repeat"]
    return {
        "agent": agent,
        "env_id": row["task"],
        "settings": label,
        "n_timesteps": row["n_timesteps"],
        "curve": {
            "timestep": [t // repeat for t in curve["env_steps"]],
            "mean": curve["mean"],
            "per_seed": curve["per_seed"],
        },
        **scores_of(row),
    }


def summary(row: dict[str, Any]) -> str:
    """One line: the task's returns beside the published one, and its time."""
    ci = interval_text(row["iqm_ci"])
    reference = "none at this budget" if row["published"] is None else f"{row['published']:g}"
    calls = f" in {row['chunks']} calls" if row["chunks"] > 1 else ""
    return (
        f"{row['agent']} {row['task']}: IQM {row['iqm']:.1f} {ci} over {len(row['seeds'])} seeds at "
        f"{row['env_steps']:,} env steps (published {reference}); compile {row['compile_s']:.1f} s, exec "
        f"{row['exec_s']:.1f} s, {row['minutes']:.1f} min{calls} on {row['device_kind']}"
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", choices=AGENTS, default="TDMPC2", help="default: TDMPC2")
    parser.add_argument("--tasks", nargs="+", choices=sorted(TASKS), default=list(TASKS), help="default: all")
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1, vmapped in one program (default: 3)")
    parser.add_argument("--env-steps", type=int, default=PUBLISHED_AT, help="env steps a seed (default: 100,000)")
    parser.add_argument("--eval-every", type=int, default=10_000, help="env steps between evaluations")
    parser.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE", help="the agent's keywords")
    parser.add_argument(
        "--minutes", type=float, help="start no task (with --checkpoint-dir: no chunk) after this many minutes"
    )
    parser.add_argument(
        "--checkpoint-dir", type=Path, help="train each task in chunks of --eval-every, resumable from here"
    )
    add_save_minutes(parser)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--table-out", type=Path, default=TABLE_OUT)
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.env_steps < ACTION_REPEAT or args.eval_every < ACTION_REPEAT:
        parser.error("--seeds must be positive, and --env-steps and --eval-every at least the action repeat.")
    if (args.minutes is not None and args.minutes < 0) or args.save_minutes < 0:
        parser.error("--minutes and --save-minutes cannot be negative.")
    if args.save_minutes and args.checkpoint_dir is None:
        parser.error("--save-minutes spaces a chunked run's checkpoints, so it needs --checkpoint-dir.")
    try:
        args.overrides = parse_overrides(args.set)
    except ValueError as error:
        parser.error(str(error))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    clock = Clock(args.minutes, args.save_minutes)
    settings = keywords(args.overrides, args.agent)
    progress = {}
    if args.checkpoint_dir is not None:
        # Every task's checkpoint is checked before any trains: a mismatch costs no device time.
        for name in args.tasks:
            identity = run_identity(args.agent, name, settings, args.seeds, args.env_steps, args.eval_every)
            try:
                progress[name] = read_progress(
                    checkpoint_paths(args.checkpoint_dir, args.agent, name)[1], identity, FLAGS
                )
            except CheckpointMismatchError as error:
                raise SystemExit(f"dmc_rows.py: {error}") from error
    for name in args.tasks:
        if progress.get(name) is not None and progress[name]["done"]:
            print(f"{args.agent} {name}: done, its rows written (checkpoint in {args.checkpoint_dir})")
            continue
        if args.checkpoint_dir is None:
            if args.minutes is not None and clock.elapsed_s() > 60 * args.minutes:
                print(f"stopped before {name}: --minutes {args.minutes:g} passed")
                break
        elif not clock.may_start_chunk(new_program=True):
            print(f"stopped before {name}, as --minutes {args.minutes:g} ask")
            break
        try:
            row = train_task(
                TASKS[name],
                args.agent,
                settings,
                args.seeds,
                args.env_steps,
                args.eval_every,
                clock,
                args.checkpoint_dir,
            )
        except CheckpointMismatchError as error:
            raise SystemExit(f"dmc_rows.py: {error}") from error
        if row is None:
            break
        stamped = stamp(row)
        append_row(args.out, stamped)
        append_row(args.table_out, table_row(stamped))
        if args.checkpoint_dir is not None:
            _, progress_path = checkpoint_paths(args.checkpoint_dir, args.agent, name)
            finished = json.loads(progress_path.read_text())
            write_json(progress_path, {**finished, "done": True})
        print(summary(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
