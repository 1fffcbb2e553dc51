"""Time per seed against the number of seeds, from the rows `perf_bench.py` appends.

Seeds are a `jax.vmap` over one program, so until the device is busy a seed more should add
little time: the table shows, per scenario and device, the whole first call and the
execution alone at each seed count, the time each seed costs, and the throughput against one
seed's (`n_seeds * time(1) / time(n)`: 28x at 32 seeds means 32 seeds ran in 1.14 times one
seed's time). Where a file holds several measurements of one count, the latest is read.

    python benchmarks/seed_scaling_report.py                 # benchmarks/seed_scaling.jsonl
    python benchmarks/seed_scaling_report.py runs/perf.jsonl --markdown
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DEFAULT = Path(__file__).resolve().parent / "seed_scaling.jsonl"


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def scaling_table(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One line per (scenario, device kind, seed count), with the throughput against one seed's."""
    latest: dict[tuple[str, str, int], dict[str, Any]] = {}
    for row in rows:
        latest[(row["scenario"], row.get("device_kind", "?"), row["n_seeds"])] = row
    table = []
    for (scenario, device, n_seeds), row in sorted(latest.items()):
        one = latest.get((scenario, device, 1))
        line = {
            "scenario": scenario,
            "device_kind": device,
            "n_seeds": n_seeds,
            "first_call_s": row["first_call_s"],
            "exec_s": row["exec_s"],
            "first_call_per_seed_s": row["first_call_s"] / n_seeds,
            "exec_per_seed_s": row["exec_s"] / n_seeds,
            "whole_call_gain": None if one is None else n_seeds * one["first_call_s"] / row["first_call_s"],
            "exec_gain": None if one is None else n_seeds * one["exec_s"] / row["exec_s"],
        }
        table.append(line)
    return table


def render(table: Sequence[dict[str, Any]], markdown: bool = False) -> str:
    header = ("scenario", "device", "seeds", "first call s", "exec s", "exec s/seed", "gain (call)", "gain (exec)")

    def gain(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}x"

    lines = [
        (
            line["scenario"],
            line["device_kind"],
            str(line["n_seeds"]),
            f"{line['first_call_s']:.2f}",
            f"{line['exec_s']:.2f}",
            f"{line['exec_per_seed_s']:.3f}",
            gain(line["whole_call_gain"]),
            gain(line["exec_gain"]),
        )
        for line in table
    ]
    if markdown:
        rule = tuple("---" for _ in header)
        return "\n".join("| " + " | ".join(cells) + " |" for cells in (header, rule, *lines))
    widths = [max(len(cells[i]) for cells in (header, *lines)) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.rjust(width) for cell, width in zip(cells, widths, strict=True)) for cells in (header, *lines)
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT, help="rows from perf_bench.py")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table, for the docs")
    args = parser.parse_args(argv)
    if not args.path.exists():
        parser.error(f"{args.path} does not exist: write it with benchmarks/perf_bench.py --out {args.path}.")
    print(render(scaling_table(read_rows(args.path)), args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
