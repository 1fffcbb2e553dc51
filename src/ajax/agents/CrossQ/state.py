"""CrossQ's static settings: SAC's, plus the actor's delay and the batch renormalisation's."""

from __future__ import annotations

from dataclasses import dataclass

from ajax.agents.SAC.state import SACConfig


@dataclass(frozen=True)
class CrossQConfig(SACConfig):
    policy_delay: int  # critic updates per actor and temperature update
    momentum: float  # the running statistics' decay per training pass
    renorm_warmup: int  # training passes of a network in plain batch normalisation before renormalising
