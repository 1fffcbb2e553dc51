"""PPO on the shared on-policy loop: rollout, GAE, clipped epochs of minibatches.

The update reads top to bottom in the order the algorithm runs: values of the rollout's
observations and of the states each step reached, GAE, then `n_epochs` passes over a fresh
shuffle of the rollout in minibatches, each an actor and a critic gradient step.

`ProximalActorCritic` holds the parts PPO's descendants reuse unchanged (the networks, the
initial state, the rollout policy, the clipped minibatch epochs, the evaluation), so APO's
update holds only what its paper changes: the advantages and the critic's loss. The actor's
step is the shared loop's `actor_step`, so the extensions' actor_loss phase (ImitationLoss)
folds into the clipped surrogate on every minibatch, as it does into a replay agent's actor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from ajax.agents.loop import RunSettings, TrainLoop, actor_step, gradient_step
from ajax.agents.PPO.core import (
    approx_kl,
    clipped_surrogate_loss,
    generalized_advantages,
    normalize,
    value_loss,
)
from ajax.agents.PPO.state import PPOConfig
from ajax.environments.interaction import Transition, init_collector
from ajax.evaluate import EvalPolicy
from ajax.extensions import ExtensionStack
from ajax.networks.actor_critic import CategoricalActor, GaussianActor, ValueCritic
from ajax.networks.optim import new_train_state
from ajax.perf_utils import final_aux_scan
from ajax.schedule import at
from ajax.state import BaseAgentState, CollectorState, EnvironmentConfig, NetworkConfig, OptimizerConfig

# (values of a minibatch's observations, their targets) -> the critic's loss before vf_coef
CriticLoss = Callable[[jax.Array, jax.Array], jax.Array]


@struct.dataclass
class PolicyAuxiliaries:
    policy_loss: jax.Array
    entropy: jax.Array
    approx_kl: jax.Array
    clip_fraction: jax.Array
    actor_grad_norm: jax.Array


@struct.dataclass
class ValueAuxiliaries:
    critic_loss: jax.Array
    critic_grad_norm: jax.Array


@struct.dataclass
class AuxiliaryLogs:
    policy: PolicyAuxiliaries
    value: ValueAuxiliaries
    extensions: dict  # the actor_loss extensions' metrics (imitation/loss), logged under their own names


@struct.dataclass
class Minibatch:
    """What one clipped-surrogate step reads of the rollout; an actor_loss extension reads its `obs`."""

    obs: jax.Array
    action: jax.Array
    old_log_prob: jax.Array
    advantage: jax.Array
    target: jax.Array


def make_networks(env_args: EnvironmentConfig, network_args: NetworkConfig):
    if env_args.continuous:
        actor = GaussianActor(network_args.actor_architecture, env_args.action_dim)
    else:
        actor = CategoricalActor(network_args.actor_architecture, env_args.action_dim)
    return actor, ValueCritic(network_args.critic_architecture)


@dataclass(frozen=True)
class ProximalActorCritic:
    """A stochastic actor and a state-value critic, trained by clipped minibatch epochs."""

    env_args: EnvironmentConfig
    network_args: NetworkConfig
    actor_optimizer_args: OptimizerConfig
    critic_optimizer_args: OptimizerConfig
    config: PPOConfig
    extensions: ExtensionStack

    @property
    def networks(self) -> tuple[CategoricalActor | GaussianActor, ValueCritic]:
        return make_networks(self.env_args, self.network_args)

    def init(self, key: jax.Array, state_class: type[BaseAgentState] = BaseAgentState, **fields: Any):
        rng, actor_key, critic_key, env_key, eval_key = jax.random.split(key, 5)
        actor, critic = self.networks
        obs_example = jnp.zeros((1, self.env_args.observation_dim))
        return state_class(
            rng=rng,
            actor_state=new_train_state(actor, actor_key, self.actor_optimizer_args, obs_example),
            critic_state=new_train_state(critic, critic_key, self.critic_optimizer_args, obs_example),
            collector_state=init_collector(env_key, self.env_args),
            eval_rng=eval_key,
            n_updates=jnp.zeros((), jnp.int32),
            n_logs=jnp.zeros((), jnp.int32),
            **fields,
        )

    def policy(self, state: BaseAgentState, obs: jax.Array):
        return self.networks[0].apply(state.actor_state.params, obs)

    def value(self, state: BaseAgentState, obs: jax.Array) -> jax.Array:
        return self.networks[1].apply(state.critic_state.params, obs)

    def act(self, state: BaseAgentState, obs: jax.Array, key: jax.Array):
        action, log_prob = self.policy(state, obs).sample_and_log_prob(seed=key)
        return action, {"log_prob": log_prob}

    def clipped_epochs(
        self,
        state: BaseAgentState,
        rollout: Transition,
        advantages: jax.Array,
        targets: jax.Array,
        critic_loss: CriticLoss = value_loss,
    ) -> tuple[BaseAgentState, AuxiliaryLogs]:
        """`n_epochs` passes over a fresh shuffle of the rollout, in minibatches of `batch_size`.

        Each minibatch takes an actor step on the clipped surrogate (eq. 7) less the entropy
        bonus, plus the extensions' actor_loss terms on the minibatch, then a critic step on
        `vf_coef * critic_loss(V(s), targets)`.
        """
        actor, critic = self.networks
        config = self.config
        rollout_size = config.n_steps * self.env_args.n_envs
        n_minibatches = rollout_size // config.batch_size
        flat = jax.tree.map(
            lambda x: x.reshape(-1, *x.shape[2:]),
            Minibatch(rollout.obs, rollout.action, rollout.extras["log_prob"], advantages, targets),
        )
        clip_range = at(config.clip_range, state.collector_state.timestep)
        state, (shuffle_key,) = state.next_keys(1)

        def minibatch_step(train_states, batch: Minibatch):
            actor_state, critic_state = train_states
            advantage = normalize(batch.advantage) if config.normalize_advantage else batch.advantage

            def policy_loss(params):
                pi = actor.apply(params, batch.obs)
                log_ratio = pi.log_prob(batch.action) - batch.old_log_prob
                entropy = jnp.mean(pi.entropy())
                loss = clipped_surrogate_loss(log_ratio, advantage, clip_range) - config.ent_coef * entropy
                clip_fraction = jnp.mean(jnp.abs(jnp.exp(log_ratio) - 1.0) > clip_range)
                return loss, (entropy, approx_kl(log_ratio), clip_fraction)

            def value_step_loss(params):
                return config.vf_coef * critic_loss(critic.apply(params, batch.obs), batch.target), ()

            # The extensions read the agent state as the epochs found it (its normaliser, its counters);
            # the actor params they pull on are this minibatch's.
            actor_state, p_loss, (entropy, kl, clip_fraction), actor_norm, extension_metrics = actor_step(
                actor_state, policy_loss, batch, state, self.extensions
            )
            critic_state, v_loss, _, critic_norm = gradient_step(critic_state, value_step_loss)
            aux = AuxiliaryLogs(
                PolicyAuxiliaries(p_loss, entropy, kl, clip_fraction, actor_norm),
                ValueAuxiliaries(v_loss, critic_norm),
                extension_metrics,
            )
            return (actor_state, critic_state), aux

        def epoch(carry, key):
            permutation = jax.random.permutation(key, rollout_size)
            minibatches = jax.tree.map(
                lambda x: x[permutation].reshape(n_minibatches, config.batch_size, *x.shape[1:]), flat
            )
            return final_aux_scan(minibatch_step, carry, minibatches)

        (actor_state, critic_state), aux = final_aux_scan(
            epoch, (state.actor_state, state.critic_state), jax.random.split(shuffle_key, config.n_epochs)
        )
        return state.replace(actor_state=actor_state, critic_state=critic_state), aux

    def evaluation(self, discounted: bool = True) -> EvalPolicy:
        """Greedy actions; the value bias only for a critic of discounted returns."""

        def greedy(state: BaseAgentState, obs: jax.Array):
            pi = self.policy(state, obs)
            return pi.mode(), pi.entropy()

        def value(state: BaseAgentState, obs: jax.Array, action: jax.Array) -> jax.Array:
            return self.value(state, obs)

        return EvalPolicy(greedy, value if discounted else None, self.config.gamma, expert=self.config.expert)

    def loop(self, run: RunSettings, init: Callable, update: Callable, discounted: bool = True):
        """The shared on-policy loop around `update`, collecting `n_steps` per env with `act`."""
        loop = TrainLoop.create(self.env_args, run, self.extensions, self.evaluation(discounted))
        return loop.on_policy(init, update, self.config.n_steps, self.act)


def make_train(
    *,
    env_args: EnvironmentConfig,
    network_args: NetworkConfig,
    actor_optimizer_args: OptimizerConfig,
    critic_optimizer_args: OptimizerConfig,
    agent_config: PPOConfig,
    extensions: ExtensionStack,
    run: RunSettings,
):
    ppo = ProximalActorCritic(
        env_args, network_args, actor_optimizer_args, critic_optimizer_args, agent_config, extensions
    )
    config = agent_config

    def update(state: BaseAgentState, rollout: Transition, start: CollectorState):
        del start  # a feed-forward PPO needs nothing from the rollout's start
        # The critic has not changed since collection: its values of the rollout's states and
        # of the states each step reached are computed here, as two batched passes, rather
        # than one small pass per collection step.
        values, next_values = ppo.value(state, rollout.obs), ppo.value(state, rollout.next_obs)
        advantages, targets = generalized_advantages(
            rollout.reward,
            values,
            next_values,
            rollout.terminated,
            rollout.truncated,
            config.gamma,
            config.gae_lambda,
        )
        return ppo.clipped_epochs(state, rollout, advantages, targets)

    return ppo.loop(run, ppo.init, update)
