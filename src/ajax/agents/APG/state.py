"""APG's static settings. Its state is the shared `BaseAgentState`: an actor, no critic, no replay."""

from __future__ import annotations

from dataclasses import dataclass

# Busetto et al. 2024 warm the rate up over 5,000 iterations of a long run.
PAPER_WARMUP_UPDATES = 5_000


@dataclass(frozen=True)
class APGConfig:
    horizon: int  # steps of every env copy each update back-propagates through
    lr_schedule: str | None  # None: a constant rate; "warmup_cosine": warm-up, then cosine to a tenth
    # Updates of warm-up; None: the paper's 5,000, or a tenth of the run's updates if that is fewer.
    warmup_updates: int | None
    weight_decay: float = 0.0  # AdamW's decoupled decay; 0 is Adam
    pid_head: bool = False  # the actor ends in a PID layer over its output (the contextual controller)

    def warmup(self, n_updates: int) -> int:
        """The warm-up's length in a run of `n_updates` updates."""
        if self.warmup_updates is None:
            return min(PAPER_WARMUP_UPDATES, n_updates // 10)
        return self.warmup_updates
