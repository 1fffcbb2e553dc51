from ajax.agents.TQC.TQC import TQC

__all__ = ["TQC"]
