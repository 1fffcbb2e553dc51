"""TD3 on the shared off-policy loop: Gaussian exploration, smoothed clipped double-Q targets,
and the actor and both target networks updated every `policy_delay` critic updates."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from ajax.agents.loop import RunSettings, TrainLoop, actor_step, critic_step, when
from ajax.agents.SAC.core import polyak
from ajax.agents.TD3.core import clipped_double_q_target, deterministic_policy_loss, smoothed_target_action
from ajax.agents.TD3.state import TD3Config
from ajax.buffers import ReplayBuffer
from ajax.environments.interaction import Transition, explore_pipeline, gaussian_exploration, init_collector
from ajax.evaluate import EvalPolicy
from ajax.extensions import ExtensionStack
from ajax.networks.actor_critic import DeterministicActor, QEnsemble
from ajax.networks.optim import new_train_state
from ajax.state import BaseAgentState, EnvironmentConfig, NetworkConfig, OptimizerConfig


@struct.dataclass
class PolicyAuxiliaries:
    policy_loss: jax.Array
    actor_grad_norm: jax.Array


@struct.dataclass
class ValueAuxiliaries:
    critic_loss: jax.Array
    q_mean: jax.Array
    critic_grad_norm: jax.Array


@struct.dataclass
class AuxiliaryLogs:
    policy: PolicyAuxiliaries
    value: ValueAuxiliaries
    extensions: dict


def make_train(
    *,
    env_args: EnvironmentConfig,
    network_args: NetworkConfig,
    actor_optimizer_args: OptimizerConfig,
    critic_optimizer_args: OptimizerConfig,
    agent_config: TD3Config,
    extensions: ExtensionStack,
    run: RunSettings,
):
    config = agent_config
    actor = DeterministicActor(network_args.actor_architecture, env_args.action_dim)
    critic = QEnsemble(network_args.critic_architecture, n=2)
    buffer = ReplayBuffer(config.buffer_size, config.batch_size)
    obs_example = jnp.zeros((1, env_args.observation_dim))
    action_example = jnp.zeros((1, env_args.action_dim))

    def init(key: jax.Array) -> BaseAgentState:
        rng, actor_key, critic_key, env_key, eval_key = jax.random.split(key, 5)
        return BaseAgentState(
            rng=rng,
            actor_state=new_train_state(actor, actor_key, actor_optimizer_args, obs_example, with_target=True),
            critic_state=new_train_state(
                critic, critic_key, critic_optimizer_args, obs_example, action_example, with_target=True
            ),
            collector_state=init_collector(env_key, env_args, buffer.init(env_args)),
            eval_rng=eval_key,
            n_updates=jnp.zeros((), jnp.int32),
            n_logs=jnp.zeros((), jnp.int32),
        )

    def policy(state: BaseAgentState, obs: jax.Array) -> jax.Array:
        return actor.apply(state.actor_state.params, obs)

    def update(state: BaseAgentState, transition: Transition):
        del transition  # TD3 learns from replay; the loop has already stored the step
        state, (sample_key, noise_key) = state.next_keys(2)
        batch = buffer.sample(state.collector_state.buffer_state, sample_key)

        next_action = smoothed_target_action(
            actor.apply(state.actor_state.target_params, batch.next_obs),
            noise_key,
            config.target_policy_noise,
            config.target_noise_clip,
        )
        next_q = critic.apply(state.critic_state.target_params, batch.next_obs, next_action)
        target = clipped_double_q_target(batch.reward, batch.terminated, next_q, config.gamma)

        def td_loss(params, target):
            q = critic.apply(params, batch.obs, batch.action)
            return jnp.sum(jnp.mean(jnp.square(q - target), axis=-1)), jnp.mean(q)

        critic_state, critic_loss, q_mean, critic_norm, critic_metrics = critic_step(
            state.critic_state, td_loss, target, batch, state, extensions
        )

        def delayed(operands):
            """The actor step, then both targets' Polyak update (Algorithm 1, every d-th update)."""
            actor_state, critic_state = operands

            def policy_loss(params):
                q = critic.apply(critic_state.params, batch.obs, actor.apply(params, batch.obs))
                return deterministic_policy_loss(q[0]), ()

            actor_state, actor_loss, _, actor_norm, actor_metrics = actor_step(
                actor_state, policy_loss, batch, state, extensions
            )
            actor_state = actor_state.replace(
                target_params=polyak(actor_state.target_params, actor_state.params, config.tau)
            )
            critic_state = critic_state.replace(
                target_params=polyak(critic_state.target_params, critic_state.params, config.tau)
            )
            return (actor_state, critic_state), (PolicyAuxiliaries(actor_loss, actor_norm), actor_metrics)

        (actor_state, critic_state), (policy_aux, actor_metrics) = when(
            state.n_updates % config.policy_delay == 0, delayed, (state.actor_state, critic_state)
        )
        aux = AuxiliaryLogs(
            policy=policy_aux,
            value=ValueAuxiliaries(critic_loss, q_mean, critic_norm),
            extensions={**critic_metrics, **actor_metrics},
        )
        return state.replace(actor_state=actor_state, critic_state=critic_state), aux

    def greedy(state: BaseAgentState, obs: jax.Array):
        return policy(state, obs), jnp.zeros(obs.shape[0])

    def value(state: BaseAgentState, obs: jax.Array, action: jax.Array) -> jax.Array:
        return jnp.min(critic.apply(state.critic_state.params, obs, action), axis=0)

    pipeline = explore_pipeline(
        gaussian_exploration(config.exploration_noise),
        policy,
        env_args,
        warmup=lambda state: state.collector_state.timestep < config.learning_starts,
    )
    loop = TrainLoop.create(env_args, run, extensions, EvalPolicy(greedy, value, config.gamma, expert=config.expert))
    return loop.off_policy(init, update, config.learning_starts, pipeline, store=buffer.add, schedule=config.schedule)
