"""TQC's static settings: SAC's, plus the quantiles per critic and how many of each the target drops."""

from __future__ import annotations

from dataclasses import dataclass

from ajax.agents.SAC.state import SACConfig


@dataclass(frozen=True)
class TQCConfig(SACConfig):
    n_quantiles: int
    drop_per_critic: int
