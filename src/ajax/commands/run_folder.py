"""The run folder `ajax train` and `ajax sweep` write, chunk by chunk, and `--resume` and `ajax eval` read.

A run is cut into equal chunks so that a progress bar can move between them from Python, and after every
chunk the folder holds the evaluations so far and `checkpoint.ckpt`: a run stopped at any moment resumes
from its last chunk. The evaluation files are replaced whole, never appended to, so a run killed while
writing keeps the previous rows; `config.json` holds the agent's settings and the command's.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ajax.checks import is_count

Row = dict[str, Any]

CHECKPOINT = "checkpoint.ckpt"

N_CHUNKS = 20
"""How many times the progress bar moves: each chunk costs a trip out of the compiled program."""

SAVED_SETTINGS = ("agent", "env_id", "seeds", "timesteps", "n_envs", "log_frequency", "num_episode_test")
"""What config.json must hold under "cli" for a run folder to be resumed or evaluated."""


def _count(value: Any) -> bool:
    return is_count(value) and value >= 1


# What each saved run setting must be for `--resume` and `ajax eval` to read it.
SETTING_KINDS: tuple[tuple[str, str, Any], ...] = (
    ("agent", "an agent's name", lambda v: isinstance(v, str)),
    ("env_id", "an env id", lambda v: isinstance(v, str)),
    ("seeds", "a count of seeds", _count),
    ("timesteps", "a count of steps", _count),
    ("n_envs", "a count of envs, or null", lambda v: v is None or _count(v)),
    ("log_frequency", "a count of steps, or null", lambda v: v is None or _count(v)),
    ("num_episode_test", "a count of episodes, or null", lambda v: v is None or _count(v)),
    ("params", "a list of NAME=VALUE strings", lambda v: isinstance(v, list) and all(isinstance(p, str) for p in v)),
    ("zoo", "true or false", lambda v: isinstance(v, bool)),
    ("tensorboard", "true or false", lambda v: isinstance(v, bool)),
    ("wandb", "true or false", lambda v: isinstance(v, bool)),
)


def chunk_targets(total: int, quantum: int, n_chunks: int = N_CHUNKS) -> list[int]:
    """The timesteps each chunk trains up to: about `n_chunks` equal chunks, the last ending at `total`.

    Every chunk but the last is a whole number of `quantum` steps (an on-policy rollout, or an
    evaluation period): equal chunks make equal calls, which share one compiled program. Where the
    chunks fall does not change the run: a run split into calls anywhere is the run of one call.
    """
    size = max(quantum, round(total / n_chunks / quantum) * quantum)
    return [*range(size, total, size), total]


def json_number(value: Any) -> float | None:
    """A metric as JSON can hold it: NaN (a metric not yet defined, e.g. a loss before learning) is None."""
    # A float32's shortest repr (9.6, not 9.600000381469727) reads back to the same float32.
    number = float(str(value)) if isinstance(value, np.floating) else float(value)
    return None if math.isnan(number) else number


def make_run_folder(out: Path) -> str | None:
    """Make the run folder `out` and any folder above it; None, or why it cannot be made, naming --out.

    `--out` naming a file, or a path under one, is the user's to fix: said in one line, where
    `Path.mkdir` would end the command in a traceback after the agent was built.
    """
    try:
        out.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        file = next((path for path in (out, *out.parents) if path.is_file()), out)
        return f"--out {out}: {file} is a file, not a folder. --out names the run folder (made if missing)."
    except OSError as error:
        return f"--out {out}: the run folder cannot be made ({error.strerror}). Give --out a folder you can write to."
    return None


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
    """The rows `write_jsonl` wrote; none when the run has not finished a chunk yet.

    A file that is not such rows raises a ValueError that names it and what to do, in one line.
    """
    if not path.exists():
        return []
    try:
        rows = [json.loads(line) for line in path.read_text().splitlines()]
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        rows, problem = [], f"{type(error).__name__}: {error}"
    else:
        problem = None if all(isinstance(row, dict) and "timestep" in row for row in rows) else "not rows"
    if problem is not None:
        raise ValueError(
            f"{path} is damaged ({problem}): the evaluations so far cannot be read. Restore it, or delete it to "
            "resume without the earlier evaluations."
        )
    return rows


def write_csv(path: Path, rows: Sequence[Row]) -> None:
    """The same rows as the JSON lines, for spreadsheets and pandas; an undefined metric is an empty cell."""
    metrics = sorted({name for row in rows for name in row} - {"seed", "timestep"})
    with path.open("w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=["seed", "timestep", *metrics], restval="")
        writer.writeheader()
        for row in rows:
            writer.writerow({name: "" if value is None else value for name, value in row.items()})


def saved_run(run_dir: Path, started: bool = True) -> tuple[dict[str, Any] | None, str | None]:
    """The command's settings in `run_dir`'s config.json, or None and why the folder holds no usable run.

    The checkpoint is verified here too (a whole file, its checksum), so a damaged run folder
    is reported in one line before any agent is built. `started=False` accepts a folder whose
    run was stopped before its first checkpoint (config.json alone): `--resume` starts it over.
    """
    from ajax.checkpoint import CheckpointError, read_checkpoint

    has_checkpoint = (run_dir / CHECKPOINT).exists()
    if not (run_dir / "config.json").exists() or (started and not has_checkpoint):
        return None, f"{run_dir} holds no saved run: it needs the config.json and {CHECKPOINT} an `ajax train` writes."
    try:
        cli = json.loads((run_dir / "config.json").read_text())["cli"]
        missing = [key for key in SAVED_SETTINGS if key not in cli]
    except (ValueError, KeyError, TypeError) as error:
        return None, f"{run_dir / 'config.json'} is damaged: no run settings ({type(error).__name__}: {error})."
    if missing:
        return None, f"{run_dir / 'config.json'} is damaged: its run settings lack {', '.join(missing)}."
    wrong = [f"{key}={cli[key]!r} ({kind})" for key, kind, fits in SETTING_KINDS if key in cli and not fits(cli[key])]
    if wrong:
        return None, (
            f"{run_dir / 'config.json'} was edited or damaged: its run settings hold {'; '.join(wrong)}. Restore "
            "the values the run was started with, or start a new run with the settings you want."
        )
    if not has_checkpoint:
        return cli, None
    try:
        read_checkpoint(run_dir / CHECKPOINT)
    except CheckpointError as error:
        return None, str(error)
    return cli, None
