"""Controller-shaped network parts: the PID output head and the PID actor."""

from ajax.modules.pid import PIDCarry, PIDGains, PIDHead, initial_pid_carry
from ajax.modules.pid_actor import PIDPolicy

__all__ = ["PIDCarry", "PIDGains", "PIDHead", "PIDPolicy", "initial_pid_carry"]
