from ajax.agents.TDMPC2MultiTask.TDMPC2MultiTask import TDMPC2MultiTask

__all__ = ["TDMPC2MultiTask"]
