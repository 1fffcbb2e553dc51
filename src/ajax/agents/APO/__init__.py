from ajax.agents.APO.APO import APO

__all__ = ["APO"]
