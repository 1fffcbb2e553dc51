from ajax.agents.REDQ.REDQ import REDQ

__all__ = ["REDQ"]
