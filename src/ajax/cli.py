"""The `ajax` command line: train a registered agent on an environment id and keep what the run produced.

`ajax train AGENT ENV_ID` trains every seed as one compiled program. The run is cut into equal chunks so
that a progress bar can move between them from Python: nothing is called back from inside the compiled
program. A chunked run is the same run as one uninterrupted call, because every chunk resumes from the
state the previous one returned and keeps the run's horizon for its schedules.

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
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
import os
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

if TYPE_CHECKING:
    from ajax.agents.base import ActorCritic
    from ajax.buffers.multitask import MultiTaskDataset

EVAL_RETURN = "Eval/episodic mean reward"
"""The metric the summary table and the learning curve report for an agent trained on an env."""

EVAL_SCORE = "Eval/normalized score"
"""What they report for a multi-task agent: its tasks' returns lie on scales of their own, and their
normalised scores (0 at the task's low score, 100 at its high one), averaged, put them on one."""

DATASET_AGENTS = frozenset({"TDMPC2MultiTask"})
"""Agents built on a saved `MultiTaskDataset`, whose path the command takes where others take an env id.

They step no env while they train (their timesteps count updates, --n-envs has nothing to set) and
the Zoo tunes none of them; each task is evaluated in its own env, by default the env of the task's name.
"""


@dataclass(frozen=True)
class Report:
    """What a run's summary table, learning curve and progress bar call its metric and its steps."""

    metric: str
    quantity: str  # the table's words: "final eval <quantity>", "<quantity> over K episodes"
    axis: str  # the learning curve's y label
    steps: str  # what a timestep counts


ENV_REPORT = Report(EVAL_RETURN, "return", "evaluation episodic return", "environment steps")
DATASET_REPORT = Report(EVAL_SCORE, "normalized score", "normalized score, mean over tasks", "updates")


def report_of(agent_name: str) -> Report:
    """How the command reports `agent_name`'s runs: a dataset agent's evaluations hold no single return."""
    return DATASET_REPORT if agent_name in DATASET_AGENTS else ENV_REPORT


N_CHUNKS = 20
"""How many times the progress bar moves: each chunk costs a trip out of the compiled program."""

Row = dict[str, Any]

DEFAULT_TIMESTEPS = 100_000


# Arguments ------------------------------------------------------------------------------------------------
def _positive_int(text: str) -> int:
    """An argparse type: counts of seeds, steps and envs below 1 make no run, so refuse them up front."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The `ajax` parser: the subcommands `train`, `eval` and `sweep` (whose parser `ajax.sweep_command` adds)."""
    parser = argparse.ArgumentParser(
        prog="ajax",
        description="Reinforcement-learning agents whose whole training run is one compiled JAX program. "
        "The command has three subcommands, train, eval and sweep.",
        epilog="`ajax COMMAND --help` lists a subcommand's options.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    train = commands.add_parser(
        "train",
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
    train.add_argument("--seeds", type=_positive_int, default=1, help="train seeds 0..N-1 (default: 1)")
    train.add_argument(
        "--timesteps",
        type=_positive_int,
        default=None,
        help=f"environment steps per seed, updates for TDMPC2MultiTask (default: {DEFAULT_TIMESTEPS}, or the --zoo "
        "preset's budget)",
    )
    train.add_argument("--n-envs", type=_positive_int, default=None, help="parallel envs (default: the agent's)")
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
        type=_positive_int,
        default=None,
        help="evaluate every F environment steps, updates for TDMPC2MultiTask (default: timesteps // 20)",
    )
    train.add_argument(
        "--num-episode-test",
        type=_positive_int,
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
    evaluate = commands.add_parser(
        "eval",
        help="evaluate the agent a run folder checkpointed",
        description="Restore RUN_DIR's checkpoint into the agent its config.json describes and evaluate every seed.",
    )
    evaluate.add_argument("run_dir", metavar="RUN_DIR", type=Path, help="a folder `ajax train` wrote")
    evaluate.add_argument(
        "--episodes", type=_positive_int, default=10, help="evaluation episodes per seed (default: 10)"
    )
    from ajax.sweep_command import add_parser as add_sweep_parser

    add_sweep_parser(commands)
    return parser


def parse_value(text: str) -> Any:
    """A `--param` value: a Python literal (1e-3, 64, True, (64, 64)), true/false/none, a comma-separated
    tuple of such values, or else the text itself (an activation's name)."""
    import ast

    words = {"true": True, "false": False, "none": None}
    if text.lower() in words:
        return words[text.lower()]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        pass
    if "," in text:
        return tuple(parse_value(item.strip()) for item in text.split(",") if item.strip())
    return text


def agent_arguments(
    agent_class: type[ActorCritic], env_id: str, *, zoo: bool, n_envs: int | None, params: Sequence[str]
) -> dict[str, Any]:
    """The constructor's keywords a command asks for: the Zoo preset, then --n-envs, then each --param.

    Raises ValueError naming what is wrong: a malformed --param, a name the agent does not take
    (with the names it takes), or an agent and env the Zoo has no preset for.
    """
    import inspect

    from ajax import zoo as presets

    kwargs = presets.preset(agent_class.name, env_id).kwargs if zoo else {}
    if n_envs is not None:
        kwargs["n_envs"] = int(n_envs)
    # After self, the constructor's first argument is what ENV_ID gives: the env id, or a dataset agent's dataset.
    accepted = list(inspect.signature(agent_class.__init__).parameters)[2:]
    for pair in params:
        name, equals, text = pair.partition("=")
        name = name.strip().replace("-", "_")
        if not equals or not name:
            raise ValueError(f"--param takes NAME=VALUE, got {pair!r}.")
        if name not in accepted:
            raise ValueError(f"{agent_class.name} takes no argument {name!r}; it takes {', '.join(accepted)}.")
        kwargs[name] = parse_value(text.strip())
    return kwargs


def load_dataset(path: str) -> MultiTaskDataset:
    """The `MultiTaskDataset` saved at `path`; a ValueError naming the path if there is none or it is damaged."""
    from ajax.buffers.multitask import MultiTaskDataset

    try:
        return MultiTaskDataset.load(path)
    except FileNotFoundError:
        raise ValueError(
            f"no dataset file {path} (the path of a MultiTaskDataset saved with MultiTaskDataset.save; "
            "scripts/make_multitask_dataset.py makes one)."
        ) from None


def build_agent(agent_name: str, env_id: str, cli: dict[str, Any]) -> ActorCritic:
    """The agent a command's settings (or a run folder's saved ones) describe; a dataset agent's `env_id`
    is its dataset file's path, read here."""
    from ajax.agents.registry import AGENTS

    agent_class = AGENTS[agent_name]
    kwargs = agent_arguments(
        agent_class, env_id, zoo=bool(cli.get("zoo")), n_envs=cli.get("n_envs"), params=cli.get("params", [])
    )
    if agent_name in DATASET_AGENTS:
        return agent_class(load_dataset(env_id), **kwargs)
    return agent_class(env_id, **kwargs)


# Training in chunks ---------------------------------------------------------------------------------------
def chunk_targets(total: int, quantum: int, n_chunks: int = N_CHUNKS) -> list[int]:
    """The timesteps each chunk trains up to: about `n_chunks` equal chunks, the last ending at `total`.

    Every chunk but the last is a whole number of `quantum` steps (an on-policy rollout, or an
    evaluation period): equal chunks make equal calls, which share one compiled program. Where the
    chunks fall does not change the run: a run split into calls anywhere is the run of one call.
    """
    size = max(quantum, round(total / n_chunks / quantum) * quantum)
    return [*range(size, total, size), total]


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
            warnings.filterwarnings("ignore", message="learning_starts=", category=UserWarning)
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


# Results --------------------------------------------------------------------------------------------------
def _number(value: Any) -> float | None:
    """A metric as JSON can hold it: NaN (a metric not yet defined, e.g. a loss before learning) is None."""
    # A float32's shortest repr (9.6, not 9.600000381469727) reads back to the same float32.
    number = float(str(value)) if isinstance(value, np.floating) else float(value)
    return None if math.isnan(number) else number


def evaluation_rows(chunks: Sequence[dict[str, np.ndarray]], seeds: Sequence[int]) -> list[Row]:
    """One row per seed per evaluation, by seed then timestep; unfilled slots (timestep -1) are dropped."""
    rows: list[Row] = []
    for index, seed in enumerate(seeds):
        for chunk in chunks:
            if "timestep" not in chunk:
                continue
            metrics = sorted(name for name in chunk if name != "timestep")
            timesteps = chunk["timestep"][index]
            for slot in np.flatnonzero(timesteps >= 0):
                row: Row = {"seed": int(seed), "timestep": int(timesteps[slot])}
                row.update({name: _number(chunk[name][index, slot]) for name in metrics})
                rows.append(row)
    return rows


def final_returns(
    rows: Sequence[Row], seeds: Sequence[int], metric: str = EVAL_RETURN
) -> dict[int, tuple[int, float] | None]:
    """Each seed's last filled evaluation return (or other `metric`) and its timestep; None for a seed never
    evaluated."""
    finals: dict[int, tuple[int, float] | None] = {int(seed): None for seed in seeds}
    for row in rows:
        if row.get(metric) is not None:
            finals[row["seed"]] = (row["timestep"], row[metric])
    return finals


def write_config(path: Path, agent_config: dict[str, Any], cli_arguments: dict[str, Any]) -> None:
    """The agent's settings and the command's, so a run can be told apart and repeated."""
    config = {**agent_config, "cli": cli_arguments}
    path.write_text(json.dumps(config, indent=2, default=str) + "\n")


def write_jsonl(path: Path, rows: Sequence[Row]) -> None:
    """Written beside and renamed over the old file: a run killed while writing keeps the previous rows."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text("".join(json.dumps(row) + "\n" for row in rows))
    os.replace(temporary, path)


def read_jsonl(path: Path) -> list[Row]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def write_csv(path: Path, rows: Sequence[Row]) -> None:
    """The same rows as the JSON lines, for spreadsheets and pandas; an undefined metric is an empty cell."""
    metrics = sorted({name for row in rows for name in row} - {"seed", "timestep"})
    with path.open("w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=["seed", "timestep", *metrics], restval="")
        writer.writeheader()
        for row in rows:
            writer.writerow({name: "" if value is None else value for name, value in row.items()})


def plot_learning_curve(path: Path, rows: Sequence[Row], title: str, report: Report = ENV_REPORT) -> bool:
    """The mean evaluation return (or `report`'s metric) over seeds with its min-max band; False when nothing
    was evaluated.

    Drawn on an Agg canvas without pyplot, so it needs no display and leaves no global figure behind.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    by_timestep: dict[int, list[float]] = {}
    for row in rows:
        if row.get(report.metric) is not None:
            by_timestep.setdefault(row["timestep"], []).append(row[report.metric])
    if not by_timestep:
        return False
    timesteps = np.array(sorted(by_timestep))
    values = [np.asarray(by_timestep[t]) for t in timesteps]
    mean = np.array([v.mean() for v in values])
    low = np.array([v.min() for v in values])
    high = np.array([v.max() for v in values])
    n_seeds = max(len(v) for v in values)

    figure = Figure(figsize=(7, 4.5), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.plot(timesteps, mean, marker="o", markersize=3, label=f"mean over {n_seeds} seed{'s' * (n_seeds > 1)}")
    if n_seeds > 1:
        axes.fill_between(timesteps, low, high, alpha=0.25, label="min-max over seeds")
    axes.set_xlabel(report.steps)
    axes.set_ylabel(report.axis)
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend(loc="best")
    figure.savefig(path, dpi=120)
    return True


def summary_table(
    finals: dict[int, tuple[int, float] | None],
    title: str,
    nonfinite: dict[int, str] | None = None,
    report: Report = ENV_REPORT,
) -> Table:
    """Each seed's final evaluation return (or `report`'s metric), then their mean ± std: the number a run
    is judged by.

    `nonfinite`, when a seed went NaN or infinite, adds a column saying from when and what.
    """
    table = Table(title=title)
    table.add_column("Seed", justify="right")
    table.add_column("Timestep", justify="right")
    table.add_column(f"Final eval {report.quantity}", justify="right")
    if nonfinite:
        table.add_column("Non-finite")
    for seed, final in finals.items():
        cells = [str(seed), "-", "not evaluated"] if final is None else [str(seed), str(final[0]), f"{final[1]:.2f}"]
        table.add_row(*cells, *([nonfinite.get(seed, "-")] if nonfinite else []))
    returns = np.array([final[1] for final in finals.values() if final is not None])
    if returns.size:
        table.add_section()
        table.add_row("mean ± std", "", f"{returns.mean():.2f} ± {returns.std():.2f}")
    return table


# The command ----------------------------------------------------------------------------------------------
def _target(agent: str, env_id: str) -> str:
    """What a run trains on, in its titles: the env id, or a dataset agent's dataset file by its name."""
    return Path(env_id).name if agent in DATASET_AGENTS else env_id


def _default_out(agent: str, env_id: str) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    target = Path(env_id).stem if agent in DATASET_AGENTS else env_id
    safe_env = "".join(c if c.isalnum() or c in "-_." else "_" for c in target)
    return Path("runs") / f"{agent}-{safe_env}-{stamp}"


def _resolve_agent(name: str, names: Sequence[str]) -> str | None:
    """The registered name for `name`, ignoring case since `ppo` can only mean PPO."""
    matches = [known for known in names if known.lower() == name.lower()]
    return matches[0] if matches else None


CHECKPOINT = "checkpoint.ckpt"


def _resumed_arguments(args: argparse.Namespace) -> str | None:
    """Fill `args` from the run folder's config.json for --resume; an error message if it cannot be resumed."""
    run_dir = Path(args.resume)
    cli, problem = saved_run(run_dir)
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


SAVED_SETTINGS = ("agent", "env_id", "seeds", "timesteps", "n_envs", "log_frequency", "num_episode_test")
"""What config.json must hold under "cli" for a run folder to be resumed or evaluated."""


def saved_run(run_dir: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The command's settings in `run_dir`'s config.json, or None and why the folder holds no usable run.

    The checkpoint is verified here too (a whole file, its checksum), so a damaged run folder
    is reported in one line before any agent is built.
    """
    from ajax.checkpoint import CheckpointError, read_checkpoint

    if not (run_dir / "config.json").exists() or not (run_dir / CHECKPOINT).exists():
        return None, f"{run_dir} holds no saved run: it needs the config.json and {CHECKPOINT} an `ajax train` writes."
    try:
        cli = json.loads((run_dir / "config.json").read_text())["cli"]
        missing = [key for key in SAVED_SETTINGS if key not in cli]
    except (ValueError, KeyError, TypeError) as error:
        return None, f"{run_dir / 'config.json'} is damaged: no run settings ({type(error).__name__}: {error})."
    if missing:
        return None, f"{run_dir / 'config.json'} is damaged: its run settings lack {', '.join(missing)}."
    try:
        read_checkpoint(run_dir / CHECKPOINT)
    except CheckpointError as error:
        return None, str(error)
    return cli, None


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


def eval_command(args: argparse.Namespace, console: Console) -> int:
    """`ajax eval RUN_DIR`: the checkpointed agent's greedy return, per seed."""
    from ajax.agents.registry import AGENTS
    from ajax.checkpoint import CheckpointError, restore_into

    cli, problem = saved_run(args.run_dir)
    if cli is None:
        print(problem, file=sys.stderr)
        return 2
    if cli["agent"] not in AGENTS:
        print(f"{args.run_dir / 'config.json'} names an unknown agent {cli['agent']!r}.", file=sys.stderr)
        return 2
    try:
        agent = build_agent(cli["agent"], cli["env_id"], cli)
    except (ValueError, TypeError) as error:
        print(f"{args.run_dir / 'config.json'} describes an agent that cannot be built: {error}", file=sys.stderr)
        return 2
    seeds = list(range(int(cli["seeds"])))
    skeleton, _ = agent.train(seed=seeds, n_timesteps=0, total_timesteps=cli["timesteps"])
    try:
        state = restore_into(skeleton, args.run_dir / CHECKPOINT, agent=agent)
    except CheckpointError as error:
        print(error, file=sys.stderr)
        return 2
    report = report_of(cli["agent"])
    returns = agent.evaluate(state, num_episode_test=args.episodes)[report.metric]
    timestep = int(state.collector_state.timestep[0])
    finals = {seed: (timestep, float(returns[index])) for index, seed in enumerate(seeds)}
    title = f"{cli['agent']} on {_target(cli['agent'], cli['env_id'])}: {report.quantity} over {args.episodes} episodes"
    console.print(summary_table(finals, title, report=report))
    return 0


def train_command(args: argparse.Namespace, console: Console) -> int:
    """`ajax train`: build the agent (refusing bad names cleanly), train in chunks, write and summarise."""
    from ajax.agents.registry import AGENTS
    from ajax.checkpoint import CheckpointError, restore_into, save_checkpoint
    from ajax.nonfinite import NonFiniteError

    if args.resume is not None:
        problem = _resumed_arguments(args)
        if problem is not None:
            print(problem, file=sys.stderr)
            return 2
    elif args.agent is None or args.env_id is None:
        print("ajax train needs AGENT and ENV_ID, or --resume RUN_DIR.", file=sys.stderr)
        return 2
    agent_name = _resolve_agent(args.agent, list(AGENTS))
    if agent_name is None:
        print(f"Unknown agent {args.agent!r}. Available agents: {', '.join(AGENTS)}.", file=sys.stderr)
        return 2
    if agent_name in DATASET_AGENTS:
        problem = _dataset_agent_refusal(agent_name, args)
        if problem is not None:
            print(problem, file=sys.stderr)
            return 2
    if args.timesteps is not None:
        total = int(args.timesteps)
    elif args.zoo:
        from ajax import zoo as presets

        try:
            total = presets.preset(agent_name, args.env_id).n_timesteps
        except ValueError as error:
            print(f"Cannot train {agent_name} on {args.env_id!r}: {error}", file=sys.stderr)
            return 2
    else:
        total = DEFAULT_TIMESTEPS
    log_frequency = int(args.log_frequency) if args.log_frequency is not None else max(1, total // N_CHUNKS)
    if log_frequency > total:
        print(
            f"--log-frequency ({log_frequency}) exceeds --timesteps ({total}): the run would never evaluate.",
            file=sys.stderr,
        )
        return 2
    settings = {"zoo": args.zoo, "n_envs": args.n_envs, "params": list(args.param)}
    try:
        agent = build_agent(agent_name, args.env_id, settings)
    except (ValueError, TypeError) as error:  # unknown env id or name, wrong action space, bad setting
        print(f"Cannot train {agent_name} on {args.env_id!r}: {error}", file=sys.stderr)
        return 2

    seeds = list(range(int(args.seeds)))
    report = report_of(agent_name)
    out = Path(args.out) if args.out is not None else _default_out(agent_name, args.env_id)
    out.mkdir(parents=True, exist_ok=True)
    state, previous_rows = None, []
    if args.resume is not None:
        skeleton, _ = agent.train(seed=seeds, n_timesteps=0, total_timesteps=total)
        try:
            state = restore_into(skeleton, out / CHECKPOINT, agent=agent)
        except CheckpointError as error:  # the settings match, the arrays do not: another agent's file
            print(error, file=sys.stderr)
            return 2
        reached = int(state.collector_state.timestep[0])
        # Rows are written before the checkpoint: any past it belong to the chunk that will run again.
        previous_rows = [row for row in read_jsonl(out / "evaluations.jsonl") if row["timestep"] <= reached]
        console.print(f"Resuming {out} at timestep {reached} of {total}.", highlight=False)
    else:
        cli_arguments = {
            "agent": agent_name,
            # A dataset file by its absolute path: --resume and `ajax eval` find it from any directory.
            "env_id": str(Path(args.env_id).resolve()) if agent_name in DATASET_AGENTS else args.env_id,
            "seeds": len(seeds),
            "timesteps": total,
            "n_envs": args.n_envs,
            "zoo": args.zoo,
            "params": list(args.param),
            "log_frequency": log_frequency,
            "num_episode_test": args.num_episode_test,
            "out": str(out),
            "tensorboard": args.tensorboard,
            "wandb": args.wandb,
            "wandb_mode": args.wandb_mode,
            "on_nonfinite": args.on_nonfinite,
        }
        write_config(out / "config.json", agent.config, cli_arguments)
        for message in budget_warnings(agent, total):
            console.print(f"[yellow]Warning:[/] {message}", markup=True, highlight=False)

    def all_rows(chunks: Sequence[dict[str, np.ndarray]]) -> list[Row]:
        return sorted(previous_rows + evaluation_rows(chunks, seeds), key=lambda row: (row["seed"], row["timestep"]))

    chunks: list[dict[str, np.ndarray]] = []
    interrupted, stopped = False, None
    started = time.perf_counter()
    progress = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(report.steps),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
    )
    with progress, logging_worker(args, out, seeds) as worker:
        task = progress.add_task(
            f"{agent_name} on {_target(agent_name, args.env_id)} ({len(seeds)} seeds)", total=total
        )
        if state is not None:
            progress.update(task, completed=int(state.collector_state.timestep[0]))
        try:
            chunks_run = train_in_chunks(
                agent, seeds, total, log_frequency, args.num_episode_test, state, args.on_nonfinite
            )
            for timestep, evaluations, state in chunks_run:
                chunks.append(evaluations)
                if worker is not None:
                    worker.send_rows(evaluations)
                write_jsonl(out / "evaluations.jsonl", all_rows(chunks))
                save_checkpoint(state, out / CHECKPOINT, agent=agent)
                progress.update(task, completed=min(timestep, total))
        except KeyboardInterrupt:  # keep what the finished chunks evaluated
            interrupted = True
        except NonFiniteError as error:  # --on-nonfinite raise: stop, keep the finished chunks' files
            stopped = str(error)
    wall_time = time.perf_counter() - started

    rows = all_rows(chunks)
    write_jsonl(out / "evaluations.jsonl", rows)
    write_csv(out / "evaluations.csv", rows)
    title = f"{agent_name} on {_target(agent_name, args.env_id)}"
    plotted = plot_learning_curve(out / "learning_curve.png", rows, title, report)

    finals = final_returns(rows, seeds, report.metric)
    console.print(summary_table(finals, f"{title}: final evaluation {report.quantity}", gone(state, seeds), report))
    console.print(f"Wall time: {wall_time:.1f} s (compilation included)", highlight=False)
    if not plotted:
        console.print("No evaluation finished: learning_curve.png was not written.", highlight=False)
    console.print(f"Run folder: {out}", highlight=False)
    if interrupted:
        console.print("[yellow]Interrupted:[/] the files hold the evaluations of the finished chunks.")
        return 130
    if stopped is not None:
        print(stopped, file=sys.stderr)
        return 1
    return 0


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


def gone(state: Any, seeds: Sequence[int]) -> dict[int, str]:
    """The seeds whose state went non-finite: from which timestep, and what did."""
    from ajax.nonfinite import describe

    record = getattr(state, "nonfinite", None)
    if record is None:
        return {}
    timesteps, kinds = np.asarray(record.timestep).tolist(), np.asarray(record.kinds).tolist()
    return {
        int(seed): f"from {timestep:,}: {describe(bits)}"
        for seed, timestep, bits in zip(seeds, timesteps, kinds, strict=True)
        if timestep >= 0
    }


def main(argv: Sequence[str] | None = None) -> int:
    """The `ajax` console script; returns the exit status instead of exiting, so it can be called in-process."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, or a usage error argparse has already printed
        return exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "eval":
        return eval_command(args, Console())
    if args.command == "sweep":
        from ajax.sweep_command import sweep_command

        return sweep_command(args, Console())
    return train_command(args, Console())


if __name__ == "__main__":
    sys.exit(main())
