from ajax.agents.SimbaV2.SimbaV2 import SimbaV2

__all__ = ["SimbaV2"]
