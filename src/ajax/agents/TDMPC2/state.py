"""TD-MPC2's state and static settings.

The shared state's `critic_state` trains the world model (encoder, dynamics, reward,
termination and Q-functions, with the target Q-functions as its `target_params`), the
`actor_state` the policy prior, as the reference's two optimisers do. The replay
(`buffers.sequence.SequenceReplay`) is the collector's `buffer_state`, the planner's carry
(`planner.PlanCarry`) its `memory`.
"""

from __future__ import annotations

from dataclasses import dataclass

from flax import struct

from ajax.agents.TDMPC2.networks import Architecture
from ajax.agents.TDMPC2.planner import PlannerConfig
from ajax.normalizers import RunningScale
from ajax.state import BaseAgentState


@struct.dataclass
class TDMPC2State(BaseAgentState):
    q_scale: RunningScale = None  # the running 5th-95th percentile range of Q in the policy loss


@dataclass(frozen=True)
class LossCoefficients:
    """The reference's weights of each loss in the world model's objective (its config.yaml)."""

    consistency: float = 20.0
    reward: float = 0.1
    value: float = 0.1
    termination: float = 1.0


@dataclass(frozen=True)
class TDMPC2Config:
    arch: Architecture
    planner: PlannerConfig
    batch_size: int
    capacity: int  # transitions over all env copies
    learning_rate: float
    enc_lr_scale: float
    grad_clip_norm: float
    tau: float
    rho: float
    entropy_coef: float
    discount: float
    seed_steps: int
    mpc: bool
    log_std_min: float = -10.0
    log_std_max: float = 2.0
    vmin: float = -10.0
    vmax: float = 10.0
    coefficients: LossCoefficients = LossCoefficients()
