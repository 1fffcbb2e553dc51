from ajax.agents.PQN.PQN import PQN

__all__ = ["PQN"]
