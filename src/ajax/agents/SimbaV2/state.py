"""SimbaV2's static settings: SAC's, plus the critic's atoms and the bound of their support."""

from __future__ import annotations

from dataclasses import dataclass

from ajax.agents.SAC.state import SACConfig


@dataclass(frozen=True)
class SimbaV2Config(SACConfig):
    n_atoms: int
    return_bound: float
