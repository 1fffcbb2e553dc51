"""Where a benchmark row was measured (the commit, read with git; the machine, as the learning
table names it) and where it goes (a JSON line appended to a file).

Its own module, importing nothing of Ajax or JAX, so that a parent process which only starts
workers (`perf_bench.py`, `accelerator.py`) never opens the device: on a TPU the first process
to start JAX holds the chip its workers need.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# JAX's device_kind, as the learning table names the machine (a row without one ran on 2 CPU cores).
MACHINES = {"TPU v5 lite": "TPU v5e"}


# `git archive` writes the archived commit here (export-subst in .gitattributes); a checkout reads
# the placeholder. A source tree carried to a machine as an archive (an accelerator's) is dated by
# it, never by whatever repository happens to enclose it there.
ARCHIVE_COMMIT = ROOT / "benchmarks" / "archive_commit"


def git_commit() -> str:
    """The checkout's short commit hash (an archive's own), or "unknown" where git cannot tell."""
    archived = ARCHIVE_COMMIT.read_text().strip() if ARCHIVE_COMMIT.is_file() else ""
    if archived and not archived.startswith("$Format"):
        return archived
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def machine_name(backend: str, device_kind: str) -> str | None:
    """The learning table's `machine` for a row: none on a CPU (its own machine kind), else the device's."""
    return None if backend == "cpu" else MACHINES.get(device_kind, device_kind)


def append_row(path: Path, row: dict[str, Any]) -> None:
    """`row` as one JSON line at the end of `path`, its folder made where missing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as file:
        file.write(json.dumps(row) + "\n")


def report_row(row: dict[str, Any], out: Path | None) -> None:
    """`row` printed as one JSON line, and appended to `out` where one is given."""
    print(json.dumps(row), flush=True)
    if out is not None:
        append_row(out, row)
