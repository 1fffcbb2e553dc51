from ajax.agents.UDRL.UDRL import UDRL

__all__ = ["UDRL"]
