"""PQN's static settings. Its state is the shared `BaseAgentState`, the Q-network as critic."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PQNConfig:
    n_steps: int
    n_epochs: int
    n_minibatches: int
    gamma: float
    q_lambda: float
    exploration_fraction: float
    exploration_initial_eps: float
    exploration_final_eps: float
