from ajax.agents.TD3.TD3 import TD3

__all__ = ["TD3"]
