"""DQN's static settings. Its state is the shared `BaseAgentState`, the Q-network as critic."""

from __future__ import annotations

from dataclasses import dataclass


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
