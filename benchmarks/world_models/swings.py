"""Where a world-model check's evaluations swing, and what its logged losses did there.

DreamerV3's CartPole gate passes on average but each seed's evaluation return swings (seed 0
at the reference's settings: 478, 201, 82, 112, 420 over five evaluations). A row of
`learning_checks.py` keeps each seed's return curve and, since the per-seed diagnostics,
each seed's logged world-model and behaviour statistics at the same evaluations. This script
reads such a row and reports, per seed, every fall of the return by more than `--drop`
between two evaluations with what each statistic did across it, and, over all seeds'
evaluations once training has started, the rank correlation (Spearman) of the return with
each statistic and of the return's change with each statistic's change, and how often each
statistic fell across the falls, across the rises by more than `--drop`, and across every
interval between evaluations (a statistic that falls across most falls may only be one that
falls all run long). It suggests where to look; a few dozen evaluations are no proof.

    python benchmarks/world_models/swings.py                         # the last cartpole row
    python benchmarks/world_models/swings.py --check catch --drop 0.5 --file runs/wm_checks.jsonl  # another file
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROWS = Path(__file__).resolve().parent / "learning_checks.jsonl"


def last_row(path: Path, check: str) -> dict[str, Any]:
    """The file's last row of `check` that keeps per-seed diagnostics."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    kept = [row for row in rows if row.get("name") == check and row.get("diagnostics_per_seed")]
    if not kept:
        raise SystemExit(f"swings.py: {path} has no {check} row with per-seed diagnostics (rows since 2026-12-07).")
    return kept[-1]


def falls(row: dict[str, Any], drop: float) -> list[dict[str, Any]]:
    """Each fall of a seed's return by more than `drop` between consecutive evaluations, with every
    statistic's value before and after (NaN where it was not yet logged)."""
    timesteps = row["curve"]["timestep"]
    found = []
    for index, (seed, returns) in enumerate(zip(row["seeds"], row["curve"]["per_seed"], strict=True)):
        for i in range(1, len(returns)):
            if returns[i - 1] - returns[i] > drop:
                changes = {
                    name: (values[index][i - 1], values[index][i])
                    for name, values in row["diagnostics_per_seed"].items()
                }
                found.append(
                    {"seed": seed, "timestep": timesteps[i], "return": (returns[i - 1], returns[i]), "changes": changes}
                )
    return found


def correlations(row: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """For each statistic, Spearman's rank correlation over every seed's evaluations where it is
    finite: with the return, and of its change with the return's change."""
    from scipy.stats import spearmanr

    returns = np.asarray(row["curve"]["per_seed"], dtype=float)
    result = {}
    for name, values in row["diagnostics_per_seed"].items():
        stat = np.asarray(values, dtype=float)
        level = np.isfinite(stat)
        steps = level[:, 1:] & level[:, :-1]
        if level.sum() < 3 or steps.sum() < 3:
            continue
        with np.errstate(invalid="ignore"):
            same = spearmanr(stat[level], returns[level]).statistic
            moves = spearmanr(np.diff(stat, axis=1)[steps], np.diff(returns, axis=1)[steps]).statistic
        result[name] = (float(same), float(moves))
    return result


def fell_across(row: dict[str, Any], drop: float) -> dict[str, dict[str, tuple[int, int]]]:
    """For each statistic, (intervals it fell across, intervals where it is finite at both ends)
    among the return's falls by more than `drop`, its rises by more than `drop`, and all
    intervals between consecutive evaluations."""
    moves = np.diff(np.asarray(row["curve"]["per_seed"], dtype=float), axis=1)
    kinds = {"falls": moves < -drop, "rises": moves > drop, "all": np.ones_like(moves, dtype=bool)}
    result = {}
    for name, values in row["diagnostics_per_seed"].items():
        stat = np.diff(np.asarray(values, dtype=float), axis=1)
        logged = np.isfinite(stat)
        result[name] = {
            kind: (int((stat[chosen & logged] < 0).sum()), int((chosen & logged).sum()))
            for kind, chosen in kinds.items()
        }
    return result


def report(row: dict[str, Any], drop: float) -> str:
    lines = [
        f"{row['check']} seeds {row['seeds'][0]}-{row['seeds'][-1]} ({row['commit']}, {row['machine']['backend']}): "
        f"falls of the return by more than {drop:g} between evaluations"
    ]
    for fall in falls(row, drop):
        before, after = fall["return"]
        moved = ", ".join(
            f"{name.split('/')[-1]} {a:.3g}->{b:.3g}" for name, (a, b) in fall["changes"].items() if np.isfinite(a)
        )
        lines.append(f"- seed {fall['seed']} at row {fall['timestep']:,}: {before:.4g} -> {after:.4g}; {moved}")
    lines += ["", "| statistic | rank correlation with the return | of its change with the return's change |"]
    lines.append("| --- | --- | --- |")
    for name, (same, moves) in sorted(correlations(row).items(), key=lambda item: -abs(item[1][1])):
        lines.append(f"| {name} | {same:+.2f} | {moves:+.2f} |")
    lines += ["", f"| statistic | fell across the falls | across the rises (by more than {drop:g}) | across all |"]
    lines.append("| --- | --- | --- | --- |")
    for name, counts in fell_across(row, drop).items():
        lines.append("| " + " | ".join([name, *(f"{fell} of {n}" for fell, n in counts.values())]) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, default=ROWS, help="rows of learning_checks.py (default: %(default)s)")
    parser.add_argument("--check", default="cartpole", help="the check's name (default: cartpole)")
    parser.add_argument("--drop", type=float, default=150.0, help="a fall larger than this is reported (default: 150)")
    args = parser.parse_args(argv)
    print(report(last_row(args.file, args.check), args.drop))
    return 0


if __name__ == "__main__":
    sys.exit(main())
