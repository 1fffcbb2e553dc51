"""SAC's state (shared by its descendants) and static settings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
from flax import struct

from ajax.agents.recurrent import SequenceTraining
from ajax.agents.SAC.action_pipeline import ActionPipelineConfig
from ajax.agents.updates_owed import UpdatesOwed
from ajax.environments.utils import ExpertInAgentUnits, StatefulExpert
from ajax.state import BaseAgentState, LoopTrainState


@struct.dataclass
class SoftACState(BaseAgentState):
    """The shared state plus the learned temperature: `alpha.params` holds log(alpha).

    `exploration_noise`: with gSDE, each env copy's standard normal draw of the exploration
    matrix (features x actions) for the current round; None otherwise.
    """

    alpha: LoopTrainState = None
    exploration_noise: jax.Array | None = None


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
    alpha_learning_rate: float | Callable[[jax.Array], jax.Array]  # a number or a schedule of its updates
    schedule: UpdatesOwed = field(kw_only=True)  # train_freq=, gradient_steps= (UpdatesOwed.replay)
    # expert_policy= read in agent units: evaluated beside the agent, acting in the warm-up, filling replay
    expert: ExpertInAgentUnits | None = field(default=None, kw_only=True)
    expert_buffer_n_steps: int = field(default=0, kw_only=True)
    use_sde: bool = field(default=False, kw_only=True)  # gSDE exploration, noise scales from log_std_init
    log_std_init: float = field(default=-3.0, kw_only=True)
    # with memory=: the sequence replay's sizes, and the reader the updates go through
    sequences: SequenceTraining | None = field(default=None, kw_only=True)
    # action_pipeline=, bound to the env and memory (the default without one; ASAC's and REDQ's always)
    action_pipeline: ActionPipelineConfig = field(kw_only=True)
    # Brax's reward_scaling: every replayed reward times this before any target reads it (1: as stored)
    reward_scaling: float = field(default=1.0, kw_only=True)


def checked_expert_buffer(expert_policy: Any, n_steps: int, buffer_size: int) -> int:
    """`expert_buffer_n_steps`, a count SAC has checked, refused where it cannot be honoured."""
    if n_steps and expert_policy is None:
        raise ValueError("expert_buffer_n_steps fills the replay with the expert's steps: it needs expert_policy=.")
    if n_steps and isinstance(expert_policy, StatefulExpert):
        raise TypeError(
            f"{type(expert_policy).__name__} is a stateful expert; the replay is filled by a stateless one only. "
            "Set expert_buffer_n_steps=0, or pass a function of the observation alone."
        )
    if n_steps > buffer_size:
        raise ValueError(f"expert_buffer_n_steps={n_steps} exceeds buffer_size={buffer_size}.")
    return int(n_steps)
