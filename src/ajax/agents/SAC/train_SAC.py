"""SAC on the shared off-policy loop: replay, clipped double-Q soft targets, learned temperature.

One update per tick: sample a minibatch, a critic step towards the soft target, a
reparameterised actor step against the updated critics, a temperature step, then the
Polyak update of the target critics.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from ajax.agents.loop import RunSettings, TrainLoop, actor_step, critic_step, gradient_step
from ajax.agents.SAC.core import (
    SquashedGaussianActor,
    polyak,
    soft_policy_loss,
    soft_q_target,
    temperature_loss,
)
from ajax.agents.SAC.state import SACConfig, SoftACState
from ajax.buffers import ReplayBuffer
from ajax.environments.interaction import Transition, explore_pipeline, init_collector, sample_policy
from ajax.evaluate import EvalPolicy
from ajax.extensions import ExtensionStack
from ajax.networks.actor_critic import QEnsemble
from ajax.networks.optim import make_optimizer, new_train_state
from ajax.state import EnvironmentConfig, LoopTrainState, NetworkConfig, OptimizerConfig


@struct.dataclass
class PolicyAuxiliaries:
    policy_loss: jax.Array
    log_prob: jax.Array
    actor_grad_norm: jax.Array


@struct.dataclass
class ValueAuxiliaries:
    critic_loss: jax.Array
    q_mean: jax.Array
    critic_grad_norm: jax.Array


@struct.dataclass
class TemperatureAuxiliaries:
    alpha: jax.Array
    alpha_loss: jax.Array


@struct.dataclass
class AuxiliaryLogs:
    policy: PolicyAuxiliaries
    value: ValueAuxiliaries
    temperature: TemperatureAuxiliaries
    extensions: dict


def make_train(
    *,
    env_args: EnvironmentConfig,
    network_args: NetworkConfig,
    actor_optimizer_args: OptimizerConfig,
    critic_optimizer_args: OptimizerConfig,
    agent_config: SACConfig,
    extensions: ExtensionStack,
    run: RunSettings,
):
    config = agent_config
    actor = SquashedGaussianActor(network_args.actor_architecture, env_args.action_dim)
    critic = QEnsemble(network_args.critic_architecture, n=config.n_critics)
    buffer = ReplayBuffer(config.buffer_size, config.batch_size)
    alpha_args = OptimizerConfig(config.alpha_learning_rate)
    obs_example = jnp.zeros((1, env_args.observation_dim))
    action_example = jnp.zeros((1, env_args.action_dim))

    def init(key: jax.Array) -> SoftACState:
        rng, actor_key, critic_key, env_key, eval_key = jax.random.split(key, 5)
        log_alpha = {"log_alpha": jnp.log(jnp.asarray(config.alpha_init, jnp.float32))}
        return SoftACState(
            rng=rng,
            actor_state=new_train_state(actor, actor_key, actor_optimizer_args, obs_example),
            critic_state=new_train_state(
                critic, critic_key, critic_optimizer_args, obs_example, action_example, with_target=True
            ),
            collector_state=init_collector(env_key, env_args, buffer.init(env_args)),
            eval_rng=eval_key,
            n_updates=jnp.zeros((), jnp.int32),
            n_logs=jnp.zeros((), jnp.int32),
            alpha=LoopTrainState.create(apply_fn=None, params=log_alpha, tx=make_optimizer(alpha_args)),
        )

    def policy(state: SoftACState, obs: jax.Array):
        return actor.apply(state.actor_state.params, obs)

    def update(state: SoftACState, transition: Transition):
        del transition  # SAC learns from replay; the loop has already stored the step
        state, (sample_key, next_key, actor_key) = state.next_keys(3)
        batch = buffer.sample(state.collector_state.buffer_state, sample_key)
        alpha = jnp.exp(state.alpha.params["log_alpha"])

        next_action, next_log_prob = policy(state, batch.next_obs).sample_and_log_prob(seed=next_key)
        next_q = jnp.min(critic.apply(state.critic_state.target_params, batch.next_obs, next_action), axis=0)
        target = soft_q_target(batch.reward, batch.terminated, next_q, next_log_prob, alpha, config.gamma)

        def td_loss(params, target):
            q = critic.apply(params, batch.obs, batch.action)
            return 0.5 * jnp.sum(jnp.mean(jnp.square(q - target), axis=-1)), jnp.mean(q)

        critic_state, critic_loss, q_mean, critic_norm, critic_metrics = critic_step(
            state.critic_state, td_loss, target, batch, state, extensions
        )

        def policy_loss(params):
            action, log_prob = actor.apply(params, batch.obs).sample_and_log_prob(seed=actor_key)
            q = jnp.min(critic.apply(critic_state.params, batch.obs, action), axis=0)
            return soft_policy_loss(alpha, log_prob, q), log_prob

        actor_state, actor_loss, log_prob, actor_norm, actor_metrics = actor_step(
            state.actor_state, policy_loss, batch, state, extensions
        )

        alpha_state, alpha_loss = state.alpha, jnp.zeros(())
        if config.learn_alpha:
            alpha_state, alpha_loss, _, _ = gradient_step(
                state.alpha,
                lambda p: (temperature_loss(p["log_alpha"], log_prob, config.target_entropy), ()),
            )

        critic_state = critic_state.replace(
            target_params=polyak(critic_state.target_params, critic_state.params, config.tau)
        )
        aux = AuxiliaryLogs(
            policy=PolicyAuxiliaries(actor_loss, jnp.mean(log_prob), actor_norm),
            value=ValueAuxiliaries(critic_loss, q_mean, critic_norm),
            temperature=TemperatureAuxiliaries(alpha, alpha_loss),
            extensions={**critic_metrics, **actor_metrics},
        )
        return state.replace(actor_state=actor_state, critic_state=critic_state, alpha=alpha_state), aux

    def greedy(state: SoftACState, obs: jax.Array):
        pi = policy(state, obs)
        return pi.mode(), pi.entropy()

    def value(state: SoftACState, obs: jax.Array, action: jax.Array) -> jax.Array:
        return jnp.min(critic.apply(state.critic_state.params, obs, action), axis=0)

    pipeline = explore_pipeline(
        sample_policy,
        policy,
        env_args,
        warmup=lambda state: state.collector_state.timestep < config.learning_starts,
    )
    loop = TrainLoop.create(env_args, run, extensions, EvalPolicy(greedy, value, config.gamma))
    return loop.off_policy(init, update, config.learning_starts, pipeline, store=buffer.add)
