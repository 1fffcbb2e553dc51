"""APO on the shared on-policy loop: PPO's rollout and clipped epochs on differential advantages.

One update per rollout, in the order the algorithm runs: move the reward-rate estimate rho
towards the rollout's mean reward, value the rollout's states and the states each step
reached, take average-reward GAE on r - rho, then PPO's clipped minibatch epochs with the
critic regressing on the differential targets under the Average Value Constraint.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from ajax.agents.APO.core import differential_advantages, differential_value_loss, reward_rate_update
from ajax.agents.APO.state import APOConfig, APOState
from ajax.agents.loop import RunSettings
from ajax.agents.PPO.train_PPO import PolicyAuxiliaries, ProximalActorCritic, ValueAuxiliaries
from ajax.environments.interaction import Transition
from ajax.state import CollectorState


@struct.dataclass
class AuxiliaryLogs:
    policy: PolicyAuxiliaries
    value: ValueAuxiliaries
    average_reward: jax.Array  # rho after this rollout
    mean_value: jax.Array  # E[V(s)] over the rollout, which the Average Value Constraint holds near 0
    extensions: dict  # the actor_loss extensions' metrics, from PPO's clipped epochs


def make_train(*, agent_config: APOConfig, run: RunSettings, **settings: Any):
    ppo = ProximalActorCritic(config=agent_config, **settings)
    config = agent_config
    critic_loss = functools.partial(differential_value_loss, nu=config.nu)

    def init(key: jax.Array) -> APOState:
        return ppo.init(key, APOState, average_reward=jnp.zeros(()))

    def update(state: APOState, rollout: Transition, start: CollectorState):
        del start  # a feed-forward APO needs nothing from the rollout's start
        average_reward = reward_rate_update(
            state.average_reward, rollout.reward, config.average_reward_step, n_rollouts=state.n_updates + 1
        )
        values, next_values = ppo.value(state, rollout.obs), ppo.value(state, rollout.next_obs)
        advantages, targets = differential_advantages(
            rollout.reward,
            average_reward,
            values,
            next_values,
            rollout.terminated,
            rollout.truncated,
            config.gae_lambda,
        )
        state = state.replace(average_reward=average_reward)
        state, aux = ppo.clipped_epochs(state, rollout, advantages, targets, critic_loss)
        return state, AuxiliaryLogs(aux.policy, aux.value, average_reward, jnp.mean(values), aux.extensions)

    # The critic's differential values have no discounted return to be compared with.
    return ppo.loop(run, init, update, discounted=False)
