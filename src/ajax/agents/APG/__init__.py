from ajax.agents.APG.APG import APG

__all__ = ["APG"]
