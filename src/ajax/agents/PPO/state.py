"""PPO's static settings. Its state is the shared `BaseAgentState`."""

from __future__ import annotations

from dataclasses import dataclass, field

from ajax.environments.utils import ExpertInAgentUnits
from ajax.schedule import Schedule


@dataclass(frozen=True)
class PPOConfig:
    n_steps: int
    batch_size: int
    n_epochs: int
    clip_range: Schedule
    gamma: float
    gae_lambda: float
    ent_coef: float
    vf_coef: float
    normalize_advantage: bool
    expert: ExpertInAgentUnits | None = field(default=None, kw_only=True)  # APO's expert_policy=, evaluated beside
