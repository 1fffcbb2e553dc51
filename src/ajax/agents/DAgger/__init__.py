from ajax.agents.DAgger.DAgger import DAgger

__all__ = ["DAgger"]
