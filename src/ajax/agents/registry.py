"""Every exported agent by name, for the command line and the benchmark.

TDMPC2MultiTask is built on a `MultiTaskDataset`, not an env id: the command line reads its second
positional as a dataset file (`ajax.commands.arguments.DATASET_AGENTS`) and the benchmark, which times
env steps, leaves it out (`NOT_BENCHMARKED`).
"""

from __future__ import annotations

from ajax.agents.APG import APG
from ajax.agents.APO import APO
from ajax.agents.ASAC import ASAC
from ajax.agents.AVG import AVG
from ajax.agents.base import ActorCritic
from ajax.agents.CrossQ import CrossQ
from ajax.agents.DAgger import DAgger
from ajax.agents.DQN import DQN
from ajax.agents.DreamerV3 import DreamerV3
from ajax.agents.IQL import IQL
from ajax.agents.PPO import PPO
from ajax.agents.PQN import PQN
from ajax.agents.REDQ import REDQ
from ajax.agents.SAC import SAC
from ajax.agents.SimbaV2 import SimbaV2
from ajax.agents.TD3 import TD3
from ajax.agents.TDMPC2 import TDMPC2
from ajax.agents.TDMPC2MultiTask import TDMPC2MultiTask
from ajax.agents.TQC import TQC
from ajax.agents.UDRL import UDRL

AGENTS: dict[str, type[ActorCritic]] = {
    "APG": APG,
    "APO": APO,
    "ASAC": ASAC,
    "AVG": AVG,
    "CrossQ": CrossQ,
    "DAgger": DAgger,
    "DQN": DQN,
    "DreamerV3": DreamerV3,
    "IQL": IQL,
    "PPO": PPO,
    "PQN": PQN,
    "REDQ": REDQ,
    "SAC": SAC,
    "SimbaV2": SimbaV2,
    "TD3": TD3,
    "TDMPC2": TDMPC2,
    "TDMPC2MultiTask": TDMPC2MultiTask,
    "TQC": TQC,
    "UDRL": UDRL,
}
