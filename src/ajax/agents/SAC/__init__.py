from ajax.agents.SAC.SAC import SAC

__all__ = ["SAC"]
