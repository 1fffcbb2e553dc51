"""CrossQ on the shared off-policy loop: SAC's update without target critics, on batch-renormalised networks.

Each update samples a minibatch, draws a' ~ pi(s') with the actor in acting mode, and takes a
critic step on the joint batch [(s, a); (s', a')] in training mode (its statistics move once,
on both halves); every `policy_delay`-th update then takes the actor step (the actor in
training mode, the critics in acting mode) and the temperature step. SAC's collection,
warm-up, expert, action pipelines and evaluation are SAC's own; every reader outside the
training passes applies the networks in acting mode, on the running statistics stored with
their parameters (`ajax.networks.batch_renorm`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from ajax.agents.CrossQ.core import actor_passes, joint_batch, joint_target
from ajax.agents.CrossQ.state import CrossQConfig
from ajax.agents.loop import RunSettings, actor_step, same_pass_critic_step, when
from ajax.agents.SAC.core import soft_policy_loss, temperature_step
from ajax.agents.SAC.state import SoftACState
from ajax.agents.SAC.train_SAC import (
    AuxiliaryLogs,
    PolicyAuxiliaries,
    SoftActorCritic,
    TemperatureAuxiliaries,
    ValueAuxiliaries,
)
from ajax.environments.interaction import Transition
from ajax.networks.batch_renorm import BatchRenormActor, BatchRenormQEnsemble
from ajax.state import LoopTrainState


def with_statistics(train_state: LoopTrainState, statistics: Any) -> LoopTrainState:
    """The train state with the running statistics a training pass moved.

    The statistics ride in the variables dict beside the parameters, and the optimiser's step
    leaves them where they were (a training pass reads them only through the gradient-free
    corrections r and d); the pass's own new values replace them after the step.
    """
    return train_state.replace(params={**train_state.params, **statistics})


@dataclass(frozen=True)
class BatchRenormActorCritic(SoftActorCritic):
    """SAC's parts with batch-renormalised networks and no target critics."""

    config: CrossQConfig

    @property
    def actor(self) -> nn.Module:
        return BatchRenormActor(self.network_args.actor_architecture, self.env_args.action_dim, self.config.momentum)

    def critic(self, n: int | None = None) -> nn.Module:
        n = self.config.n_critics if n is None else n
        return BatchRenormQEnsemble(self.network_args.critic_architecture, n, self.config.momentum)

    def init(self, key: jax.Array) -> SoftACState:
        state = super().init(key)
        return state.replace(critic_state=state.critic_state.replace(target_params=None))

    def renormalizes(self, passes: jax.Array) -> jax.Array:
        """Whether a network past `passes` training passes renormalises (else plain batch norm)."""
        return passes >= self.config.renorm_warmup

    def critic_update(
        self, state: SoftACState, batch: Transition, next_action: jax.Array, next_log_prob: jax.Array
    ) -> tuple[LoopTrainState, ValueAuxiliaries, dict[str, jax.Array]]:
        """One critic step on the joint batch: prediction and target from the same pass."""
        alpha, renormalize = self.alpha(state), self.renormalizes(state.n_updates)
        obs, action = joint_batch(batch.obs, batch.next_obs), joint_batch(batch.action, next_action)

        def td_loss(params: Any) -> tuple[jax.Array, tuple[jax.Array, Any]]:
            joint_q, statistics = self.critic().apply(params, obs, action, True, renormalize, mutable=["batch_stats"])
            q, target = joint_target(joint_q, batch.reward, batch.terminated, next_log_prob, alpha, self.config.gamma)
            loss, q_mean = self.critic_loss(q, target)
            return loss, (q_mean, statistics)

        critic_state, loss, (q_mean, statistics), norm, metrics = same_pass_critic_step(
            state.critic_state, td_loss, batch, state, self.extensions
        )
        return with_statistics(critic_state, statistics), ValueAuxiliaries(loss, q_mean, norm), metrics

    def delayed_update(
        self, state: SoftACState, batch: Transition, key: jax.Array
    ) -> tuple[SoftACState, tuple[PolicyAuxiliaries, TemperatureAuxiliaries, dict[str, jax.Array]]]:
        """The actor step, in training mode against the critics' min in acting mode, then the temperature's."""
        alpha = self.alpha(state)
        renormalize = self.renormalizes(actor_passes(state.n_updates, self.config.policy_delay))
        critic = state.critic_state

        def policy_loss(params: Any) -> tuple[jax.Array, tuple[jax.Array, Any]]:
            pi, statistics = self.actor.apply(params, batch.obs, True, renormalize, mutable=["batch_stats"])
            action, log_prob = pi.sample_and_log_prob(seed=key)
            q = jnp.min(self.critic().apply(critic.params, batch.obs, action), axis=0)
            return soft_policy_loss(alpha, log_prob, q), (log_prob, statistics)

        actor_state, loss, (log_prob, statistics), norm, metrics = actor_step(
            state.actor_state, policy_loss, batch, state, self.extensions
        )
        alpha_state, alpha_loss = state.alpha, jnp.zeros(())
        if self.config.learn_alpha:
            alpha_state, alpha_loss = temperature_step(state.alpha, log_prob, self.config.target_entropy)
        state = state.replace(actor_state=with_statistics(actor_state, statistics), alpha=alpha_state)
        auxiliaries = PolicyAuxiliaries(loss, jnp.mean(log_prob), norm), TemperatureAuxiliaries(alpha, alpha_loss)
        return state, (*auxiliaries, metrics)


def make_train(*, agent_config: CrossQConfig, run: RunSettings, **settings: Any):
    crossq = BatchRenormActorCritic(config=agent_config, **settings)
    config = agent_config

    def update(state: SoftACState, transition: Transition):
        del transition  # CrossQ learns from replay; the loop has already stored the step
        state, (sample_key, next_key, actor_key) = state.next_keys(3)
        batch = crossq.sample(state, sample_key)
        next_action, next_log_prob = crossq.next_policy(state, batch).sample_and_log_prob(seed=next_key)
        critic_state, value_aux, critic_metrics = crossq.critic_update(state, batch, next_action, next_log_prob)
        state = state.replace(critic_state=critic_state)
        state, (policy_aux, temperature_aux, actor_metrics) = when(
            state.n_updates % config.policy_delay == 0,
            lambda state: crossq.delayed_update(state, batch, actor_key),
            state,
        )
        return state, AuxiliaryLogs(policy_aux, value_aux, temperature_aux, {**critic_metrics, **actor_metrics})

    return crossq.loop(run, crossq.init, update, lambda q: jnp.min(q, axis=0))
