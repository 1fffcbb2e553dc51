"""`ajax train AGENT ENV_ID`: train a registered agent on an environment id and keep what the run produced.

Every seed trains as one compiled program. The run is cut into equal chunks so that a progress bar can
move between them from Python: nothing is called back from inside the compiled program. A chunked run is
the same run as one uninterrupted call, because every chunk resumes from the state the previous one
returned and keeps the run's horizon for its schedules.

An agent that learns offline from several tasks' data (`DATASET_AGENTS`: TDMPC2MultiTask) takes the path
of a saved `MultiTaskDataset` in ENV_ID's place; its timesteps count updates, and its table and learning
curve report the mean normalised score over its tasks, whose returns lie on scales of their own.

The run folder gets `config.json`, `evaluations.jsonl`, `evaluations.csv` and `learning_curve.png`, so a
run can be inspected, compared and plotted again without rerunning it. After every chunk it also holds
`checkpoint.ckpt`, the whole state written atomically, and the evaluations so far: `ajax train --resume
RUN_DIR` continues a run stopped at any moment (even by SIGKILL) from its last chunk, and ends where the
uninterrupted run would have.

`--tensorboard` and `--wandb` also record the run, one TensorBoard run and one W&B run per seed in
`RUN_DIR/seed_<s>`. One logging worker serves the whole command and is fed each chunk's evaluations as the
chunk returns: the chunks' programs stay free of host callbacks, so the compile cache still holds them, and
the worker starts once rather than once per chunk.

`train_command` runs its steps in this order: the agent's name (read back from the run folder for
`--resume`), the budget, the agent, the run folder (restored, or its config.json written), the line naming
JAX's backend and devices, the chunks under a progress bar, then the files and the summary.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import traceback
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from ajax._compile_cache import CompileTally
from ajax.commands.arguments import DATASET_AGENTS, DEFAULT_TIMESTEPS, build_agent, positive_int, resolve_agent
from ajax.commands.results import (
    Report,
    evaluation_rows,
    final_returns,
    gone,
    plot_learning_curve,
    report_of,
    summary_table,
    target_name,
)
from ajax.commands.run_folder import (
    CHECKPOINT,
    N_CHUNKS,
    Row,
    chunk_targets,
    make_run_folder,
    read_jsonl,
    saved_run,
    write_config,
    write_csv,
    write_jsonl,
)
from ajax.hardware import device_report

if TYPE_CHECKING:
    from ajax.agents.base import ActorCritic


def add_parser(commands: argparse._SubParsersAction) -> None:
    """The `train` subcommand's parser, under the `ajax` parser's `commands`."""
    train = commands.add_parser(
        "train",
        allow_abbrev=False,
        help="train an agent on an environment and write the run's results to a folder",
        description="Train AGENT on ENV_ID for every seed 0..N-1 and write config.json, evaluations.jsonl, "
        "evaluations.csv and learning_curve.png to the run folder.",
    )
    train.add_argument("agent", metavar="AGENT", nargs="?", help="agent name, e.g. DQN, PPO or SAC")
    train.add_argument(
        "env_id",
        metavar="ENV_ID",
        nargs="?",
        help="environment id, e.g. CartPole-v1 or Pendulum-v1; for TDMPC2MultiTask, the path of a saved "
        "MultiTaskDataset (scripts/make_multitask_dataset.py makes one)",
    )
    train.add_argument(
        "--resume",
        type=Path,
        default=None,
        metavar="RUN_DIR",
        help="continue the run in RUN_DIR from its last checkpoint, with the settings in its config.json",
    )
    train.add_argument("--seeds", type=positive_int, default=1, help="train seeds 0..N-1 (default: 1)")
    train.add_argument(
        "--timesteps",
        type=positive_int,
        default=None,
        help=f"environment steps per seed, updates for TDMPC2MultiTask (default: {DEFAULT_TIMESTEPS}, or the --zoo "
        "preset's budget)",
    )
    train.add_argument("--n-envs", type=positive_int, default=None, help="parallel envs (default: the agent's)")
    train.add_argument(
        "--zoo",
        action="store_true",
        help="start from the RL Baselines3 Zoo's tuned settings for AGENT on ENV_ID (ajax.zoo)",
    )
    train.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set one of the agent's arguments, over --zoo and --n-envs (repeatable): numbers, true/false, none, "
        "and comma-separated tuples such as actor_architecture=64,relu,64,relu",
    )
    train.add_argument("--out", type=Path, default=None, help="run folder (default: runs/<AGENT>-<ENV_ID>-<timestamp>)")
    train.add_argument(
        "--log-frequency",
        type=positive_int,
        default=None,
        help="evaluate every F environment steps, updates for TDMPC2MultiTask (default: timesteps // 20)",
    )
    train.add_argument(
        "--num-episode-test",
        type=positive_int,
        default=None,
        help="episodes per evaluation (default: the library's)",
    )
    train.add_argument(
        "--tensorboard",
        action="store_true",
        help="also write TensorBoard event files, one run per seed, in RUN_DIR/seed_<s>",
    )
    train.add_argument(
        "--wandb",
        action="store_true",
        help="also record one Weights & Biases run per seed (project ajax; files in RUN_DIR/seed_<s>/wandb)",
    )
    train.add_argument(
        "--wandb-mode",
        choices=("online", "offline"),
        default="online",
        help="offline writes the W&B runs to disk only, for `wandb sync` later (default: online)",
    )
    train.add_argument(
        "--on-nonfinite",
        choices=("warn", "raise"),
        default="warn",
        help="a seed gone NaN or infinite: warn and train on, or stop with exit status 1 (default: warn)",
    )


# Training in chunks ---------------------------------------------------------------------------------------
def train_in_chunks(
    agent: ActorCritic,
    seeds: Sequence[int],
    total: int,
    log_frequency: int,
    num_episode_test: int | None = None,
    state: Any = None,
    on_nonfinite: str = "warn",
) -> Iterator[tuple[int, dict[str, np.ndarray], Any]]:
    """Train `total` steps per seed, yielding `(timestep, evaluations, state)` after each chunk.

    The untrained state comes from a zero-step call (or is the `state` a resumed run restored) so
    that every chunk is a resumed call of the same shape: the program compiles once and later chunks
    load it from the compile cache. Each chunk trains to its target with the run's horizon, which
    makes the whole equal to one call.
    """
    from ajax.agents.base import BudgetWarning
    from ajax.logging.wandb_logging import LoggingConfig

    logging_config = LoggingConfig(log_frequency=log_frequency)
    extra = {} if num_episode_test is None else {"num_episode_test": num_episode_test}
    if state is None:
        state, _ = agent.train(seed=list(seeds), n_timesteps=0, total_timesteps=total)
    for target in chunk_targets(total, agent.rollout_steps() or min(log_frequency, total)):
        current = int(state.collector_state.timestep[0])
        if current >= target:  # an on-policy rollout already overshot this chunk's end
            continue
        with warnings.catch_warnings():
            # Both warnings judge one chunk as if it were the run: the run's own budget was checked once.
            warnings.filterwarnings("ignore", category=BudgetWarning)
            warnings.filterwarnings("ignore", message="log_frequency=", category=UserWarning)
            state, evaluations = agent.train(
                seed=list(seeds),
                n_timesteps=target - current,
                logging_config=logging_config,
                initial_state=state,
                total_timesteps=total,
                on_nonfinite=on_nonfinite,
                **extra,
            )
        rows = {name: np.asarray(values) for name, values in (evaluations or {}).items()}
        yield int(state.collector_state.timestep[0]), rows, state


def budget_warnings(agent: ActorCritic, total: int) -> list[str]:
    """The agent's warnings about the whole run's budget, as text to print once."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent.check_budget(total)
    return [str(warning.message) for warning in caught]


# The command's settings -----------------------------------------------------------------------------------
def _default_out(agent: str, env_id: str) -> Path:
    """`runs/<AGENT>-<ENV_ID>-<timestamp>`, the env id made safe for a folder's name."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    target = Path(env_id).stem if agent in DATASET_AGENTS else env_id
    safe_env = "".join(c if c.isalnum() or c in "-_." else "_" for c in target)
    return Path("runs") / f"{agent}-{safe_env}-{stamp}"


def _resumed_arguments(args: argparse.Namespace) -> str | None:
    """Fill `args` from the run folder's config.json for --resume; an error message if it cannot be resumed."""
    run_dir = Path(args.resume)
    cli, problem = saved_run(run_dir, started=False)
    if cli is None:
        return problem
    args.agent, args.env_id, args.seeds, args.timesteps = cli["agent"], cli["env_id"], cli["seeds"], cli["timesteps"]
    args.n_envs, args.log_frequency, args.num_episode_test = (
        cli["n_envs"],
        cli["log_frequency"],
        cli["num_episode_test"],
    )
    # Run folders written before the logging switches existed recorded no backend.
    args.tensorboard, args.wandb = cli.get("tensorboard", False), cli.get("wandb", False)
    args.wandb_mode = cli.get("wandb_mode", "online")
    args.on_nonfinite = cli.get("on_nonfinite", "warn")
    args.zoo, args.param = cli.get("zoo", False), cli.get("params", [])
    args.out = run_dir
    return None


def _dataset_agent_refusal(agent_name: str, args: argparse.Namespace) -> str | None:
    """Why a dataset agent's command cannot run as given: an option it has no use for; None if none."""
    if args.zoo:
        return (
            f"--zoo does not apply to {agent_name}: it trains offline on a dataset file, and the Zoo has no presets "
            "for it."
        )
    if args.n_envs is not None:
        return (
            f"--n-envs does not apply to {agent_name}: it steps no env while it trains, and evaluates each task in "
            "one env."
        )
    return None


def _agent_name(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """The registered agent the command trains (its settings read into `args` for --resume); or None and why
    the command cannot run."""
    from ajax.agents.registry import AGENTS

    if args.resume is not None:
        problem = _resumed_arguments(args)
        if problem is not None:
            return None, problem
    elif args.agent is None or args.env_id is None:
        return None, "ajax train needs AGENT and ENV_ID, or --resume RUN_DIR."
    agent_name = resolve_agent(args.agent, list(AGENTS))
    if agent_name is None:
        return None, f"Unknown agent {args.agent!r}. Available agents: {', '.join(AGENTS)}."
    if agent_name in DATASET_AGENTS:
        problem = _dataset_agent_refusal(agent_name, args)
        if problem is not None:
            return None, problem
    return agent_name, None


def _budget(args: argparse.Namespace, agent_name: str) -> tuple[tuple[int, int] | None, str | None]:
    """The run's timesteps per seed and its evaluation period: given, the Zoo preset's, or the defaults; or
    None and why they make no run."""
    if args.timesteps is not None:
        total = int(args.timesteps)
    elif args.zoo:
        from ajax import zoo as presets

        try:
            total = presets.preset(agent_name, args.env_id).n_timesteps
        except ValueError as error:
            return None, f"Cannot train {agent_name} on {args.env_id!r}: {error}"
    else:
        total = DEFAULT_TIMESTEPS
    log_frequency = int(args.log_frequency) if args.log_frequency is not None else max(1, total // N_CHUNKS)
    if log_frequency > total:
        return None, f"--log-frequency ({log_frequency}) exceeds --timesteps ({total}): the run would never evaluate."
    return (total, log_frequency), None


# The run --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Run:
    """What the command's steps after its checks share: the agent, what it trains on, its budget, its folder."""

    name: str
    env_id: str
    agent: ActorCritic
    seeds: list[int]
    total: int
    log_frequency: int
    out: Path

    @property
    def report(self) -> Report:
        """What the progress bar, the table and the curve call the run's metric and steps."""
        return report_of(self.name)

    @property
    def title(self) -> str:
        """The agent and what it trains on, as the progress bar, the table and the curve name the run."""
        return f"{self.name} on {target_name(self.name, self.env_id)}"


@dataclass(frozen=True)
class _Outcome:
    """How the chunks ended: every evaluation row, the last state, and whether a stop cut the run short."""

    rows: list[Row]
    state: Any
    interrupted: bool
    stopped: str | None
    wall_time: float
    unwritable: str | None = None  # the run folder could not be written (a full disk): why, in one line


def _resume(run: _Run, console: Console) -> tuple[Any, list[Row], str | None]:
    """The state the run folder's checkpoint holds and the rows evaluated up to it; or why it does not fit."""
    from ajax.checkpoint import CheckpointError, restore_into
    from ajax.environments.host import HostEnv

    skeleton, _ = run.agent.train(seed=run.seeds, n_timesteps=0, total_timesteps=run.total)
    try:
        state = restore_into(skeleton, run.out / CHECKPOINT, agent=run.agent)
    except CheckpointError as error:  # the settings match, the arrays do not: another agent's file
        return None, [], str(error)
    reached = int(state.collector_state.timestep[0])
    # Rows are written before the checkpoint: any past it belong to the chunk that will run again.
    try:
        previous_rows = [row for row in read_jsonl(run.out / "evaluations.jsonl") if row["timestep"] <= reached]
    except ValueError as error:
        return None, [], str(error)
    console.print(f"Resuming {run.out} at timestep {reached} of {run.total}.", highlight=False)
    if isinstance(run.agent.env_args.env, HostEnv):
        console.print(
            f"{run.agent.env_args.env.name} steps on the host, whose env state a checkpoint cannot hold: "
            "every copy starts a fresh episode (the agent, replay, normalisers and keys resume exactly).",
            highlight=False,
        )
    return state, previous_rows, None


def _write_settings(run: _Run, args: argparse.Namespace, console: Console) -> None:
    """A new run's config.json, which --resume and `ajax eval` read back; then the budget's warnings, once."""
    cli_arguments = {
        "agent": run.name,
        # A dataset file by its absolute path: --resume and `ajax eval` find it from any directory.
        "env_id": str(Path(run.env_id).resolve()) if run.name in DATASET_AGENTS else run.env_id,
        "seeds": len(run.seeds),
        "timesteps": run.total,
        "n_envs": args.n_envs,
        "zoo": args.zoo,
        "params": list(args.param),
        "log_frequency": run.log_frequency,
        "num_episode_test": args.num_episode_test,
        "out": str(run.out),
        "tensorboard": args.tensorboard,
        "wandb": args.wandb,
        "wandb_mode": args.wandb_mode,
        "on_nonfinite": args.on_nonfinite,
    }
    write_config(run.out / "config.json", run.agent.config, cli_arguments)
    for message in budget_warnings(run.agent, run.total):
        console.print(f"[yellow]Warning:[/] {message}", markup=True, highlight=False)


def logging_worker(args: argparse.Namespace, out: Path, seeds: Sequence[int]) -> contextlib.AbstractContextManager:
    """The command's logging worker when `--tensorboard` or `--wandb` is on (a null context otherwise).

    Its runs live in `out/seed_<s>` and record the run folder's config.json, which holds the agent's
    settings and the command's.
    """
    from ajax.logging.wandb_logging import LoggingConfig
    from ajax.logging.worker import LoggingWorker, worker_plan

    if not (args.tensorboard or args.wandb):
        return contextlib.nullcontext()
    logging_config = LoggingConfig(
        config=json.loads((out / "config.json").read_text()),
        folder=str(out.parent),
        run_name=out.name,
        use_tensorboard=args.tensorboard,
        use_wandb=args.wandb,
        mode=args.wandb_mode,
    )
    return LoggingWorker(worker_plan(logging_config, seeds))


def _train_with_progress(
    run: _Run, args: argparse.Namespace, state: Any, previous_rows: list[Row], console: Console
) -> _Outcome:
    """Train the chunks under a progress bar, the rows and checkpoint written after each; an interrupt or a
    non-finite stop keeps what the finished chunks wrote."""
    from ajax.checkpoint import save_checkpoint
    from ajax.environments.host import HostEnvError
    from ajax.nonfinite import NonFiniteError

    def all_rows(chunks: Sequence[dict[str, np.ndarray]]) -> list[Row]:
        return sorted(
            previous_rows + evaluation_rows(chunks, run.seeds), key=lambda row: (row["seed"], row["timestep"])
        )

    chunks: list[dict[str, np.ndarray]] = []
    interrupted, stopped, unwritable = False, None, None
    started = time.perf_counter()
    progress = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(run.report.steps),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
    )
    with progress, logging_worker(args, run.out, run.seeds) as worker:
        task = progress.add_task(f"{run.title} ({len(run.seeds)} seeds)", total=run.total)
        if state is not None:
            progress.update(task, completed=int(state.collector_state.timestep[0]))
        try:
            chunks_run = train_in_chunks(
                run.agent, run.seeds, run.total, run.log_frequency, args.num_episode_test, state, args.on_nonfinite
            )
            for timestep, evaluations, state in chunks_run:
                chunks.append(evaluations)
                if worker is not None:
                    worker.send_rows(evaluations)
                write_jsonl(run.out / "evaluations.jsonl", all_rows(chunks))
                save_checkpoint(state, run.out / CHECKPOINT, agent=run.agent)
                progress.update(task, completed=min(timestep, run.total))
        except KeyboardInterrupt:  # keep what the finished chunks evaluated
            interrupted = True
        except NonFiniteError as error:  # --on-nonfinite raise: stop, keep the finished chunks' files
            # The state went to the chunk that raised (donated, so deleted): the error names the seeds.
            state, stopped = None, str(error)
        except HostEnvError as error:  # the env raised: stop, keep the finished chunks' files
            state, stopped = None, _host_failure(error, run.out)  # the state went to the chunk that failed
        except OSError as error:  # a full disk: each file is written beside the old one, so the last stays whole
            unwritable = (
                f"Could not write to {run.out} ({error.strerror or error}): its checkpoint still holds the last "
                f"chunk written. Free space, then run `ajax train --resume {run.out}`."
            )
    wall_time = time.perf_counter() - started
    return _Outcome(all_rows(chunks), state, interrupted, stopped, wall_time, unwritable)


def _host_failure(error: Exception, out: Path) -> str:
    """What `ajax train` prints when a host env raised mid-run: the env's own traceback, the error naming the env
    and its step, and how to go on."""
    cause = "".join(traceback.format_exception(error.__cause__)) if error.__cause__ is not None else ""
    kept = "its checkpoint holds the last chunk that finished" if (out / CHECKPOINT).exists() else "no chunk finished"
    return f"{cause}{error}\nThe run stopped; {kept}. Fix the env, then run `ajax train --resume {out}`."


def _write_and_summarise(run: _Run, outcome: _Outcome, console: Console, compiled: CompileTally) -> int:
    """The run folder's last files and the summary table; the exit status: 130 interrupted, 1 stopped."""
    if outcome.unwritable is not None:
        print(outcome.unwritable, file=sys.stderr)
        return 1
    rows = outcome.rows
    write_jsonl(run.out / "evaluations.jsonl", rows)
    write_csv(run.out / "evaluations.csv", rows)
    plotted = plot_learning_curve(run.out / "learning_curve.png", rows, run.title, run.report)

    finals = final_returns(rows, run.seeds, run.report.metric)
    nonfinite = gone(outcome.state, run.seeds)
    console.print(summary_table(finals, f"{run.title}: final evaluation {run.report.quantity}", nonfinite, run.report))
    console.print(f"Wall time: {outcome.wall_time:.1f} s (compilation included)", highlight=False)
    console.print(compiled.summary(), highlight=False)
    if not plotted:
        console.print("No evaluation finished: learning_curve.png was not written.", highlight=False)
    console.print(f"Run folder: {run.out}", highlight=False)
    if outcome.interrupted:
        console.print("[yellow]Interrupted:[/] the files hold the evaluations of the finished chunks.")
        return 130
    if outcome.stopped is not None:
        print(outcome.stopped, file=sys.stderr)
        return 1
    return 0


# The command ----------------------------------------------------------------------------------------------
def train_command(args: argparse.Namespace, console: Console) -> int:
    """`ajax train`: build the agent (refusing bad names cleanly), train in chunks, write and summarise."""
    agent_name, problem = _agent_name(args)
    if agent_name is None:
        print(problem, file=sys.stderr)
        return 2
    budget, problem = _budget(args, agent_name)
    if budget is None:
        print(problem, file=sys.stderr)
        return 2
    settings = {"zoo": args.zoo, "n_envs": args.n_envs, "params": list(args.param)}
    try:
        agent = build_agent(agent_name, args.env_id, settings)
    except (ValueError, TypeError) as error:  # unknown env id or name, wrong action space, bad setting
        print(f"Cannot train {agent_name} on {args.env_id!r}: {error}", file=sys.stderr)
        return 2

    total, log_frequency = budget
    out = Path(args.out) if args.out is not None else _default_out(agent_name, args.env_id)
    run = _Run(agent_name, args.env_id, agent, list(range(int(args.seeds))), total, log_frequency, out)
    problem = make_run_folder(out)
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    state, previous_rows = None, []
    if args.resume is not None and not (out / CHECKPOINT).exists():
        # Stopped before its first checkpoint: nothing was trained that a restart would not redo.
        console.print(f"{out} has no checkpoint yet: starting its run over, with its saved settings.", highlight=False)
    elif args.resume is not None:
        state, previous_rows, problem = _resume(run, console)
        if problem is not None:
            print(problem, file=sys.stderr)
            return 2
    else:
        _write_settings(run, args, console)
    # Which device runs: an accelerator set-up that failed trains on the CPU, only slower.
    console.print(device_report(), highlight=False, soft_wrap=True)
    with CompileTally() as compiled:
        outcome = _train_with_progress(run, args, state, previous_rows, console)
    return _write_and_summarise(run, outcome, console, compiled)
