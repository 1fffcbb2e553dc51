"""PPO on the shared on-policy loop: rollout, GAE, clipped epochs of minibatches.

The update reads top to bottom in the order the algorithm runs: values of the rollout's
observations and of the states each step reached, GAE, then `n_epochs` passes over a fresh
shuffle of the rollout in minibatches, each an actor and a critic gradient step.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from ajax.agents.loop import RunSettings, TrainLoop, gradient_step
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


def make_networks(env_args: EnvironmentConfig, network_args: NetworkConfig):
    if env_args.continuous:
        actor = GaussianActor(network_args.actor_architecture, env_args.action_dim)
    else:
        actor = CategoricalActor(network_args.actor_architecture, env_args.action_dim)
    return actor, ValueCritic(network_args.critic_architecture)


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
    actor, critic = make_networks(env_args, network_args)
    config = agent_config
    n_minibatches = config.n_steps * env_args.n_envs // config.batch_size
    obs_example = jnp.zeros((1, env_args.observation_dim))

    def init(key: jax.Array) -> BaseAgentState:
        rng, actor_key, critic_key, env_key, eval_key = jax.random.split(key, 5)
        return BaseAgentState(
            rng=rng,
            actor_state=new_train_state(actor, actor_key, actor_optimizer_args, obs_example),
            critic_state=new_train_state(critic, critic_key, critic_optimizer_args, obs_example),
            collector_state=init_collector(env_key, env_args),
            eval_rng=eval_key,
            n_updates=jnp.zeros((), jnp.int32),
            n_logs=jnp.zeros((), jnp.int32),
        )

    def policy(state: BaseAgentState, obs: jax.Array):
        return actor.apply(state.actor_state.params, obs)

    def value(state: BaseAgentState, obs: jax.Array) -> jax.Array:
        return critic.apply(state.critic_state.params, obs)

    def act(state: BaseAgentState, obs: jax.Array, key: jax.Array):
        action, log_prob = policy(state, obs).sample_and_log_prob(seed=key)
        return action, {"log_prob": log_prob}

    def update(state: BaseAgentState, rollout: Transition, start: CollectorState):
        del start  # a feed-forward PPO needs nothing from the rollout's start
        # The critic has not changed since collection: its values of the rollout's states and
        # of the states each step reached are computed here, as two batched passes, rather
        # than one small pass per collection step.
        values, next_values = value(state, rollout.obs), value(state, rollout.next_obs)
        advantages, targets = generalized_advantages(
            rollout.reward,
            values,
            next_values,
            rollout.terminated,
            rollout.truncated,
            config.gamma,
            config.gae_lambda,
        )
        flat = jax.tree.map(
            lambda x: x.reshape(-1, *x.shape[2:]),
            (rollout.obs, rollout.action, rollout.extras["log_prob"], advantages, targets),
        )
        clip_range = at(config.clip_range, state.collector_state.timestep)

        def minibatch_step(train_states, batch):
            actor_state, critic_state = train_states
            obs, action, old_log_prob, advantage, target = batch
            if config.normalize_advantage:
                advantage = normalize(advantage)

            def policy_loss(params):
                pi = actor.apply(params, obs)
                log_ratio = pi.log_prob(action) - old_log_prob
                entropy = jnp.mean(pi.entropy())
                loss = clipped_surrogate_loss(log_ratio, advantage, clip_range) - config.ent_coef * entropy
                clip_fraction = jnp.mean(jnp.abs(jnp.exp(log_ratio) - 1.0) > clip_range)
                return loss, (entropy, approx_kl(log_ratio), clip_fraction)

            def critic_loss(params):
                return config.vf_coef * value_loss(critic.apply(params, obs), target), ()

            actor_state, p_loss, (entropy, kl, clip_fraction), actor_norm = gradient_step(actor_state, policy_loss)
            critic_state, v_loss, _, critic_norm = gradient_step(critic_state, critic_loss)
            aux = AuxiliaryLogs(
                PolicyAuxiliaries(p_loss, entropy, kl, clip_fraction, actor_norm),
                ValueAuxiliaries(v_loss, critic_norm),
            )
            return (actor_state, critic_state), aux

        def epoch(carry, key):
            permutation = jax.random.permutation(key, config.n_steps * env_args.n_envs)
            minibatches = jax.tree.map(
                lambda x: x[permutation].reshape(n_minibatches, config.batch_size, *x.shape[1:]), flat
            )
            return final_aux_scan(minibatch_step, carry, minibatches)

        state, (shuffle_key,) = state.next_keys(1)
        (actor_state, critic_state), aux = final_aux_scan(
            epoch, (state.actor_state, state.critic_state), jax.random.split(shuffle_key, config.n_epochs)
        )
        return state.replace(actor_state=actor_state, critic_state=critic_state), aux

    def greedy(state: BaseAgentState, obs: jax.Array):
        pi = policy(state, obs)
        return pi.mode(), pi.entropy()

    loop = TrainLoop.create(
        env_args,
        run,
        extensions,
        EvalPolicy(greedy, lambda state, obs, action: value(state, obs), config.gamma),
    )
    return loop.on_policy(init, update, config.n_steps, act)
