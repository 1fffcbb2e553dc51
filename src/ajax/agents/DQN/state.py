"""DQN's static settings. Its state is the shared `BaseAgentState`, the Q-network as critic."""

from __future__ import annotations

from dataclasses import dataclass, field

from ajax.agents.updates_owed import UpdatesOwed


@dataclass(frozen=True)
class DQNConfig:
    gamma: float
    batch_size: int
    buffer_size: int
    learning_starts: int
    target_update_interval: int
    exploration_fraction: float
    exploration_initial_eps: float
    exploration_final_eps: float
    tau: float = field(default=1.0, kw_only=True)  # 1: the target is copied; below 1: Polyak averaging
    double_q: bool = field(default=False, kw_only=True)
    dueling: bool = field(default=False, kw_only=True)
    schedule: UpdatesOwed = field(kw_only=True)  # train_freq=, gradient_steps= (UpdatesOwed.replay)
