from ajax.agents.APG.APG import APG
from ajax.agents.APG.curriculum import CurriculumResult, CurriculumStage, train_curriculum

__all__ = ["APG", "CurriculumResult", "CurriculumStage", "train_curriculum"]
