from ajax.agents.ASAC.ASAC import ASAC

__all__ = ["ASAC"]
