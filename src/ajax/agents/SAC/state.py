"""SAC's state (shared by its descendants) and static settings."""

from __future__ import annotations

from dataclasses import dataclass

from flax import struct

from ajax.state import BaseAgentState, LoopTrainState


@struct.dataclass
class SoftACState(BaseAgentState):
    """The shared state plus the learned temperature: `alpha.params` holds log(alpha)."""

    alpha: LoopTrainState = None


@dataclass(frozen=True)
class SACConfig:
    gamma: float
    tau: float
    batch_size: int
    buffer_size: int
    learning_starts: int
    target_entropy: float
    alpha_init: float
    learn_alpha: bool
    n_critics: int
    alpha_learning_rate: float
