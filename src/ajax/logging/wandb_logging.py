"""`LoggingConfig`: how often a run evaluates, and which backend records it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class LoggingConfig:
    """With a LoggingConfig, `train` evaluates every `log_frequency` environment steps and
    returns the evaluations; `config` is what a backend records for the run (the agent's
    run config is merged into it).

    The TensorBoard and W&B writers are not in this release: asking for one raises rather
    than silently recording nothing.
    """

    config: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    log_frequency: int = 1000
    project_name: str = "ajax"
    run_name: str | None = None
    use_wandb: bool = False
    use_tensorboard: bool = False
    folder: str | None = None
    mode: str = "online"

    def __post_init__(self) -> None:
        if int(self.log_frequency) < 1:
            raise ValueError(f"log_frequency must be a positive number of env steps, got {self.log_frequency}.")
        if self.use_wandb or self.use_tensorboard:
            raise NotImplementedError(
                "The W&B and TensorBoard writers are not available yet; use LoggingConfig(use_wandb=False, "
                "use_tensorboard=False) and read the evaluations train() returns."
            )

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
