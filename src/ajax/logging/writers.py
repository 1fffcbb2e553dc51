"""What runs in the logging worker process: the TensorBoard and W&B writers and the loop feeding them.

The worker loads this file on its own, by path (`ajax.logging.worker` starts it so), without
importing the `ajax` package, whose import brings JAX and every agent and would cost the
worker seconds of start-up on the training machine's cores. So this module imports nothing
from `ajax`, and what it receives (the plan, the evaluations) is plain Python values.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import queue
import re
import secrets
from pathlib import Path
from typing import Any, Protocol, TypedDict

PARENT_POLL_S = 1.0
"""How often an idle worker checks that the training process is still alive."""

TENSORBOARD_FLUSH_S = 10
"""How often TensorBoard's event files reach the disk while a run trains."""

WANDB_ID_FILE = "wandb-run-id"
"""Kept in a seed's directory, so that a later call continuing the run continues its W&B run."""

UNSAFE_TAG_CHARACTERS = re.compile(r"[^-/\w.]")
"""What a TensorBoard tag may not hold (anything but letters, digits and `_-/.`)."""

Evaluation = tuple[int, dict[str, list[float]]]
"""What the queue carries: the timestep and each metric's value per seed, in the seed axis's order."""


class WorkerPlan(TypedDict):
    """Everything the worker needs; a plain dict, which unpickles without importing `ajax`."""

    run_name: str
    directories: list[str]  # one per seed, in the seed axis's order
    seeds: list[int]
    config: dict[str, Any]  # JSON values only
    tensorboard: bool
    wandb: bool
    project: str
    mode: str


class Writer(Protocol):
    """One seed's backend: `write` each evaluation, `close` at the end."""

    def write(self, timestep: int, metrics: dict[str, float]) -> None: ...

    def close(self) -> None: ...


class TensorBoardWriter:
    """One seed's event files; the run config as a text summary (TensorBoard's Text tab).

    A metric's characters that a tag may not hold become `_` (`Eval/episodic mean reward` is
    the tag `Eval/episodic_mean_reward`): tensorboardX would rewrite them the same way, with
    a warning for each.
    """

    def __init__(self, directory: Path, config: dict[str, Any]) -> None:
        from tensorboardX import SummaryWriter

        self.writer = SummaryWriter(str(directory), flush_secs=TENSORBOARD_FLUSH_S)
        # Indented: Markdown shows it as a code block, verbatim.
        text = json.dumps(config, indent=2, sort_keys=True)
        self.writer.add_text("config", "\n".join("    " + line for line in text.splitlines()))

    def write(self, timestep: int, metrics: dict[str, float]) -> None:
        for name, value in metrics.items():
            self.writer.add_scalar(UNSAFE_TAG_CHARACTERS.sub("_", name), value, global_step=timestep)

    def close(self) -> None:
        self.writer.close()


class WandbWriter:
    """One seed's W&B run, stepped by the timestep; its files under `directory/wandb`."""

    def __init__(self, directory: Path, config: dict[str, Any], plan: WorkerPlan, seed: int) -> None:
        import wandb

        id_file = directory / WANDB_ID_FILE
        if not id_file.exists():
            id_file.write_text(secrets.token_hex(8))
        self.run = wandb.init(
            project=plan["project"],
            name=f"{plan['run_name']}/seed_{seed}",
            group=plan["run_name"],
            dir=str(directory),
            mode=plan["mode"],
            id=id_file.read_text().strip(),
            resume="allow",
            config=config,
            reinit="create_new",  # one run per seed in this one process
            settings=wandb.Settings(console="off"),
        )

    def write(self, timestep: int, metrics: dict[str, float]) -> None:
        self.run.log(metrics, step=timestep)

    def close(self) -> None:
        self.run.finish()


def open_writers(plan: WorkerPlan) -> list[list[Writer]]:
    """Each seed's writers, in the seed axis's order."""
    writers: list[list[Writer]] = []
    for directory, seed in zip(plan["directories"], plan["seeds"], strict=True):
        config = {**plan["config"], "seed": seed}
        seed_writers: list[Writer] = []
        if plan["tensorboard"]:
            seed_writers.append(TensorBoardWriter(Path(directory), config))
        if plan["wandb"]:
            seed_writers.append(WandbWriter(Path(directory), config, plan, seed))
        writers.append(seed_writers)
    return writers


def serve(evaluations: multiprocessing.Queue, plan: WorkerPlan) -> None:
    """The worker's main: write every evaluation until the sentinel None (or the parent's death)."""
    parent = multiprocessing.parent_process()
    writers = open_writers(plan)
    try:
        while True:
            try:
                message: Evaluation | None = evaluations.get(timeout=PARENT_POLL_S)
            except queue.Empty:
                if parent is not None and not parent.is_alive():
                    return
                continue
            if message is None:
                return
            timestep, metrics = message
            for index, seed_writers in enumerate(writers):
                # NaN marks a metric not yet defined (a loss before learning starts): no point is drawn.
                values = {name: values[index] for name, values in metrics.items() if not math.isnan(values[index])}
                for writer in seed_writers:
                    writer.write(timestep, values)
    finally:
        for seed_writers in writers:
            for writer in seed_writers:
                writer.close()
