"""ASAC's state (SAC's plus the reward rate) and static settings."""

from __future__ import annotations

from dataclasses import dataclass

import jax
from flax import struct

from ajax.agents.SAC.state import SACConfig, SoftACState


@struct.dataclass
class ASACState(SoftACState):
    """SAC's state plus `theta`, the estimate of the entropy-regularised reward per step."""

    theta: jax.Array = None


@dataclass(frozen=True)
class ASACConfig(SACConfig):
    theta_learning_rate: float
