"""APO's state (PPO's plus the reward-rate estimate) and static settings (PPO's plus two)."""

from __future__ import annotations

from dataclasses import dataclass

import jax
from flax import struct

from ajax.agents.PPO.state import PPOConfig
from ajax.state import BaseAgentState


@struct.dataclass(kw_only=True)
class APOState(BaseAgentState):
    """The shared state plus `average_reward`, the estimate rho of the policy's reward rate.

    One scalar per seed: after the seed vmap its shape is (n_seeds,).
    """

    average_reward: jax.Array


@dataclass(frozen=True)
class APOConfig(PPOConfig):
    """PPO's settings with `gamma` fixed at 1 (the average-reward criterion does not discount), plus:

    `average_reward_step`: alpha, the step of rho towards each rollout's mean reward
    (corrected for the start at rho = 0, see `core.reward_rate_update`).
    `nu`: the weight of the Average Value Constraint's penalty nu (E[V(s)])^2 on the critic.
    """

    average_reward_step: float
    nu: float
