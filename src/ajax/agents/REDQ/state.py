"""REDQ's static settings: SAC's, plus the ensemble, its target subset and the update ratio."""

from __future__ import annotations

from dataclasses import dataclass

from ajax.agents.SAC.state import SACConfig


@dataclass(frozen=True)
class REDQConfig(SACConfig):
    subset_size: int
    utd_ratio: int
