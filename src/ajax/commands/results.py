"""What a run reports: the metric it is judged by, its evaluations as rows, the summary table, the curve.

`ajax train` and `ajax eval` print the same table, each seed's final evaluation and their mean ± std, so
a run and a later evaluation of its checkpoint read alike. An agent trained on an env reports its return;
a dataset agent (`DATASET_AGENTS`) its tasks' mean normalised score, since their returns lie on scales of
their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.table import Table

from ajax.commands.arguments import DATASET_AGENTS
from ajax.commands.run_folder import Row, json_number

EVAL_RETURN = "Eval/episodic mean reward"
"""The metric the summary table and the learning curve report for an agent trained on an env."""

EVAL_SCORE = "Eval/normalized score"
"""What they report for a multi-task agent: its tasks' returns lie on scales of their own, and their
normalised scores (0 at the task's low score, 100 at its high one), averaged, put them on one."""


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


def target_name(agent: str, env_id: str) -> str:
    """What a run trains on, in its titles: the env id, or a dataset agent's dataset file by its name."""
    return Path(env_id).name if agent in DATASET_AGENTS else env_id


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
                row.update({name: json_number(chunk[name][index, slot]) for name in metrics})
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


def summary_table(
    finals: dict[int, tuple[int, float] | None],
    title: str,
    nonfinite: dict[int, str] | None = None,
    report: Report = ENV_REPORT,
) -> Table:
    """Each seed's final evaluation return (or `report`'s metric), then their mean ± std: the number a run
    is judged by.

    `nonfinite`, when a seed went NaN or infinite (`gone`), adds a column saying from when and what.
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
