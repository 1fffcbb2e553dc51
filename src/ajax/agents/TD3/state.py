"""TD3's static settings. Its state is the shared `BaseAgentState`, both networks with targets."""

from __future__ import annotations

from dataclasses import dataclass, field

from ajax.agents.recurrent import SequenceTraining
from ajax.agents.SAC.action_pipeline import ActionPipelineConfig
from ajax.agents.updates_owed import UpdatesOwed
from ajax.environments.utils import ExpertInAgentUnits
from ajax.schedule import Schedule


@dataclass(frozen=True)
class TD3Config:
    gamma: float
    tau: float
    batch_size: int
    buffer_size: int
    learning_starts: int
    policy_delay: int
    target_policy_noise: float
    target_noise_clip: float
    exploration_noise: Schedule
    schedule: UpdatesOwed = field(kw_only=True)  # train_freq=, gradient_steps= (UpdatesOwed.replay)
    expert: ExpertInAgentUnits | None = field(default=None, kw_only=True)  # expert_policy=, evaluated beside
    # with memory=: the sequence replay's sizes, and the reader the update goes through
    sequences: SequenceTraining | None = field(default=None, kw_only=True)
    # action_pipeline=, bound to the env and memory (the default without one)
    action_pipeline: ActionPipelineConfig = field(kw_only=True)
