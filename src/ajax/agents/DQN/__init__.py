from ajax.agents.DQN.DQN import DQN

__all__ = ["DQN"]
