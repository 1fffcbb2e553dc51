"""A world model's run trained in chunks: one `train` call an evaluation period, resumable.

A world model's run at its paper's settings outlasts an accelerator's ten-minute call, so
`dmc_rows.py` and `learning_checks.py` train it as several calls with the whole run as every
call's horizon (every schedule, and the replay's size, are the one call's), each call asked
to reach the next evaluation period's end from where the state stands. A call runs whole env
steps, so the state may stop short of its target; the calls together still step exactly as
the one call would, which the resume contract makes the same run. After each call the state
is checkpointed atomically and a progress file (JSON) keeps the target, the state's timestep,
the calls made and whatever the script records (evaluations, timings), so that a later
command resumes where one stopped, and refuses a checkpoint made with other settings.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class CheckpointMismatchError(ValueError):
    """A checkpoint made with other settings, seeds or budget than this command's."""


@dataclass(frozen=True)
class Chunk:
    """One `train` call's outcome: its state and evaluations, and the seconds it took."""

    state: Any
    evaluations: Mapping[str, Any]
    exec_s: float
    compile_s: float = 0.0


def timed_chunk(train: Callable[[], tuple[Any, Mapping[str, Any]]]) -> tuple[Chunk, dict[str, Any]]:
    """`train()` (one `train` call, returning its state and evaluations) as a chunk, its compile
    apart from its execution, and the call's timing by compile stage (`perf_bench.timed`)."""
    from perf_bench import timed

    outputs: dict[str, Any] = {}

    def run() -> Any:
        outputs["state"], outputs["evaluations"] = train()
        return outputs["state"]

    timing = timed(run, repeats=0)
    timing.pop("out")
    chunk = Chunk(outputs["state"], outputs["evaluations"], timing["exec_s"], timing["compile_spans_s"])
    return chunk, timing


def filled_per_seed(evaluations: Mapping[str, Any]) -> dict[str, list[list[Any]]]:
    """A call's evaluations as lists of each seed's values, its unfilled slots (timestep -1, the
    evaluations a call's window had no room to reach) left out."""
    import numpy as np

    filled = np.asarray(evaluations["timestep"])[0] >= 0
    return {name: np.asarray(values)[:, filled].tolist() for name, values in evaluations.items()}


def add_evaluations(progress: dict[str, Any], evaluations: Mapping[str, Any], n_seeds: int) -> None:
    """A call's filled evaluations (`filled_per_seed`) appended to each seed's in `progress`."""
    for name, per_seed in filled_per_seed(evaluations).items():
        kept = progress["evaluations"].setdefault(name, [[] for _ in range(n_seeds)])
        for seed, row in zip(kept, per_seed, strict=True):
            seed += row


def fresh_progress(identity: dict[str, Any], **records: Any) -> dict[str, Any]:
    """The progress of a run not yet started, with the script's own `records` beside it."""
    return {
        "identity": identity,
        "target": 0,  # the timestep the last call was asked to reach (the horizon: done training)
        "timestep": 0,  # the timestep the state has reached
        "chunks": 0,
        **records,
    }


def read_progress(path: Path, identity: dict[str, Any], flags: Mapping[str, str]) -> dict[str, Any] | None:
    """The progress file at `path` (None where there is none); one made with another identity is
    refused, naming the flag (`flags`: identity key to flag) that differs."""
    if not path.is_file():
        return None
    progress = json.loads(path.read_text())
    saved = progress.get("identity", {})
    differ = [
        f"{flags[key]} ({key}: {json.dumps(saved.get(key))} there, {json.dumps(value)} here)"
        for key, value in identity.items()
        if saved.get(key) != value
    ]
    if differ:
        raise CheckpointMismatchError(
            f"The checkpoint {path} was made with other settings than this command's: {'; '.join(differ)}. "
            "Run with the settings it was made with to resume it, or give another --checkpoint-dir "
            "(or delete its .ckpt and .json) to start over."
        )
    return progress


def write_json(path: Path, value: Any) -> None:
    """`value` as JSON at `path`, atomically (`ajax.checkpoint.write_atomically`)."""
    from ajax.checkpoint import write_atomically

    write_atomically(path, json.dumps(value, indent=1).encode())


class Clock:
    """When a command stops between chunks: never before its first; after it, not once `minutes`
    have passed since the start, nor when the next chunk would carry it past them, reckoned as
    long as the last chunk's execution and checkpoint, and before another program its
    compilation too.

    And when a chunk's state is checkpointed: after every chunk by default, or, with
    `save_minutes`, once that long has passed since the last checkpoint (a world model's state
    with its replay is hundreds of MB, seconds to write, against a chunk's 15 s on a TPU);
    the run also checkpoints where it stops and where it ends, so a long cadence only risks
    the chunks since the last checkpoint if the command is killed."""

    def __init__(self, minutes: float | None, save_minutes: float = 0.0) -> None:
        self.started = time.perf_counter()
        self.minutes = minutes
        self.save_minutes = save_minutes
        self.last_save = self.started
        self.save_s = 0.0  # the last checkpoint's writing
        self.chunks = 0
        self.last_exec_s = 0.0
        self.compile_s = 0.0  # the longest compilation a chunk (or a resumed run's skeleton) took

    def elapsed_s(self) -> float:
        return time.perf_counter() - self.started

    def may_start_chunk(self, new_program: bool = False) -> bool:
        if self.minutes is None or self.chunks == 0:
            return True
        ahead = self.last_exec_s + self.save_s + (self.compile_s if new_program else 0.0)
        return self.elapsed_s() + ahead <= 60 * self.minutes

    def save_due(self) -> bool:
        return time.perf_counter() - self.last_save >= 60 * self.save_minutes

    def saved(self, seconds: float) -> None:
        self.last_save = time.perf_counter()
        self.save_s = seconds

    def chunk_done(self, exec_s: float, compile_s: float = 0.0) -> None:
        self.chunks += 1
        self.last_exec_s = exec_s
        self.compile_s = max(self.compile_s, compile_s)


def add_save_minutes(parser: argparse.ArgumentParser) -> None:
    """The flag that spaces a chunked run's checkpoints (`Clock`'s `save_minutes`), the same in every script."""
    parser.add_argument(
        "--save-minutes",
        type=float,
        default=0.0,
        help="with --checkpoint-dir: checkpoint once this long has passed since the last (default: every chunk)",
    )


@dataclass(frozen=True)
class Checkpoint:
    """Where a chunked run keeps its state (`state`, written atomically) and its progress."""

    state: Path
    progress: Path


def open_checkpoint(
    checkpoint_dir: Path | None, name: str, identity: dict[str, Any], flags: Mapping[str, str], script: str
) -> tuple[Checkpoint | None, dict[str, Any] | None]:
    """The run `name`'s checkpoint in `checkpoint_dir` (`name.ckpt`, `name.json`) and the progress
    it holds (`read_progress`); (None, None) without a directory. One made with another
    identity stops `script` with the mismatch's message."""
    if checkpoint_dir is None:
        return None, None
    checkpoint = Checkpoint(checkpoint_dir / f"{name}.ckpt", checkpoint_dir / f"{name}.json")
    try:
        return checkpoint, read_progress(checkpoint.progress, identity, flags)
    except CheckpointMismatchError as error:
        raise SystemExit(f"{script}: {error}") from error


def train_in_chunks(
    call: Callable[..., Chunk],
    progress: dict[str, Any],
    horizon: int,
    every: int,
    clock: Clock,
    checkpoint: Checkpoint | None,
    agent: Any,
    record: Callable[[dict[str, Any], Chunk], None],
    name: str,
    scale: int = 1,
    unit: str = "rows",
) -> Any | None:
    """The run to `horizon` from where `progress` stands: its final state, or None when `clock`
    stopped it between chunks. `call(n_timesteps=..., initial_state=...)` is one `train` call
    with the run's horizon; `record` adds a chunk's evaluations and timings to `progress`.
    Without `checkpoint` the run is one call; with it, calls of `every` timesteps, the state's
    checkpoint and the progress file written together when `clock` says one is due, where the
    command stops, and where the run ends. The messages name the run `name` and
    count a timestep as `scale` `unit` (env steps where an action repeats)."""
    from ajax.checkpoint import restore_into, save_checkpoint

    state, compiled, unsaved = None, 0.0, False

    def save() -> float:
        """Write the state and the progress that describes it; the seconds it took."""
        saving = time.perf_counter()
        save_checkpoint(state, checkpoint.state, agent=agent)
        write_json(checkpoint.progress, progress)
        seconds = time.perf_counter() - saving
        clock.saved(seconds)
        return seconds

    if progress["timestep"] and progress["target"] < horizon:
        if not checkpoint.state.is_file():
            raise CheckpointMismatchError(
                f"{checkpoint.progress} records a run at a state, but its checkpoint {checkpoint.state} is gone."
            )
        # The skeleton: the untrained state of a call to the run's horizon, whose program is the
        # chunks' own (compiled once here, reused by every chunk of this command).
        skeleton = call(n_timesteps=0)
        compiled += skeleton.compile_s
        state = restore_into(skeleton.state, checkpoint.state, agent=agent)
        at = _timestep(state)
        if at != progress["timestep"]:
            raise CheckpointMismatchError(
                f"{checkpoint.state} holds a state at timestep {at}, its progress file {checkpoint.progress} one at "
                f"{progress['timestep']}: the command stopped between writing them. Delete both to start over."
            )
        print(f"{name}: resumed at {at * scale:,} {unit} from {checkpoint.state}", flush=True)

    while progress["target"] < horizon:
        if checkpoint is not None and not clock.may_start_chunk():
            if unsaved:
                print(f"{name}: checkpointed {progress['timestep'] * scale:,} {unit} in {save():.1f} s", flush=True)
            print(
                f"{name}: stopped at {progress['timestep'] * scale:,} of {horizon * scale:,} {unit}, as --minutes "
                f"{clock.minutes:g} ask; rerun the command to resume from {checkpoint.state}",
                flush=True,
            )
            return None
        target = horizon if checkpoint is None else min(progress["target"] + every, horizon)
        chunk = call(n_timesteps=target - progress["timestep"], initial_state=state)
        state = chunk.state
        record(progress, chunk)
        progress["target"] = target
        progress["timestep"] = _timestep(state)
        progress["chunks"] += 1
        compiled += chunk.compile_s
        clock.chunk_done(chunk.exec_s, compiled)
        if checkpoint is not None:
            unsaved = not (target >= horizon or clock.save_due())
            saved = "checkpoint deferred" if unsaved else f"saved {save():.1f} s"
            print(
                f"{name}: chunk {progress['chunks']} to {progress['timestep'] * scale:,} {unit}: compiled "
                f"{chunk.compile_s:.1f} s, ran {chunk.exec_s:.1f} s, {saved}",
                flush=True,
            )
    return state


def _timestep(state: Any) -> int:
    """The timestep a (seed-batched) state stands at: every seed's is the same."""
    import numpy as np

    return int(np.asarray(state.collector_state.timestep).reshape(-1)[0])
