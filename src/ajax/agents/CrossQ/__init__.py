from ajax.agents.CrossQ.CrossQ import CrossQ

__all__ = ["CrossQ"]
