"""ASAC on the shared off-policy loop: SAC's update on the differential soft target.

Per tick: a minibatch; the critic step towards r - theta + V(s') with no discount; the
reward-rate step on the differential TD errors of the online critics; SAC's actor and temperature steps
against the min of the two updated critics; the Polyak update of the targets.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from ajax.agents.ASAC.core import differential_soft_target, reward_rate_update
from ajax.agents.ASAC.state import ASACConfig, ASACState
from ajax.agents.loop import RunSettings
from ajax.agents.SAC.train_SAC import AuxiliaryLogs, SoftActorCritic
from ajax.environments.interaction import Transition


def make_train(*, agent_config: ASACConfig, run: RunSettings, **settings: Any):
    sac = SoftActorCritic(config=agent_config, **settings)
    config = agent_config

    def init(key: jax.Array) -> ASACState:
        return sac.init(key, ASACState, theta=jnp.zeros((), jnp.float32))

    def update(state: ASACState, transition: Transition):
        del transition  # ASAC learns from replay; the loop has already stored the step
        state, (sample_key, next_key, actor_key) = state.next_keys(3)
        batch = sac.sample(state, sample_key)
        trained = sac.reader.trained(batch)

        next_action, next_log_prob, next_q = sac.next_values(state, batch, next_key, state.critic_state.target_params)
        target = differential_soft_target(
            trained.reward, trained.terminated, next_q, next_log_prob, sac.alpha(state), state.theta
        )
        critic_state, value_aux, critic_metrics = sac.critic_update(state, batch, target)
        # The reward rate's TD error reads one critic on both sides: the online ensemble's
        # mean at s' against the same mean at (s, a) that value_aux.q_mean holds.
        online_next_q = jnp.mean(sac.next_q_values(state.critic_state.params, batch, next_action), axis=0)
        rate_target = differential_soft_target(
            trained.reward, trained.terminated, online_next_q, next_log_prob, sac.alpha(state), state.theta
        )
        theta = reward_rate_update(state.theta, rate_target, value_aux.q_mean, config.theta_learning_rate)

        state = state.replace(critic_state=critic_state, theta=theta)
        state, policy_aux, temperature_aux, actor_metrics = sac.actor_update(
            state, batch, actor_key, sac.min_q(critic_state.params, batch)
        )
        extras = {"value/theta": theta, **critic_metrics, **actor_metrics}
        return state, AuxiliaryLogs(policy_aux, value_aux, temperature_aux, extras)

    # The critic estimates differential values, not discounted returns: no value bias.
    return sac.loop(run, init, update, value=None)
