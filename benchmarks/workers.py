"""A measurement in a new interpreter: the benchmarks' worker processes.

A compile is timed only where nothing compiled carries over, so each measurement runs in a
process of its own with Ajax's compile cache off, and prints its result as JSON lines. Like
`provenance.py`, this module imports nothing of Ajax or JAX: a parent that only starts
workers never opens the device, which on a TPU the first process to open holds.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src"  # Ajax's source, first on a worker's path: the checkout measured, not an installed copy


def worker_env(paths: Sequence[Path] = (), **variables: str) -> dict[str, str]:
    """This process's environment for a worker: Ajax's compile cache off, `paths` first on its
    PYTHONPATH, and `variables` set (`JAX_PLATFORMS="cpu"`, a generator, or the cache back on)."""
    env = {**os.environ, "AJAX_NO_COMPILE_CACHE": "1", **variables}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [*map(str, paths), env.get("PYTHONPATH")]))
    return env


def json_rows(text: str) -> list[dict[str, Any]]:
    """The JSON rows a worker printed: its lines that open an object (JAX and the envs print others)."""
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def worker_rows(
    command: Sequence[str], env: dict[str, str], label: str, timeout: float | None = None
) -> list[dict[str, Any]]:
    """The rows of a worker that exits cleanly; a failure, or a worker that printed none, raises
    with the end of its error output, naming the measurement `label`; one still running after
    `timeout` seconds is stopped and raises `TimeoutError`."""
    try:
        done = subprocess.run(list(command), capture_output=True, text=True, env=env, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as expired:
        raise TimeoutError(f"{label} ran past {timeout:g} s") from expired
    rows = json_rows(done.stdout)
    if done.returncode != 0 or not rows:
        raise RuntimeError(f"{label} failed (exit code {done.returncode}):\n{done.stderr[-3000:]}")
    return rows
