"""IQL on TrainLoop.train: offline, one iteration is one gradient step on a minibatch of the dataset.

An iteration, in the order the paper's code (`learner.py`, `_update_jit`) runs it:

1. count the step: `collector_state.timestep` counts gradient steps, since IQL steps no
   environment while it trains;
2. draw a minibatch uniformly from the dataset the state holds;
3. a V step: expectile regression of V(s) onto the target critics' min Q'(s, a) (eq. 5);
4. an actor step: advantage-weighted regression with weights from the target critics and
   the V just updated (eq. 7), folding the extensions' actor_loss phase;
5. a Q step towards r + gamma (1 - terminated) V(s'), with the V just updated (eq. 6),
   folding the extensions' on_target and critic_loss phases;
6. the Polyak update of the target critics;

then the loop's update counter and the extensions' post_update fold. Every `log_frequency`
gradient steps the loop evaluates the policy's mean action on `num_episode_test` episodes
in the environment, with the critics' value bias.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from ajax.agents.IQL.core import awr_policy_loss, awr_weight, polyak, q_loss, value_loss, value_target
from ajax.agents.IQL.networks import TanhMeanGaussianActor
from ajax.agents.IQL.state import IQLConfig, IQLState
from ajax.agents.loop import (
    ActorCriticLogs,
    RunSettings,
    TrainLoop,
    actor_step,
    critic_step,
    gradient_step,
    offline_collector,
)
from ajax.buffers.dataset import Dataset
from ajax.evaluate import EvalPolicy
from ajax.extensions import ExtensionStack
from ajax.networks.actor_critic import QEnsemble, ValueCritic
from ajax.networks.encoders import encoded
from ajax.networks.optim import new_train_state
from ajax.state import EnvironmentConfig, NetworkConfig, OptimizerConfig


@struct.dataclass
class PolicyAuxiliaries:
    policy_loss: jax.Array
    advantage_weight: jax.Array  # the mean clipped weight exp(beta (Q - V))
    actor_grad_norm: jax.Array


@struct.dataclass
class ValueAuxiliaries:
    critic_loss: jax.Array
    q_mean: jax.Array
    critic_grad_norm: jax.Array
    value_loss: jax.Array
    v_mean: jax.Array
    value_grad_norm: jax.Array


def make_train(
    *,
    env_args: EnvironmentConfig,
    network_args: NetworkConfig,
    actor_optimizer_args: OptimizerConfig,
    critic_optimizer_args: OptimizerConfig,
    value_optimizer_args: OptimizerConfig,
    agent_config: IQLConfig,
    dataset: Dataset,
    extensions: ExtensionStack,
    run: RunSettings,
):
    config = agent_config
    encoder, parts = network_args.encoder, env_args.observation_parts  # each network behind its own encoder
    actor = encoded(TanhMeanGaussianActor(network_args.actor_architecture, env_args.action_dim), encoder, parts)
    critic = encoded(QEnsemble(network_args.critic_architecture, n=2), encoder, parts)
    value_network = encoded(ValueCritic(network_args.critic_architecture), encoder, parts)
    obs_example = env_args.observation_zeros(1)
    action_example = jnp.zeros((1, env_args.action_dim))

    def init(key: jax.Array) -> IQLState:
        rng, actor_key, critic_key, value_key, eval_key = jax.random.split(key, 5)
        return IQLState(
            rng=rng,
            actor_state=new_train_state(actor, actor_key, actor_optimizer_args, obs_example),
            critic_state=new_train_state(
                critic, critic_key, critic_optimizer_args, obs_example, action_example, with_target=True
            ),
            collector_state=offline_collector(dataset),
            eval_rng=eval_key,
            n_updates=jnp.zeros((), jnp.int32),
            n_logs=jnp.zeros((), jnp.int32),
            value_state=new_train_state(value_network, value_key, value_optimizer_args, obs_example),
        )

    def update(state: IQLState) -> tuple[IQLState, ActorCriticLogs]:
        state, (sample_key,) = state.next_keys(1)
        batch = state.collector_state.buffer_state.sample(sample_key, config.batch_size)
        # Q'(s, a) at the dataset's own actions only: IQL never evaluates an unseen action.
        target_q = critic.apply(state.critic_state.target_params, batch.obs, batch.action)

        def expectile_regression(params):
            v = value_network.apply(params, batch.obs)
            return value_loss(target_q, v, config.expectile), jnp.mean(v)

        value_state, v_loss, v_mean, v_norm = gradient_step(state.value_state, expectile_regression)

        v = value_network.apply(value_state.params, batch.obs)
        weight = awr_weight(target_q, v, config.beta, config.max_weight)

        def advantage_weighted_regression(params):
            return awr_policy_loss(weight, actor.apply(params, batch.obs).log_prob(batch.action)), ()

        actor_state, policy_loss, _, actor_norm, actor_metrics = actor_step(
            state.actor_state, advantage_weighted_regression, batch, state, extensions
        )

        next_v = value_network.apply(value_state.params, batch.next_obs)
        target = value_target(batch.reward, batch.terminated, next_v, config.gamma)

        def td_loss(params, target):
            q = critic.apply(params, batch.obs, batch.action)
            return q_loss(q, target), jnp.mean(q)

        critic_state, critic_loss, q_mean, critic_norm, critic_metrics = critic_step(
            state.critic_state, td_loss, target, batch, state, extensions
        )
        critic_state = critic_state.replace(
            target_params=polyak(critic_state.target_params, critic_state.params, config.tau)
        )
        aux = ActorCriticLogs(
            policy=PolicyAuxiliaries(policy_loss, jnp.mean(weight), actor_norm),
            value=ValueAuxiliaries(critic_loss, q_mean, critic_norm, v_loss, v_mean, v_norm),
            extensions={**actor_metrics, **critic_metrics},
        )
        return state.replace(actor_state=actor_state, critic_state=critic_state, value_state=value_state), aux

    def greedy(state: IQLState, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        pi = actor.apply(state.actor_state.params, obs)
        return pi.mode(), pi.entropy()

    def min_q(state: IQLState, obs: jax.Array, action: jax.Array) -> jax.Array:
        return jnp.min(critic.apply(state.critic_state.params, obs, action), axis=0)

    loop = TrainLoop.create(env_args, run, extensions, EvalPolicy(greedy, min_q, config.gamma))
    updated = loop.updated(update)

    def iteration(state: IQLState) -> tuple[IQLState, ActorCriticLogs]:
        collector = state.collector_state
        return updated(state.replace(collector_state=collector.replace(timestep=collector.timestep + 1)))

    return loop.train(init, iteration, run.end_timestep - run.start_timestep, steps_per_iteration=1)
