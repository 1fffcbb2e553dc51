"""IQL's state and static settings."""

from __future__ import annotations

from dataclasses import dataclass

from flax import struct

from ajax.state import BaseAgentState, LoopTrainState


@struct.dataclass
class IQLState(BaseAgentState):
    """The shared state plus the state-value network V(s).

    `actor_state` is the policy, `critic_state` the two Q networks with their Polyak
    targets, and `collector_state.buffer_state` the offline `Dataset` (each seed holds a
    copy, so a checkpoint is self-contained). `collector_state.timestep` counts gradient
    steps: IQL steps no environment while it trains.
    """

    value_state: LoopTrainState = None


@dataclass(frozen=True)
class IQLConfig:
    gamma: float
    tau: float  # Polyak rate of the target critics
    expectile: float  # the tau of the paper's expectile loss L_2^tau
    beta: float  # inverse temperature of the advantage weights
    max_weight: float  # exp(beta (Q - V)) is clipped here
    batch_size: int
