from ajax.agents.PPO.PPO import PPO

__all__ = ["PPO"]
