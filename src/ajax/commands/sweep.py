"""`ajax sweep`: a grid of an agent's hyperparameters on every seed, trained as one program, in a run folder.

`ajax sweep PPO CartPole-v1 --grid actor_learning_rate=1e-4,3e-4 --grid gamma=0.98,0.99 --seeds 4`
trains every combination on seeds 0..N-1 with `ajax.sweep`, in equal chunks as `ajax train` does, so a
progress bar moves between them and a checkpoint follows each: `--resume RUN_DIR` continues a stopped
sweep from its last chunk and ends where the uninterrupted one would have. The folder gets `config.json`,
`evaluations.jsonl` and `evaluations.csv` (a row per configuration, seed and evaluation),
`learning_curves.png` (one curve per configuration: the mean over seeds, with its min-max band) and
`checkpoint.ckpt`; the table ranks the configurations by their final return's mean over seeds.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from ajax._compile_cache import CompileTally
from ajax.commands.arguments import (
    DATASET_AGENTS,
    DEFAULT_TIMESTEPS,
    agent_arguments,
    parse_value,
    positive_int,
    resolve_agent,
)
from ajax.commands.results import EVAL_RETURN
from ajax.commands.run_folder import (
    CHECKPOINT,
    N_CHUNKS,
    Row,
    chunk_targets,
    json_number,
    make_run_folder,
    read_jsonl,
    write_csv,
    write_jsonl,
)


def add_parser(commands: argparse._SubParsersAction) -> None:
    """The `sweep` subcommand's parser, under the `ajax` parser's `commands`."""
    sweep = commands.add_parser(
        "sweep",
        allow_abbrev=False,
        help="train every configuration of a hyperparameter grid on every seed as one compiled program",
        description="Train AGENT on ENV_ID for every combination of the --grid values and every seed 0..N-1 as "
        "one compiled program; write config.json, evaluations.jsonl, evaluations.csv, learning_curves.png and a "
        "checkpoint to the run folder, and rank the configurations by their final return.",
    )
    sweep.add_argument("agent", metavar="AGENT", nargs="?", help="agent name, e.g. PPO or SAC")
    sweep.add_argument("env_id", metavar="ENV_ID", nargs="?", help="environment id, e.g. CartPole-v1")
    sweep.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="NAME=V1,V2,...",
        help="an argument to sweep and its values (repeatable; every combination is trained). Only the "
        "agent's sweepable arguments: numbers inside the program (docs/sweeps.md)",
    )
    sweep.add_argument("--seeds", type=positive_int, default=1, help="train seeds 0..N-1 (default: 1)")
    sweep.add_argument(
        "--timesteps", type=positive_int, default=None, help=f"steps per run (default: {DEFAULT_TIMESTEPS})"
    )
    sweep.add_argument("--n-envs", type=positive_int, default=None, help="parallel envs (default: the agent's)")
    sweep.add_argument(
        "--param", action="append", default=[], metavar="NAME=VALUE", help="a fixed argument, as for ajax train"
    )
    sweep.add_argument("--out", type=Path, default=None, help="run folder (default: runs/sweep-<AGENT>-<ENV_ID>-…)")
    sweep.add_argument(
        "--log-frequency", type=positive_int, default=None, help="evaluate every F steps (default: timesteps // 20)"
    )
    sweep.add_argument("--resume", type=Path, default=None, metavar="RUN_DIR", help="continue the sweep in RUN_DIR")


def parse_grid(texts: Sequence[str]) -> dict[str, list[Any]]:
    """`--grid NAME=V1,V2` options as a grid; a ValueError naming a malformed or repeated one."""
    grid: dict[str, list[Any]] = {}
    for text in texts:
        name, equals, values = text.partition("=")
        name = name.strip().replace("-", "_")
        if not equals or not name or not values.strip():
            raise ValueError(f"--grid takes NAME=V1,V2,..., got {text!r}.")
        if name in grid:
            raise ValueError(f"--grid names {name!r} twice: give all its values in one option.")
        parsed = parse_value(values.strip())
        grid[name] = list(parsed) if isinstance(parsed, tuple) else [parsed]
    return grid


def describe(config: dict[str, Any]) -> str:
    """A configuration as its table row and its curve's legend name it: `name=value, ...`."""
    return ", ".join(f"{name}={value}" for name, value in config.items())


def sweep_rows(
    evaluations: dict[str, np.ndarray], configurations: Sequence[dict[str, Any]], seeds: Sequence[int]
) -> list[Row]:
    """One row per configuration, seed and filled evaluation slot, with the configuration's values."""
    rows: list[Row] = []
    metrics = sorted(name for name in evaluations if name != "timestep")
    for k, config in enumerate(configurations):
        for index, seed in enumerate(seeds):
            timesteps = evaluations["timestep"][k, index]
            for slot in np.flatnonzero(timesteps >= 0):
                row: Row = {"configuration": k, **config, "seed": int(seed), "timestep": int(timesteps[slot])}
                row.update({name: json_number(evaluations[name][k, index, slot]) for name in metrics})
                rows.append(row)
    return rows


def final_returns(rows: Sequence[Row], n_configurations: int) -> dict[int, dict[int, float]]:
    """Each configuration's last evaluation return per seed."""
    finals: dict[int, dict[int, float]] = {k: {} for k in range(n_configurations)}
    for row in sorted(rows, key=lambda row: row["timestep"]):
        if row.get(EVAL_RETURN) is not None:
            finals[row["configuration"]][row["seed"]] = row[EVAL_RETURN]
    return finals


def ranking_table(finals: dict[int, dict[int, float]], configurations: Sequence[dict[str, Any]], title: str) -> Table:
    """Every configuration's final return, mean ± std and min-max over seeds, the best first."""
    table = Table(title=title)
    for column in ("Rank", "Configuration", "Final eval return", "min .. max", "Seeds"):
        table.add_column(column, justify="left" if column == "Configuration" else "right")

    def mean(k: int) -> float:
        return float(np.mean(list(finals[k].values()))) if finals[k] else -np.inf

    for rank, k in enumerate(sorted(finals, key=mean, reverse=True), start=1):
        values = np.array(list(finals[k].values()))
        if values.size:
            cells = [f"{values.mean():.2f} ± {values.std():.2f}", f"{values.min():.2f} .. {values.max():.2f}"]
        else:
            cells = ["not evaluated", "-"]
        table.add_row(str(rank), f"{k}: {describe(configurations[k])}", *cells, str(values.size))
    return table


def plot_curves(path: Path, rows: Sequence[Row], configurations: Sequence[dict[str, Any]], title: str) -> bool:
    """One curve per configuration (the mean over seeds) with its min-max band; False when nothing was evaluated."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 5), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    drawn = False
    for k, config in enumerate(configurations):
        by_timestep: dict[int, list[float]] = {}
        for row in rows:
            if row["configuration"] == k and row.get(EVAL_RETURN) is not None:
                by_timestep.setdefault(row["timestep"], []).append(row[EVAL_RETURN])
        if not by_timestep:
            continue
        timesteps = np.array(sorted(by_timestep))
        values = [np.asarray(by_timestep[t]) for t in timesteps]
        (line,) = axes.plot(timesteps, [v.mean() for v in values], label=describe(config))
        axes.fill_between(
            timesteps, [v.min() for v in values], [v.max() for v in values], alpha=0.15, color=line.get_color()
        )
        drawn = True
    if not drawn:
        return False
    axes.set_xlabel("environment steps")
    axes.set_ylabel("evaluation return (mean over seeds, min-max band)")
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend(loc="best", fontsize="small")
    figure.savefig(path, dpi=120)
    return True


def _settings(args: argparse.Namespace) -> tuple[dict[str, Any] | None, str | None]:
    """The sweep's settings: from the command line, or from a run folder for --resume; or why not."""
    if args.resume is None:
        if args.agent is None or args.env_id is None or not args.grid:
            return None, "ajax sweep needs AGENT, ENV_ID and at least one --grid NAME=V1,V2, or --resume RUN_DIR."
        total = int(args.timesteps) if args.timesteps is not None else DEFAULT_TIMESTEPS
        settings = {
            "agent": args.agent,
            "env_id": args.env_id,
            "grid": list(args.grid),
            "seeds": int(args.seeds),
            "timesteps": total,
            "n_envs": args.n_envs,
            "params": list(args.param),
            "log_frequency": int(args.log_frequency) if args.log_frequency is not None else max(1, total // N_CHUNKS),
        }
        return settings, None
    config = Path(args.resume) / "config.json"
    if not config.exists():  # a config.json without a checkpoint is a sweep stopped before its first: started over
        return (
            None,
            f"{args.resume} holds no saved sweep: it needs the config.json and {CHECKPOINT} `ajax sweep` writes.",
        )
    try:
        return json.loads(config.read_text())["sweep"], None
    except (ValueError, KeyError) as error:
        return None, f"{config} is damaged: no sweep settings ({type(error).__name__}: {error})."


def sweep_command(args: argparse.Namespace, console: Console) -> int:
    """`ajax sweep`: check the grid before anything compiles, train in chunks, write, rank."""
    from ajax.agents.base import BudgetWarning
    from ajax.agents.registry import AGENTS
    from ajax.checkpoint import CheckpointError, restore_into, save_checkpoint
    from ajax.logging.wandb_logging import LoggingConfig
    from ajax.sweep import sweep

    settings, problem = _settings(args)
    if settings is None:
        print(problem, file=sys.stderr)
        return 2
    agent_name = resolve_agent(settings["agent"], list(AGENTS))
    if agent_name is None or agent_name in DATASET_AGENTS:
        names = ", ".join(name for name in AGENTS if name not in DATASET_AGENTS)
        print(f"ajax sweep cannot sweep {settings['agent']!r}. Agents it sweeps: {names}.", file=sys.stderr)
        return 2
    agent_class, env_id, total = AGENTS[agent_name], settings["env_id"], settings["timesteps"]
    seeds, log_frequency = list(range(settings["seeds"])), settings["log_frequency"]
    try:
        grid = parse_grid(settings["grid"])
        fixed = agent_arguments(agent_class, env_id, zoo=False, n_envs=settings["n_envs"], params=settings["params"])
        arguments = {"grid": grid, "seed": seeds, "total_timesteps": total, **fixed}
        # The zero-step call builds every configuration's agent, refusing a bad grid before anything trains.
        state, _, configurations = sweep(agent_class, env_id, n_timesteps=0, **arguments)
    except (ValueError, TypeError) as error:
        print(f"Cannot sweep {agent_name} on {env_id!r}: {error}", file=sys.stderr)
        return 2
    template = agent_class(env_id, **fixed)  # the fixed settings' agent: its config and rollout length
    out = Path(args.resume) if args.resume is not None else _default_out(agent_name, env_id, args.out)
    problem = make_run_folder(out)
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    previous: list[Row] = []
    if args.resume is not None and not (out / CHECKPOINT).exists():
        console.print(
            f"{out} has no checkpoint yet: starting its sweep over, with its saved settings.", highlight=False
        )
    elif args.resume is not None:
        try:
            state = restore_into(state, out / CHECKPOINT)
        except CheckpointError as error:
            print(error, file=sys.stderr)
            return 2
        reached = int(np.asarray(state.collector_state.timestep).flat[0])
        try:
            previous = [row for row in read_jsonl(out / "evaluations.jsonl") if row["timestep"] <= reached]
        except ValueError as error:
            print(error, file=sys.stderr)
            return 2
        console.print(f"Resuming {out} at timestep {reached} of {total}.", highlight=False)
    else:
        config = {**template.config, "configurations": configurations, "sweep": settings}
        (out / "config.json").write_text(json.dumps(config, indent=2, default=str) + "\n")
    title = f"{agent_name} on {env_id}: {len(configurations)} configurations x {len(seeds)} seeds"
    rows = list(previous)
    quantum = template.rollout_steps() or min(log_frequency, total)
    progress = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("steps"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
    )
    with progress, CompileTally() as compiled:
        task = progress.add_task(title, total=total)
        progress.update(task, completed=int(np.asarray(state.collector_state.timestep).flat[0]))
        for target in chunk_targets(total, quantum):
            current = int(np.asarray(state.collector_state.timestep).flat[0])
            if current >= target:
                continue
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="log_frequency=", category=UserWarning)
                warnings.filterwarnings("ignore", category=BudgetWarning)  # a chunk's budget is not the run's
                state, evaluations, _ = sweep(
                    agent_class,
                    env_id,
                    n_timesteps=target - current,
                    initial_state=state,
                    logging_config=LoggingConfig(log_frequency=log_frequency),
                    **arguments,
                )
            rows += sweep_rows({k: np.asarray(v) for k, v in evaluations.items()}, configurations, seeds)
            write_jsonl(out / "evaluations.jsonl", rows)
            save_checkpoint(state, out / CHECKPOINT)
            progress.update(task, completed=min(total, int(np.asarray(state.collector_state.timestep).flat[0])))
    ordered = sorted(rows, key=lambda row: (row["configuration"], row["seed"], row["timestep"]))
    write_jsonl(out / "evaluations.jsonl", ordered)
    write_csv(out / "evaluations.csv", ordered)
    plot_curves(out / "learning_curves.png", ordered, configurations, title)
    console.print(ranking_table(final_returns(ordered, len(configurations)), configurations, title))
    console.print(compiled.summary(), highlight=False)
    console.print(f"Run folder: {out}", highlight=False)
    return 0


def _default_out(agent: str, env_id: str, out: Path | None) -> Path:
    """`out`, or `runs/sweep-<AGENT>-<ENV_ID>-<timestamp>` with the env id made safe for a folder's name."""
    from datetime import datetime

    if out is not None:
        return Path(out)
    safe_env = "".join(c if c.isalnum() or c in "-_." else "_" for c in env_id)
    return Path("runs") / f"sweep-{agent}-{safe_env}-{datetime.now():%Y%m%d-%H%M%S}"
