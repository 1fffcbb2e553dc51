"""DreamerV3's state and static settings.

The shared state's `actor_state` trains every network at once, as the reference's single
optimiser does: its params are {"model", "actor", "critic"}, and its `target_params` the
slow critic. The replay (`environments.row_collector.Rows`) is the collector's
`buffer_state`, the row collector's carry its `memory`.
"""

from __future__ import annotations

from dataclasses import dataclass

from flax import struct

from ajax.agents.DreamerV3.networks import ModelSize
from ajax.normalizers import PercentileScale
from ajax.state import BaseAgentState


@struct.dataclass
class DreamerV3State(BaseAgentState):
    return_scale: PercentileScale = None  # the 5th-95th percentile range of imagined returns, as EMAs


@dataclass(frozen=True)
class LossScales:
    """The reference's `loss_scales`: each loss's weight in the one objective."""

    reconstruction: float = 1.0
    reward: float = 1.0
    continuation: float = 1.0
    action_mask: float = 1.0  # Ajax's: the head that predicts the allowed actions, on masked envs only
    dynamics: float = 1.0
    representation: float = 0.1
    policy: float = 1.0
    value: float = 1.0
    replay_value: float = 0.3


@dataclass(frozen=True)
class DreamerV3Config:
    size: ModelSize
    batch_size: int
    batch_length: int  # trained rows per sequence; each sampled sequence holds one more, its context
    train_ratio: float  # replayed rows per collected row
    capacity: int  # rows per env copy's ring
    learning_rate: float
    imag_horizon: int
    horizon: int  # the continue target's discount 1 - 1 / horizon
    lam: float
    actor_entropy: float
    free_nats: float = 1.0
    unimix: float = 0.01
    slow_critic_rate: float = 0.02
    slow_critic_regularizer: float = 1.0
    agc: float = 0.3
    warmup: int = 1000
    scales: LossScales = LossScales()
    sampled_evaluation: bool = False  # evaluate on samples of the posterior and the action, as the reference
