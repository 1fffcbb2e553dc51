from ajax.agents.IQL.IQL import IQL

__all__ = ["IQL"]
