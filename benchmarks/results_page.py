"""docs/results.md's learning rows and their curves, written from benchmarks/learning_checks.jsonl.

Each row is one (agent, task, settings) that `learning_checks.py` trained for its budget on
several seeds; a rerun of the same three replaces the earlier row. The page gives each agent a
section between the markers `<!-- learning rows ... -->` and `<!-- /learning rows -->`: its rows,
with the machine each ran on, and a figure of their curves (`docs/img/learning/<page>.png`:
each seed's evaluations and their mean). The text around the markers is written by hand. A row
names its machine in `machine`; a row without one ran on this project's machine kind, 2 CPU
cores. Nothing here imports JAX, so the page can be rebuilt on any machine in seconds.

    python benchmarks/results_page.py            # rewrite the page's rows and the figures
    python benchmarks/results_page.py --check    # exit 1 if either differs from what the rows give

tests/benchmarks/test_results_page.py fails when the committed page or a figure differs.
"""

from __future__ import annotations

import io
import json
import math
import re
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from intervals import final_means  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ROWS = ROOT / "benchmarks" / "learning_checks.jsonl"
PAGE = ROOT / "docs" / "results.md"
FIGURES = ROOT / "docs" / "img" / "learning"
# Every agent, in the agents index's order, with its page's name under docs/agents/.
PAGES = {
    "PPO": "ppo",
    "APO": "apo",
    "DQN": "dqn",
    "PQN": "pqn",
    "SAC": "sac",
    "TD3": "td3",
    "REDQ": "redq",
    "TQC": "tqc",
    "CrossQ": "crossq",
    "SimbaV2": "simbav2",
    "ASAC": "asac",
    "APG": "apg",
    "DreamerV3": "dreamerv3",
    "TDMPC2": "tdmpc2",
    "TDMPC2MultiTask": "tdmpc2_multitask",
    "AVG": "avg",
    "UDRL": "udrl",
    "DAgger": "dagger",
    "IQL": "iql",
}
CPU = "CPU, 2 cores"  # the machine of every row that names none: this project's machine kind
SECTION = re.compile(r"(<!-- learning rows[^\n]*-->\n).*?(<!-- /learning rows -->)", re.S)
MAX_FIGURE_BYTES = 60_000


def read_rows(path: Path = ROWS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def scores_of(row: dict[str, Any]) -> dict[str, Any]:
    """The fields every learning-table row carries, from a benchmark's full row: the seeds, their
    final returns and summary (`intervals.learning_summary`), the published return (no target),
    the wall time and, off the 2-core CPU, the machine."""
    return {
        "seeds": row["seeds"],
        "final_returns": row["final_returns"],
        "mean": row["mean"],
        "std": row["std"],
        "published": row["published"],
        "target": None,
        "seeds_at_target": None,
        **{key: row[key] for key in ("final3", "final3_mean", "iqm", "iqm_ci")},
        "wall_s": round(row["minutes"] * 60, 1),
        **({"machine": row["machine"]} if "machine" in row else {}),
    }


def latest(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last row of each (agent, env, settings): a rerun replaces the earlier result."""
    kept: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in rows:
        kept[(row["agent"], row["env_id"], row["settings"])] = row
    return list(kept.values())


def last_three_cells(row: dict[str, Any]) -> tuple[str, str, str]:
    """The mean of the last three evaluations, their IQM over seeds and its interval, as cells.

    A row written before the per-seed curve was kept still has the mean of its last three
    evaluations (the mean over seeds of each seed's mean is the mean of the mean curve), but
    its IQM and interval need each seed's evaluations: those cells say "not recorded".
    """
    if "iqm" not in row:
        return f"{final_means([row['curve']['mean']])[0]:.1f}", "not recorded", "not recorded"
    interval = row["iqm_ci"]
    if interval is None:
        seeds = len(row["seeds"])
        return f"{row['final3_mean']:.1f}", f"{row['iqm']:.1f}", f"none: {seeds} seed{'s' if seeds > 1 else ''}"
    return f"{row['final3_mean']:.1f}", f"{row['iqm']:.1f}", f"[{interval[0]:.1f}, {interval[1]:.1f}]"


def markdown_table(rows: Sequence[dict[str, Any]]) -> str:
    """The learning table of `rows` (the latest of each), one line a row, the machine last."""
    lines = [
        "| agent | task | settings | budget | seeds | final return, mean ± std | last 3, mean | last 3, IQM "
        "| IQM 95% CI | at target | published | machine |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in latest(rows):
        at_target = "" if row["target"] is None else f"{row['seeds_at_target']}/{len(row['seeds'])} ≥ {row['target']:g}"
        published = "" if row["published"] is None else f"{row['published']:g}"
        last_three, iqm, interval = last_three_cells(row)
        lines.append(
            f"| {row['agent']} | {row['env_id']} | {row['settings']} | {row['n_timesteps']:,} | {len(row['seeds'])} "
            f"| {row['mean']:.1f} ± {row['std']:.1f} | {last_three} | {iqm} | {interval} | {at_target} | {published} "
            f"| {row.get('machine', CPU)} |"
        )
    return "\n".join(lines)


def agent_rows(rows: Sequence[dict[str, Any]], agent: str) -> list[dict[str, Any]]:
    return [row for row in latest(rows) if row["agent"] == agent]


def figure_name(agent: str) -> str:
    return f"{PAGES[agent]}.png"


def section(rows: Sequence[dict[str, Any]], agent: str) -> str:
    """One agent's part of the page: its heading, a link to its page, its rows and its figure."""
    mine = agent_rows(rows, agent)
    page = f"[{agent}'s page](agents/{PAGES[agent]}.md)"
    if not mine:
        return f"### {agent}\n\nNo row yet ({page}).\n"
    count = f"{len(mine)} row{'s' if len(mine) > 1 else ''}"
    figure = f"![{agent}'s learning curves: each seed's evaluations and their mean](img/learning/{figure_name(agent)})"
    return f"### {agent}\n\n{count} ({page}).\n\n{markdown_table(mine)}\n\n{figure}\n"


def with_rows(page: str, rows: Sequence[dict[str, Any]]) -> str:
    """`page` with the part between its markers written from `rows`."""
    body = "\n".join(section(rows, agent) for agent in PAGES)
    written, count = SECTION.subn(lambda match: f"{match[1]}\n{body}\n{match[2]}", page)
    if count != 1:
        raise ValueError("the results page needs exactly one <!-- learning rows --> ... <!-- /learning rows --> pair")
    return written


def figure(rows: Sequence[dict[str, Any]]) -> bytes:
    """The curves of one agent's rows as a small PNG: a panel a row, each seed thin, their mean bold."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import EngFormatter, MaxNLocator
    from PIL import Image

    columns = min(len(rows), 4)
    lines = math.ceil(len(rows) / columns)
    fig, axes = plt.subplots(lines, columns, figsize=(2.9 * columns, 2.3 * lines), squeeze=False)
    for axis, row in zip(axes.ravel(), rows, strict=False):
        steps = row["curve"]["timestep"]
        for seed in row["curve"].get("per_seed", []):
            axis.plot(steps, seed, color="#9ab", linewidth=0.7)
        axis.plot(steps, row["curve"]["mean"], color="#1f4e8c", linewidth=1.6)
        if row["published"] is not None:
            axis.axhline(row["published"], color="#b33", linestyle="--", linewidth=0.9)
        axis.set_title("\n".join(textwrap.wrap(f"{row['env_id']}: {row['settings']}", 40)), fontsize=7)
        axis.tick_params(labelsize=6)
        axis.xaxis.set_major_formatter(EngFormatter(sep=""))  # 25k, 1M: steps that fit under a panel
        axis.xaxis.set_major_locator(MaxNLocator(5))
    for axis in axes.ravel()[len(rows) :]:
        axis.axis("off")
    fig.supxlabel("env steps (thin: each seed; bold: their mean; dashed: published)", fontsize=7)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    plt.close(fig)
    # A palette of 64 colours keeps a panel of lines far under the size limit, and the bytes fixed.
    image = Image.open(io.BytesIO(buffer.getvalue())).convert("RGB").quantize(colors=64, dither=Image.Dither.NONE)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def figures(rows: Sequence[dict[str, Any]]) -> dict[str, bytes]:
    """Each agent with rows: its figure's file name and bytes."""
    return {figure_name(agent): figure(mine) for agent in PAGES if (mine := agent_rows(rows, agent))}


def stale_figures(drawn: dict[str, bytes]) -> tuple[list[str], list[str]]:
    """The figures whose committed file differs from `drawn` or is missing, and the files of no agent."""

    def differs(name: str) -> bool:
        path = FIGURES / name
        return not path.is_file() or path.read_bytes() != drawn[name]

    extra = sorted(path.name for path in FIGURES.glob("*.png") if path.name not in drawn)
    return [name for name in drawn if differs(name)], extra


def main(argv: Sequence[str] | None = None) -> int:
    check = "--check" in (sys.argv[1:] if argv is None else argv)
    rows = read_rows()
    page = PAGE.read_text()
    fresh = with_rows(page, rows)
    drawn = figures(rows)
    stale, extra = stale_figures(drawn)
    if check:
        if fresh != page or stale or extra:
            print(f"docs/results.md differs: {fresh != page}; figures to redraw: {stale}; figures of no agent: {extra}")
            return 1
        return 0
    PAGE.write_text(fresh)
    FIGURES.mkdir(parents=True, exist_ok=True)
    for name in stale:
        (FIGURES / name).write_bytes(drawn[name])
    for name in extra:
        (FIGURES / name).unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
