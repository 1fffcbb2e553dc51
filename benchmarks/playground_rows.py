"""Ajax's PPO on MuJoCo Playground's DM Control suite at Playground's own PPO settings (issue 59).

For each task asked for, one command builds Playground's published Brax configuration
(`mujoco_playground.config.dm_control_suite_params.brax_ppo_config(task)`, playground 0.2.0),
turns it into Ajax's keywords with `ajax.agents.brax_settings.ppo_from_brax` (docs/brax.md's
tables in code), trains `PPO(task, ...)` on `--seeds` seeds vmapped in one program
(`train(seed=[0, ..., n-1])`, so the config's own `seed` key is not used), evaluates inside
the run at the config's `num_evals` (Brax's first evaluation, before training, has no
counterpart: the curve starts after the first interval) and once more on the state the run
ends in, and appends two JSON lines:

- to `--out` (default `playground_rows.jsonl` beside this script, made by the first run), the full row:
  `task`; `settings`, the Brax configuration as run (Playground's, with `--set` and
  `--budget-scale` applied), and `overrides`, what of it differs from Playground's;
  `ajax_keywords`, what `ppo_from_brax` made of it; `n_timesteps` (the budget a seed) and
  `steps` (every seed's steps: a rollout runs whole, so a little past the budget);
  `seeds`; `num_episode_test` (the config's `num_eval_envs`, greedy episodes an evaluation);
  `curve` (`timestep`, each seed's return at each evaluation in `per_seed` and their `mean`);
  `final_returns` (each seed's last evaluation), `mean`, `std`; `learning_summary`'s fields
  (`final3`, each seed's mean of its last three evaluations, `final3_mean`, `iqm` and its 95%
  bootstrap interval `iqm_ci`, none below three seeds: `intervals.py`); `published` (the
  return Playground publishes for the task, or null where none was found) and
  `published_source` (where it comes from, or why it is null); the `train` calls'
  compilation by stage (`compile_s`, the union of JAX's compile spans, and `trace_s`,
  `lower_s`, `backend_compile_s`, `backend_compile_by_program`: `compile_spans.py`) apart from
  their execution (`exec_s`, the calls less those spans, evaluations included, and
  `exec_steps_per_s`), summed over `train_calls` calls (one, unless chunked; a resumed
  command's compile of the same program again is not counted) and `train_call_s` their whole
  time; `setup_s` (building the agent and its env); `eval_compile_s` and
  `eval_s` (the final evaluation); `minutes` (the task's time in the last command); the device
  (`perf_bench.device_fields`), `peak_bytes`, `machine` (as the learning table names it), the
  playground and brax versions, and `timestamp` and `commit`;
- to `--table-out` (default `benchmarks/learning_checks.jsonl`), the learning table's row
  for it (`results_page.py` renders it into docs/results.md): `settings` reads
  "Playground brax_ppo_config" plus anything changed, and `machine` is set off the 2-core CPU
  ("TPU v5e" for JAX's "TPU v5 lite").

Every task is at Playground's default except what its `brax_ppo_config` changes
(`TASKS` below): 60M steps, 10 evaluations, reward scaling 10, 1,000-step episodes,
observation normalisation, unroll 30, 32 minibatches of 1,024 segments, 16 updates a batch,
discount 0.995, learning rate 1e-3, entropy 1e-2, 2,048 envs, Brax's 4x32 policy and 5x256
value networks; BallInCup and FingerSpin discount 0.95. Playground's config gives
PendulumSwingup action repeat 4 and 4 updates a batch only under the name "PendulumSwingUp",
which is not the task's id, so `brax_ppo_config("PendulumSwingup")`, what Playground's
`train_jax_ppo.py` calls, leaves it at the defaults; this script runs what it returns.

One process runs every task (compilation is told apart by JAX's spans, not by a fresh
process); `--minutes` starts no task after that many minutes, for a machine lent for ten.
A budget longer than one call trains in chunks: with `--checkpoint-dir`, one evaluation
period a `train` call with the whole budget as every call's horizon (the resume contract
makes the calls one run), each task's state checkpointed there (`world_models/chunks.py`,
`--save-minutes` spacing the checkpoints), no call started that would end past `--minutes`,
and the same command again resumes where the last stopped; the row is written once the
task's budget is done. `--brax-seeds` runs Brax's own `ppo.train` instead, at the same config on
Playground's task as Playground's training script wraps it, one fresh process a seed timed as
`brax_race.py` times its races, one row a seed to `--out` (`"library": "brax"`).
On a CPU Ajax picks MJX's pure-JAX physics (`impl="jax"`), as it does on a TPU.

    python benchmarks/playground_rows.py --tasks CartpoleBalance --minutes 9      # a TPU call
    python benchmarks/playground_rows.py --tasks CheetahRun --checkpoint-dir /tmp/pg --minutes 9  # again to resume
    python benchmarks/playground_rows.py --tasks CartpoleBalance --brax-seeds 0 1 2 --minutes 9     # Brax's trainer
    python benchmarks/playground_rows.py --budget-scale 0.1 --out runs/pg.jsonl --table-out runs/pg_table.jsonl
    JAX_PLATFORMS=cpu python benchmarks/playground_rows.py --tasks CartpoleBalance --seeds 2 \\
        --set num_timesteps=160 num_envs=4 batch_size=4 num_minibatches=2 num_updates_per_batch=1 \\
        unroll_length=5 num_evals=3 episode_length=20 num_eval_envs=2 \\
        "network_factory={'policy_hidden_layer_sizes': (8,), 'value_hidden_layer_sizes': (8,)}" \\
        --out runs/pg.jsonl --table-out runs/pg_table.jsonl          # a CPU smoke run, ~30 s a task
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the sibling benchmark modules
sys.path.insert(0, str(HERE / "world_models"))  # chunks.py, a run trained in resumable calls

from chunks import (  # noqa: E402
    Chunk,
    Clock,
    add_evaluations,
    add_save_minutes,
    fresh_progress,
    open_checkpoint,
    timed_chunk,
    train_in_chunks,
)

from brax_race import jsonable, parse_overrides  # noqa: E402
from intervals import interval_text  # noqa: E402
from provenance import append_row, machine_name  # noqa: E402
from results_page import scores_of  # noqa: E402

ROOT = HERE.parent
OUT = HERE / "playground_rows.jsonl"
TABLE_OUT = HERE / "learning_checks.jsonl"
RETURN = "Eval/episodic mean reward"
SETTINGS = "Playground brax_ppo_config"
NETWORK_KEYS = ("policy_hidden_layer_sizes", "value_hidden_layer_sizes")


@dataclass(frozen=True)
class Task:
    """A DM Control task Playground publishes PPO settings for, and the return it publishes."""

    name: str
    published: float | None
    source: str


# The Playground report (Zakka et al., 2025, "MuJoCo Playground", arXiv 2502.08844) shows
# PPO's DM Control results as reward curves in its figures; no printed number for them was
# found there, in the repository's files the search index holds or in the installed package.
# A value read off a plot is not a published number, so each stays None until one is found.
NOT_FOUND = (
    "not found: arXiv 2502.08844 plots PPO's DM Control reward curves but no number for them was found "
    "(nor in google-deepmind/mujoco_playground's files or playground 0.2.0)"
)
TASKS = {
    task.name: task
    for task in (
        Task("CartpoleBalance", None, NOT_FOUND),
        Task("CartpoleSwingup", None, NOT_FOUND),
        Task(
            "PendulumSwingup",
            None,
            f"{NOT_FOUND}; a user reads ~50 off the report's figure (google-deepmind/mujoco_playground#135), "
            "not a published number",
        ),
        Task("ReacherEasy", None, NOT_FOUND),
        Task(
            "FingerSpin",
            None,
            f"{NOT_FOUND}; a user reads ~600 off the report's figure (google-deepmind/mujoco_playground#135), "
            "not a published number",
        ),
        Task("BallInCup", None, NOT_FOUND),
        Task("CheetahRun", None, NOT_FOUND),
        Task("WalkerWalk", None, NOT_FOUND),
    )
}


# Settings -----------------------------------------------------------------------------------------
def playground_config(task: str) -> dict[str, Any]:
    """Playground's published Brax PPO configuration for `task`, as a plain dict."""
    from mujoco_playground.config import dm_control_suite_params

    return dm_control_suite_params.brax_ppo_config(task).to_dict()


def resolve(task: str, overrides: dict[str, Any], scale: float) -> dict[str, Any]:
    """Playground's configuration for `task` with the `--set` overrides, then the budget times `scale`."""
    settings = {**playground_config(task), **overrides}
    settings["num_timesteps"] = max(1, round(settings["num_timesteps"] * scale))
    return settings


def changed(task: str, settings: dict[str, Any]) -> dict[str, Any]:
    """What of `settings` differs from Playground's configuration for `task`."""
    published = playground_config(task)
    return {key: value for key, value in settings.items() if published.get(key, object()) != value}


def settings_label(differs: dict[str, Any]) -> str:
    """The learning table's `settings` cell: Playground's config, and what was changed."""
    parts = []
    for key, value in differs.items():
        if key == "network_factory":
            parts.append("networks " + " / ".join("x".join(map(str, value.get(name, ()))) for name in NETWORK_KEYS))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            parts.append(f"{key}={value:g}")
        else:
            parts.append(f"{key}={value}")
    return SETTINGS + (f" ({', '.join(parts)})" if parts else "")


def machine(fields: dict[str, Any]) -> dict[str, Any]:
    """The learning table's `machine` field: none on a CPU, the accelerator's kind otherwise."""
    name = machine_name(fields["backend"], fields["device_kind"])
    return {} if name is None else {"machine": name}


# A run --------------------------------------------------------------------------------------------
# What a checkpoint was made with, and the flags that set each.
FLAGS = {"task": "--tasks", "settings": "--set or --budget-scale", "seeds": "--seeds"}
STAGES = ("trace_s", "lower_s", "backend_compile_s")


def train(
    agent: Any, run: Any, identity: dict[str, Any], checkpoint_dir: Path | None, clock: Clock
) -> tuple[Any, dict[str, Any], dict[str, Any]] | None:
    """The run: one call, or with `checkpoint_dir` one evaluation period a call, checkpointed there
    (`benchmarks/world_models/chunks.py`), so that a budget longer than an accelerator's call spans
    several commands. Returns the state, the evaluations (seeds by evaluations, every call's) and
    the timings of every call of every command together; None when `clock` stopped it first."""
    from ajax.logging.wandb_logging import LoggingConfig
    from compile_spans import CompileSpans

    checkpoint, progress = open_checkpoint(checkpoint_dir, identity["task"], identity, FLAGS, "playground_rows.py")
    timings = {"calls": 0, "compile_s": 0.0, "exec_s": 0.0, "train_call_s": 0.0, **dict.fromkeys(STAGES, 0.0)}
    timings["programs"] = {}
    progress = progress or fresh_progress(identity, evaluations={}, timings=timings)
    logging = LoggingConfig(log_frequency=run.log_frequency) if run.log_frequency > 0 else None
    options = {
        "seed": identity["seeds"],
        "total_timesteps": run.n_timesteps,
        "num_episode_test": run.num_episode_test,
        "logging_config": logging,
    }
    pending: dict[str, Any] = {}

    def call(**kwargs: Any) -> Chunk:
        """One `train` call, its compile by stage and by program apart from its execution."""
        with CompileSpans() as programs:
            chunk, timing = timed_chunk(lambda: agent.train(**options, **kwargs))
        pending.update(timing, programs=programs.slowest_programs())
        return chunk

    def record(progress: dict[str, Any], chunk: Chunk) -> None:
        if chunk.evaluations is not None:
            add_evaluations(progress, chunk.evaluations, len(identity["seeds"]))
        kept = progress["timings"]
        kept["calls"] += 1
        kept["compile_s"] += chunk.compile_s
        kept["exec_s"] += chunk.exec_s
        kept["train_call_s"] += pending["first_call_s"]
        for stage in STAGES:
            kept[stage] += pending[stage]
        for program, seconds in pending["programs"].items():
            kept["programs"][program] = round(kept["programs"].get(program, 0.0) + seconds, 3)

    every = run.log_frequency if run.log_frequency > 0 else run.n_timesteps
    state = train_in_chunks(
        call, progress, run.n_timesteps, every, clock, checkpoint, agent, record, identity["task"], unit="steps"
    )
    if state is None:
        return None
    return state, progress["evaluations"], progress["timings"]


def run_task(
    task: Task, settings: dict[str, Any], n_seeds: int, checkpoint_dir: Path | None = None, clock: Clock | None = None
) -> dict[str, Any] | None:
    """Ajax's PPO on `task` at `settings` for `n_seeds` seeds: the full row (less its stamp), or
    None when `clock` stopped a chunked run before its end (`train`)."""
    import numpy as np

    from ajax.agents.brax_settings import ppo_from_brax
    from ajax.agents.registry import AGENTS
    from compile_spans import CompileSpans
    from intervals import learning_summary
    from perf_bench import device_fields, peak_bytes, steps_run

    started = time.perf_counter()
    run = ppo_from_brax(settings)
    agent = AGENTS["PPO"](task.name, **run.keywords)
    setup_s = time.perf_counter() - started
    seeds = list(range(n_seeds))
    identity = json.loads(json.dumps({"task": task.name, "settings": jsonable(settings), "seeds": seeds}))
    trained = train(agent, run, identity, checkpoint_dir, clock or Clock(None))
    if trained is None:
        return None
    state, evaluations, timing = trained
    with CompileSpans() as eval_spans:
        start = time.perf_counter()
        finals = np.asarray(agent.evaluate(state, num_episode_test=run.num_episode_test)[RETURN])
        eval_s = time.perf_counter() - start
    end = int(np.asarray(state.collector_state.timestep).reshape(-1)[0])
    timesteps: list[int] = []
    per_seed = finals[:, None]
    if evaluations:
        timesteps = [int(t) for t in evaluations["timestep"][0]]
        per_seed = np.concatenate([np.asarray(evaluations[RETURN]), finals[:, None]], axis=1)
    steps = steps_run(state)
    fields = device_fields()
    return {
        "task": task.name,
        "agent": "PPO",
        "settings": jsonable(settings),
        "overrides": jsonable(changed(task.name, settings)),
        "ajax_keywords": jsonable(run.keywords),
        "n_timesteps": run.n_timesteps,
        "steps": steps,
        "seeds": seeds,
        "num_episode_test": run.num_episode_test,
        "curve": {
            "timestep": [*timesteps, end],
            "mean": [round(float(x), 2) for x in per_seed.mean(axis=0)],
            "per_seed": [[round(float(x), 2) for x in seed] for seed in per_seed],
        },
        "final_returns": [round(float(x), 2) for x in finals],
        "mean": round(float(finals.mean()), 2),
        "std": round(float(finals.std()), 2),
        **learning_summary(per_seed),
        "published": task.published,
        "published_source": task.source,
        "compile_s": round(timing["compile_s"], 3),
        **{stage: round(timing[stage], 3) for stage in STAGES},
        "backend_compile_by_program": timing["programs"],
        "exec_s": round(timing["exec_s"], 4),
        "exec_steps_per_s": round(steps / timing["exec_s"], 1),
        "exec_from": "the train calls less their compile spans, the evaluations in them",
        "train_call_s": round(timing["train_call_s"], 3),
        "train_calls": timing["calls"],
        "setup_s": round(setup_s, 3),
        "eval_compile_s": round(min(eval_spans.total(), eval_s), 3),
        "eval_s": round(eval_s, 3),
        "minutes": round((time.perf_counter() - started) / 60, 3),
        **fields,
        "peak_bytes": peak_bytes(),
        **machine(fields),
        "playground": importlib.metadata.version("playground"),
        "brax": importlib.metadata.version("brax"),
    }


def table_row(row: dict[str, Any]) -> dict[str, Any]:
    """The full row as a row of the learning table (`learning_checks.py`'s format)."""
    return {
        "agent": "PPO",
        "env_id": row["task"],
        "settings": settings_label(row["overrides"]),
        "n_timesteps": row["n_timesteps"],
        "num_episode_test": row["num_episode_test"],
        "curve": row["curve"],
        **scores_of(row),
    }


def summary(row: dict[str, Any]) -> str:
    """One line: the task's returns beside the published one, and its time."""
    ci = interval_text(row["iqm_ci"])
    published = "not found" if row["published"] is None else f"{row['published']:g}"
    return (
        f"PPO {row['task']}: IQM {row['iqm']:.1f} {ci} over {len(row['seeds'])} seeds (published {published}); "
        f"{row['steps']:,} steps, compile {row['compile_s']:.1f} s, exec {row['exec_s']:.1f} s "
        f"({row['exec_steps_per_s']:,.0f} steps/s), {row['minutes']:.1f} min on {row['device_kind']}"
    )


# Command line -------------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", choices=sorted(TASKS), default=list(TASKS), help="default: all")
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1, vmapped in one program (default: 3)")
    parser.add_argument("--budget-scale", type=float, default=1.0, help="Playground's num_timesteps times this")
    parser.add_argument(
        "--set",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="override keys of Playground's Brax config, e.g. num_envs=4 or network_factory={...}",
    )
    parser.add_argument(
        "--minutes",
        type=float,
        help="start no task after this many minutes; with --checkpoint-dir, no call that would end past them",
    )
    parser.add_argument(
        "--checkpoint-dir",
        type=Path,
        help="train one evaluation period a call, checkpointing each task there, and resume from it",
    )
    add_save_minutes(parser)
    parser.add_argument(
        "--brax-seeds",
        type=int,
        nargs="+",
        metavar="SEED",
        help="instead of Ajax, run Brax's own ppo.train at the same config, one fresh process a seed",
    )
    parser.add_argument(
        "--out", type=Path, default=OUT, help=f"append full rows here (default: {OUT.relative_to(ROOT)})"
    )
    parser.add_argument(
        "--table-out",
        type=Path,
        default=TABLE_OUT,
        help=f"append the learning table's rows here (default: {TABLE_OUT.relative_to(ROOT)})",
    )
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.budget_scale <= 0:
        parser.error("--seeds and --budget-scale must be positive.")
    try:
        args.overrides = parse_overrides(args.set)
    except ValueError as error:
        parser.error(str(error))
    factory = args.overrides.get("network_factory", {})
    if not isinstance(factory, dict) or set(factory) - set(NETWORK_KEYS):
        parser.error(f"--set network_factory= takes a dict of {', '.join(NETWORK_KEYS)}.")
    if args.brax_seeds is not None:
        # The workers own the accelerator; an import below (gymnax builds arrays as it loads) would
        # otherwise open it here first, and a TPU takes one process at a time.
        import jax

        jax.config.update("jax_platforms", "cpu")
    from ajax.agents.brax_settings import ppo_from_brax

    args.settings = {}
    for task in args.tasks:
        args.settings[task] = resolve(task, args.overrides, args.budget_scale)
        try:
            ppo_from_brax(args.settings[task])
        except ValueError as error:
            parser.error(f"{task}: {error}")
    return args


def brax_trainer(args: argparse.Namespace, until: float) -> int:
    """Brax's own trainer on each task at the same configuration, for each of `--brax-seeds` (the
    config's `seed` key), each in a fresh process (`brax_race.in_fresh_process`, which times it as
    the races do); one row a seed to `--out`, marked `"library": "brax"`."""
    from brax_race import in_fresh_process
    from brax_race import summary as race_summary
    from perf_bench import stamp

    done = 0
    for name in args.tasks:
        for seed in args.brax_seeds:
            left = until - time.time()
            if left <= 0:
                print(f"--minutes {args.minutes} passed: Brax's trainer on {name}, seed {seed}, not run", flush=True)
                continue
            settings = {**args.settings[name], "seed": seed}
            job = {"library": "brax", "agent": "ppo", "env": name, "suite": "playground", "settings": settings}
            job["source"] = f"{SETTINGS}('{name}'), playground {importlib.metadata.version('playground')}"
            row = stamp({"task": name, **in_fresh_process(job, None if math.isinf(left) else left)})
            append_row(args.out, row)
            print(race_summary(row), flush=True)
            done += "error" not in row
    return 0 if done else 1


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    from perf_bench import stamp

    until = math.inf if args.minutes is None else time.time() + 60 * args.minutes
    if args.brax_seeds is not None:
        return brax_trainer(args, until)
    clock = Clock(args.minutes, args.save_minutes)
    done = 0
    for name in args.tasks:
        if args.checkpoint_dir is None and time.time() >= until:  # chunked, `clock` says when to stop
            print(f"--minutes {args.minutes} passed: {name} not run", flush=True)
            continue
        row = run_task(TASKS[name], args.settings[name], args.seeds, args.checkpoint_dir, clock)
        if row is None:  # stopped between calls, its checkpoint kept for the next command
            break
        row = stamp(row)
        append_row(args.out, row)
        append_row(args.table_out, table_row(row))
        print(summary(row), flush=True)
        done += 1
    return 0 if done else 1


if __name__ == "__main__":
    sys.exit(main())
