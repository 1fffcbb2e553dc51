"""The logging worker: a separate process that writes evaluations to TensorBoard and W&B.

The compiled program hands each evaluation (every seed's metrics, with the timestep) to
`forward`, a host callback that only puts it on a queue and returns, so the program never
waits on a writer. A worker process, started with the `spawn` context (a fork would copy
JAX's threads and device state), reads the queue and writes (`ajax.logging.writers`):
TensorBoard event files through tensorboardX, W&B runs through `wandb`. Neither library is
imported by the training process, and the worker imports neither JAX nor the `ajax` package.

`recording` runs one worker for the length of one `train` call and stops it on the way
out, also when training raises: the worker writes what it received, closes its runs and
exits. A worker whose parent dies exits too. The compiled callback is `forward`, one
module-level function, so a program compiled once serves every later call; it reaches the
current call's worker through `_RELAY`, which holds one worker at a time (one logged
`train` at a time per process).
"""

from __future__ import annotations

import json
import multiprocessing
import sys
import types
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import jax
import numpy as np

from ajax.logging import writers
from ajax.logging.wandb_logging import LoggingConfig

CLOSE_TIMEOUT_S = 300.0
"""How long `close` waits for the worker to write what it holds (W&B online may upload)."""

_BOOTSTRAP = """
import importlib.util
spec = importlib.util.spec_from_file_location("ajax_logging_writers", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
module.serve(evaluations, plan)
"""
"""The worker's first code: load `ajax/logging/writers.py` by its path, not as part of `ajax`."""


def worker_plan(logging_config: LoggingConfig, seeds: Sequence[int]) -> writers.WorkerPlan:
    """One directory per seed under `logging_config.run_directory()`; the config as JSON values."""
    run_directory = logging_config.run_directory()
    return writers.WorkerPlan(
        run_name=run_directory.name,
        directories=[str(run_directory / f"seed_{seed}") for seed in seeds],
        seeds=[int(seed) for seed in seeds],
        config=json.loads(json.dumps(logging_config.config, default=str)),
        tensorboard=logging_config.use_tensorboard,
        wandb=logging_config.use_wandb,
        project=logging_config.project_name,
        mode=logging_config.mode,
    )


class LoggingWorker:
    """A running worker: `send` evaluations, then `close` (or use it as a context manager)."""

    def __init__(self, plan: writers.WorkerPlan) -> None:
        for directory in plan["directories"]:  # here, so that a folder that cannot be written fails before training
            Path(directory).mkdir(parents=True, exist_ok=True)
        context = multiprocessing.get_context("spawn")
        self._queue = context.Queue()
        scope = {"path": writers.__file__, "evaluations": self._queue, "plan": plan}
        self.process = context.Process(target=exec, args=(_BOOTSTRAP, scope), name="ajax-logging-worker", daemon=True)
        # A spawned child runs the parent's main script again before its target, and a script
        # without an `if __name__ == "__main__"` guard would train again in there. The worker
        # needs nothing from the script: it starts with a blank `__main__` instead.
        main = sys.modules["__main__"]
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            self.process.start()
        finally:
            sys.modules["__main__"] = main

    def send(self, timestep: int, metrics: Mapping[str, Sequence[float]]) -> None:
        """Queue one evaluation (each metric per seed) and return at once."""
        self._queue.put((int(timestep), {name: list(values) for name, values in metrics.items()}))

    def send_rows(self, rows: Mapping[str, np.ndarray]) -> None:
        """Queue the evaluations a `train` call returned (`(seeds, slots)` arrays; unfilled slots skipped).

        For a caller that trains without the callback: `ajax train` keeps its chunks' programs
        cacheable and feeds one worker from their rows.
        """
        timesteps = np.asarray(rows["timestep"])
        metrics = {name: np.asarray(values) for name, values in rows.items() if name != "timestep"}
        for slot in np.flatnonzero(timesteps[0] >= 0):  # every seed shares the timestep
            self.send(int(timesteps[0, slot]), {name: values[:, slot].tolist() for name, values in metrics.items()})

    def close(self, timeout: float = CLOSE_TIMEOUT_S) -> None:
        """Let the worker write what it holds and exit; a failed or stuck worker is reported, not raised.

        Training has finished by then and its results are complete: a writer's failure
        should not take them away.
        """
        self._queue.put(None)
        self.process.join(timeout)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join()
            warnings.warn(
                f"The logging worker was still writing after {timeout:.0f} s and was stopped: "
                "the last evaluations may be missing from TensorBoard or W&B.",
                stacklevel=2,
            )
        elif self.process.exitcode != 0:
            warnings.warn(
                f"The logging worker failed (exit status {self.process.exitcode}; its traceback is above): "
                "TensorBoard or W&B may miss evaluations. The evaluations train() returns are complete.",
                stacklevel=2,
            )
        # The worker has exited: nothing it could still read is waiting to be flushed.
        self._queue.cancel_join_thread()
        self._queue.close()

    def __enter__(self) -> LoggingWorker:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _Relay:
    """Where `forward`, compiled into the program, finds the current `train` call's worker."""

    worker: LoggingWorker | None = None


_RELAY = _Relay()


def forward(timestep: np.ndarray, metrics: dict[str, np.ndarray]) -> None:
    """The host callback: one evaluation of every seed (arrays with a leading seed axis) to the worker."""
    worker = _RELAY.worker
    if worker is None:
        raise RuntimeError("A logged program ran outside train(): no logging worker is there to receive it.")
    worker.send(int(timestep), {name: np.asarray(values).tolist() for name, values in metrics.items()})


@contextmanager
def recording(logging_config: LoggingConfig | None, seeds: Sequence[int]) -> Iterator[None]:
    """A worker for the length of one `train` call when a backend is on; nothing otherwise."""
    if logging_config is None or not logging_config.has_backend:
        yield
        return
    if _RELAY.worker is not None:
        raise RuntimeError("Another logged train() is running in this process: run logged trainings one at a time.")
    with LoggingWorker(worker_plan(logging_config, seeds)) as worker:
        _RELAY.worker = worker
        try:
            yield
        finally:
            _RELAY.worker = None


def write_rows(logging_config: LoggingConfig | None, seeds: Sequence[int], rows: dict[str, np.ndarray]) -> None:
    """Write a finished call's evaluations to the backends, when one is on.

    For a program that could not call back seed by seed as it ran (spread across devices, or
    a sweep's); in a run of several processes, process 0 writes.
    """
    if logging_config is None or not logging_config.has_backend or jax.process_index() != 0:
        return
    with LoggingWorker(worker_plan(logging_config, seeds)) as worker:
        worker.send_rows(rows)
