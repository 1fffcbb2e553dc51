"""TD3 on the shared off-policy loop: Gaussian exploration, smoothed clipped double-Q targets,
and the actor and both target networks updated every `policy_delay` critic updates.

With memory the networks are recurrent and read through `ajax.agents.recurrent`'s sequence
reader, as SAC's are.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from ajax.agents.loop import RunSettings, TrainLoop, actor_step, critic_step, when
from ajax.agents.recurrent import (
    FEED_FORWARD,
    example_inputs,
    recurrent_collector,
    recurrent_evaluation,
    with_memory,
)
from ajax.agents.SAC.core import polyak
from ajax.agents.TD3.core import clipped_double_q_target, deterministic_policy_loss, smoothed_target_action
from ajax.agents.TD3.state import TD3Config
from ajax.buffers import ReplayBuffer
from ajax.buffers.sequence import SequenceReplay
from ajax.environments.interaction import Transition, gaussian_exploration, init_collector
from ajax.evaluate import EvalPolicy
from ajax.extensions import ExtensionStack
from ajax.modules.pid_actor import PIDPolicy, pid_actor
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
    memory, reader = network_args.memory, FEED_FORWARD if config.sequences is None else config.sequences
    architecture = network_args.actor_architecture
    if isinstance(architecture, PIDPolicy):
        actor = pid_actor(architecture, env_args, "deterministic")
    else:
        actor = with_memory(DeterministicActor(architecture, env_args.action_dim), memory)
    critic = with_memory(QEnsemble(network_args.critic_architecture, n=2), memory)
    if config.sequences is None:
        buffer = ReplayBuffer(config.buffer_size, config.batch_size)
    else:
        sequences = config.sequences
        n_sequences = config.batch_size // sequences.sequence_length
        buffer = SequenceReplay(config.buffer_size, env_args.n_envs, n_sequences, sequences.window)

    def init(key: jax.Array) -> BaseAgentState:
        rng, actor_key, critic_key, env_key, eval_key = jax.random.split(key, 5)
        actor_inputs = example_inputs(memory, env_args.observation_dim)
        critic_inputs = example_inputs(memory, env_args.observation_dim, env_args.action_dim)
        if memory is None:
            collector = init_collector(env_key, env_args, buffer.init(env_args))
        else:
            collector = recurrent_collector(env_key, env_args, buffer, config.sequences)
        return BaseAgentState(
            rng=rng,
            actor_state=new_train_state(actor, actor_key, actor_optimizer_args, *actor_inputs, with_target=True),
            critic_state=new_train_state(critic, critic_key, critic_optimizer_args, *critic_inputs, with_target=True),
            collector_state=collector,
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
        trained = reader.trained(batch)

        # With memory the target actor burns in a carry of its own, as the online one does.
        next_action = smoothed_target_action(
            reader.at_next_obs(actor, state.actor_state.target_params, batch, actor=True),
            noise_key,
            config.target_policy_noise,
            config.target_noise_clip,
        )
        next_q = reader.at_next_obs(critic, state.critic_state.target_params, batch, next_action)
        target = clipped_double_q_target(trained.reward, trained.terminated, next_q, config.gamma)

        def td_loss(params, target):
            q = reader.at_obs(critic, params, batch, trained.action)
            return jnp.sum(jnp.mean(jnp.square(q - target), axis=tuple(range(1, q.ndim)))), jnp.mean(q)

        critic_state, critic_loss, q_mean, critic_norm, critic_metrics = critic_step(
            state.critic_state, td_loss, target, trained, state, extensions
        )

        def delayed(operands):
            """The actor step, then both targets' Polyak update (Algorithm 1, every d-th update)."""
            actor_state, critic_state = operands

            def policy_loss(params):
                action = reader.at_obs(actor, params, batch, actor=True)
                q = reader.at_obs(critic, critic_state.params, batch, action)
                return deterministic_policy_loss(q[0]), ()

            actor_state, actor_loss, _, actor_norm, actor_metrics = actor_step(
                actor_state, policy_loss, trained, state, extensions
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

    explore = gaussian_exploration(config.exploration_noise)
    pipeline = config.action_pipeline.build(
        actor,
        policy,
        explore,
        config.learning_starts,
        run.total_timesteps,
        stored_state=memory is not None and config.sequences.stored_state,
    )
    if memory is None:
        evaluation = EvalPolicy(greedy, value, config.gamma, expert=config.expert)
    else:
        deterministic = lambda action: (action, jnp.zeros(action.shape[:-1]))  # noqa: E731
        minimum = lambda q: jnp.min(q, axis=0)  # noqa: E731
        evaluation = recurrent_evaluation(actor, critic, memory, deterministic, minimum, config.gamma, config.expert)
    loop = TrainLoop.create(env_args, run, extensions, evaluation)
    return loop.off_policy(init, update, config.learning_starts, pipeline, store=buffer.add, schedule=config.schedule)
