"""Where a benchmark row was measured: the commit, read with git.

Its own module, importing nothing of Ajax or JAX, so that a parent process which only starts
workers (`perf_bench.py`, `accelerator.py`) never opens the device: on a TPU the first process
to start JAX holds the chip its workers need.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def git_commit() -> str:
    """The checkout's short commit hash, or "unknown" where git cannot tell."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"
