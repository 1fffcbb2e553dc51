"""`LoggingConfig`: how often a run evaluates, and which backend records it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ajax.checks import require_counts
from ajax.deprecation import warn_inert

WANDB_MODES = ("online", "offline", "disabled")

DEFAULT_FOLDER = "runs"


@dataclass(frozen=True)
class LoggingConfig:
    """With a LoggingConfig, `train` evaluates every `log_frequency` environment steps and
    returns the evaluations; `config` is what a backend records for the run (the agent's
    run config is merged into it).

    `use_tensorboard` and `use_wandb` also send every evaluation, as the compiled program
    makes it, to a worker process that writes it (`ajax.logging.worker`). Each seed is its
    own run, in `folder/run_name/seed_<s>` (`s` the seed `train` was given):

    - TensorBoard event files directly in it: `tensorboard --logdir folder/run_name` shows
      the seeds side by side. A tag is the metric's name with the characters TensorBoard
      refuses (spaces) as `_`; the config is a text summary.
    - The W&B run's files under its `wandb/`. The run is named `run_name/seed_<s>`, grouped
      by `run_name`, in `project_name`, stepped by the timestep, with the config as its
      config. `mode` is W&B's: `"offline"` needs no network, `wandb sync` uploads later.

    NaN values (a metric not defined yet, such as a loss before learning starts) are not
    written. `folder` defaults to `runs`, `run_name` to the agent's name and the time of
    the call, so every call gets new runs; calls given the same `run_name` (a run resumed
    in parts) continue the same TensorBoard directories and W&B runs.
    """

    config: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    log_frequency: int = 1000
    project_name: str = "ajax"
    run_name: str | None = None
    use_wandb: bool = False
    use_tensorboard: bool = False
    folder: str | os.PathLike | None = None
    mode: str = "online"
    horizon: int | None = field(default=None, hash=False, compare=False)

    def __post_init__(self) -> None:
        warn_inert(
            "LoggingConfig", "evaluations follow the run's horizon, train's total_timesteps.", 2, horizon=self.horizon
        )
        if not isinstance(self.config, Mapping):
            raise TypeError(f"config is the dict a backend records for the run, got {type(self.config).__name__}.")
        require_counts(log_frequency=self.log_frequency)
        for name in ("use_wandb", "use_tensorboard"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}.")
        if not isinstance(self.project_name, str) or not self.project_name:
            raise ValueError(f"project_name must be a non-empty string, got {self.project_name!r}.")
        if self.run_name is not None and (not isinstance(self.run_name, str) or not self.run_name):
            raise ValueError(f"run_name must be a non-empty string or None, got {self.run_name!r}.")
        if self.folder is not None and not isinstance(self.folder, str | os.PathLike):
            raise ValueError(f"folder must be a path (a string or a Path) or None, got {self.folder!r}.")
        if self.mode not in WANDB_MODES:
            raise ValueError(f"mode is W&B's mode, one of {', '.join(WANDB_MODES)}; got {self.mode!r}.")

    @property
    def has_backend(self) -> bool:
        """Whether a writer records the run: only then does the program call back to the host."""
        return self.use_wandb or self.use_tensorboard

    def run_directory(self) -> Path:
        """`folder/run_name`, the directory that holds one subdirectory per seed."""
        name = self.run_name
        if name is None:
            name = f"{self.config.get('algo_name', 'run')}-{datetime.now():%Y%m%d-%H%M%S-%f}"
        return Path(self.folder if self.folder is not None else DEFAULT_FOLDER) / name

    def with_config(self, config: dict[str, Any]) -> LoggingConfig:
        """A copy whose `config` also holds `config` (the agent's run config)."""
        merged = {**config, **self.config}
        return LoggingConfig(
            config=merged,
            log_frequency=self.log_frequency,
            project_name=self.project_name,
            run_name=self.run_name,
            use_wandb=self.use_wandb,
            use_tensorboard=self.use_tensorboard,
            folder=self.folder,
            mode=self.mode,
        )
