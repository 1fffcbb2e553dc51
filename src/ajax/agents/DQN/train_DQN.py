"""DQN on the shared off-policy loop: epsilon-greedy collection, replay, a hard-copied target."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from ajax.agents.DQN.core import (
    double_q_learning_target,
    q_learning_target,
    refresh_crossings,
    refreshed_target,
    td_loss,
)
from ajax.agents.DQN.state import DQNConfig
from ajax.agents.loop import RunSettings, TrainLoop, critic_step, when
from ajax.buffers import ReplayBuffer
from ajax.environments.interaction import Transition, epsilon_greedy, explore_pipeline, init_collector
from ajax.evaluate import greedy_q_evaluation
from ajax.extensions import ExtensionStack
from ajax.networks.actor_critic import DiscreteQNetwork
from ajax.networks.encoders import encoded
from ajax.networks.optim import new_train_state
from ajax.schedule import at, linear
from ajax.state import BaseAgentState, EnvironmentConfig, NetworkConfig, OptimizerConfig


@struct.dataclass
class ValueAuxiliaries:
    critic_loss: jax.Array
    q_mean: jax.Array
    critic_grad_norm: jax.Array
    epsilon: jax.Array


@struct.dataclass
class AuxiliaryLogs:
    value: ValueAuxiliaries
    extensions: dict


def make_train(
    *,
    env_args: EnvironmentConfig,
    network_args: NetworkConfig,
    critic_optimizer_args: OptimizerConfig,
    agent_config: DQNConfig,
    extensions: ExtensionStack,
    run: RunSettings,
):
    config = agent_config
    q_network = encoded(
        DiscreteQNetwork(
            network_args.critic_architecture, env_args.action_dim, dueling=config.dueling, fan_in_uniform=True
        ),
        network_args.encoder,
        env_args.observation_parts,
        masked=env_args.action_masked,
    )
    buffer = ReplayBuffer(config.buffer_size, config.batch_size)
    # Epsilon falls linearly over the first `exploration_fraction` of the run's horizon.
    epsilon = linear(
        config.exploration_initial_eps,
        config.exploration_final_eps,
        int(config.exploration_fraction * run.total_timesteps),
    )
    # The target refreshes every `target_update_interval` env steps, counted in ticks of all
    # env copies from the run's start (SB3's count), also while warm-up actions are collected.
    refresh_every = max(config.target_update_interval // env_args.n_envs, 1)
    round_ticks = config.schedule.train_freq

    def init(key: jax.Array) -> BaseAgentState:
        rng, q_key, env_key, eval_key = jax.random.split(key, 4)
        return BaseAgentState(
            rng=rng,
            actor_state=None,
            critic_state=new_train_state(
                q_network, q_key, critic_optimizer_args, env_args.observation_zeros(1), with_target=True
            ),
            collector_state=init_collector(env_key, env_args, buffer.init(env_args)),
            eval_rng=eval_key,
            n_updates=jnp.zeros((), jnp.int32),
            n_logs=jnp.zeros((), jnp.int32),
        )

    def q_values(state: BaseAgentState, obs: jax.Array) -> jax.Array:
        return q_network.apply(state.critic_state.params, obs)

    def refresh(state: BaseAgentState) -> BaseAgentState:
        """Before a round's updates: the refreshes of the ticks it collected, during which the
        parameters did not move."""
        crossed = refresh_crossings(state.collector_state.timestep // env_args.n_envs, round_ticks, refresh_every)

        def apply(state: BaseAgentState) -> tuple[BaseAgentState, tuple]:
            critic = state.critic_state
            target = refreshed_target(critic.params, critic.target_params, config.tau, crossed)
            return state.replace(critic_state=critic.replace(target_params=target)), ()

        # A branch on the unbatched timestep: the rounds that cross no refresh point skip it.
        return when(crossed > 0, apply, state)[0]

    def bootstrap(state: BaseAgentState, next_obs: jax.Array, reward: jax.Array, terminated: jax.Array):
        next_q = q_network.apply(state.critic_state.target_params, next_obs)
        if not config.double_q:
            return q_learning_target(reward, terminated, next_q, config.gamma)
        next_q_online = q_network.apply(state.critic_state.params, next_obs)
        return double_q_learning_target(reward, terminated, next_q_online, next_q, config.gamma)

    def update(state: BaseAgentState, transition: Transition):
        del transition  # DQN learns from replay; the loop has already stored the step
        state, (sample_key,) = state.next_keys(1)
        batch = buffer.sample(state.collector_state.buffer_state, sample_key)
        target = bootstrap(state, batch.next_obs, batch.reward, batch.terminated)

        def loss(params, target):
            q = q_network.apply(params, batch.obs)
            return td_loss(q, batch.action, target), jnp.mean(q)

        critic_state, critic_loss, q_mean, norm, metrics = critic_step(
            state.critic_state, loss, target, batch, state, extensions
        )
        aux = AuxiliaryLogs(
            ValueAuxiliaries(critic_loss, q_mean, norm, at(epsilon, state.collector_state.timestep)),
            metrics,
        )
        return state.replace(critic_state=critic_state), aux

    pipeline = explore_pipeline(
        epsilon_greedy(epsilon, env_args.action_masked),
        q_values,
        env_args,
        warmup=lambda state: state.collector_state.timestep < config.learning_starts,
    )
    loop = TrainLoop.create(env_args, run, extensions, greedy_q_evaluation(q_values, config.gamma))
    return loop.off_policy(
        init,
        update,
        config.learning_starts,
        pipeline,
        store=buffer.add,
        schedule=config.schedule,
        before_updates=refresh,
    )
