from ajax.agents.TDMPC2.TDMPC2 import TDMPC2

__all__ = ["TDMPC2"]
