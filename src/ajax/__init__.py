"""Ajax: reinforcement-learning agents whose whole training run is one compiled JAX program."""

from ajax import _compile_cache

_compile_cache.configure()

from ajax.agents.APG import APG  # noqa: E402
from ajax.agents.APO import APO  # noqa: E402
from ajax.agents.ASAC import ASAC  # noqa: E402
from ajax.agents.AVG import AVG  # noqa: E402
from ajax.agents.CrossQ import CrossQ  # noqa: E402
from ajax.agents.DAgger import DAgger  # noqa: E402
from ajax.agents.DQN import DQN  # noqa: E402
from ajax.agents.DreamerV3 import DreamerV3  # noqa: E402
from ajax.agents.IQL import IQL  # noqa: E402
from ajax.agents.PPO import PPO  # noqa: E402
from ajax.agents.PQN import PQN  # noqa: E402
from ajax.agents.REDQ import REDQ  # noqa: E402
from ajax.agents.SAC import SAC  # noqa: E402
from ajax.agents.SimbaV2 import SimbaV2  # noqa: E402
from ajax.agents.TD3 import TD3  # noqa: E402
from ajax.agents.TDMPC2 import TDMPC2  # noqa: E402
from ajax.agents.TDMPC2MultiTask import TDMPC2MultiTask  # noqa: E402
from ajax.agents.TQC import TQC  # noqa: E402
from ajax.agents.UDRL import UDRL  # noqa: E402
from ajax.hardware import device_report  # noqa: E402

__all__ = [
    "APG",
    "APO",
    "ASAC",
    "AVG",
    "CrossQ",
    "DAgger",
    "DQN",
    "DreamerV3",
    "IQL",
    "PPO",
    "PQN",
    "REDQ",
    "SAC",
    "SimbaV2",
    "TD3",
    "TDMPC2",
    "TDMPC2MultiTask",
    "TQC",
    "UDRL",
    "device_report",
]
