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
    # With memory: each env's rollout trains as sequences of bptt_length steps (None: the whole
    # rollout), the sequences split into n_minibatches per epoch.
    bptt_length: int | None = field(default=None, kw_only=True)
    n_minibatches: int = field(default=1, kw_only=True)
