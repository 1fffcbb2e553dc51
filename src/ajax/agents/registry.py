"""Every exported agent by name, for the command line and the benchmark."""

from __future__ import annotations

from ajax.agents.base import ActorCritic
from ajax.agents.DQN import DQN
from ajax.agents.PPO import PPO
from ajax.agents.PQN import PQN
from ajax.agents.SAC import SAC
from ajax.agents.TD3 import TD3

AGENTS: dict[str, type[ActorCritic]] = {"DQN": DQN, "PPO": PPO, "PQN": PQN, "SAC": SAC, "TD3": TD3}
