from ajax.agents.DreamerV3.DreamerV3 import DreamerV3

__all__ = ["DreamerV3"]
