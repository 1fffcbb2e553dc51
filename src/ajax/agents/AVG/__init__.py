from ajax.agents.AVG.AVG import AVG

__all__ = ["AVG"]
