"""APG's static settings. Its state is the shared `BaseAgentState`: an actor, no critic, no replay."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class APGConfig:
    horizon: int  # steps of every env copy each update back-propagates through
    lr_schedule: str | None  # None: a constant rate; "warmup_cosine": warm-up, then cosine to a tenth
    warmup_updates: int
