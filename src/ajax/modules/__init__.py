"""Controller-shaped network parts: the PID output head and the PID actor."""

from ajax.modules.pid import PIDCarry, PIDGains, PIDHead, initial_pid_carry

__all__ = ["PIDCarry", "PIDGains", "PIDHead", "initial_pid_carry"]
