"""PQN on the shared on-policy loop: an epsilon-greedy rollout, Q(lambda) returns, then epochs of
minibatch regressions of Q(s, a) on them, with no replay buffer and no target network."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from ajax.agents.DQN.train_DQN import ValueAuxiliaries
from ajax.agents.loop import RunSettings, TrainLoop, gradient_step
from ajax.agents.PQN.core import q_lambda_returns
from ajax.agents.PQN.state import PQNConfig
from ajax.buffers.packed import index_action
from ajax.environments.interaction import Transition, epsilon_greedy, explore_pipeline, init_collector
from ajax.evaluate import greedy_q_evaluation
from ajax.extensions import ExtensionStack
from ajax.networks.actor_critic import DiscreteQNetwork, chosen_q
from ajax.networks.encoders import encoded
from ajax.networks.optim import new_train_state
from ajax.perf_utils import final_aux_scan
from ajax.schedule import at, linear
from ajax.shuffle import take_rows
from ajax.state import BaseAgentState, CollectorState, EnvironmentConfig, NetworkConfig, OptimizerConfig


@struct.dataclass
class AuxiliaryLogs:
    value: ValueAuxiliaries


def make_train(
    *,
    env_args: EnvironmentConfig,
    network_args: NetworkConfig,
    critic_optimizer_args: OptimizerConfig,
    agent_config: PQNConfig,
    extensions: ExtensionStack,
    run: RunSettings,
):
    config = agent_config
    q_network = encoded(
        DiscreteQNetwork(network_args.critic_architecture, env_args.action_dim, layer_norm=True),
        network_args.encoder,
        env_args.observation_parts,
        masked=env_args.action_masked,
    )
    epsilon = linear(
        config.exploration_initial_eps,
        config.exploration_final_eps,
        int(config.exploration_fraction * run.total_timesteps),
    )
    rollout_size = config.n_steps * env_args.n_envs
    batch_size = rollout_size // config.n_minibatches

    def init(key: jax.Array) -> BaseAgentState:
        rng, q_key, env_key, eval_key = jax.random.split(key, 4)
        return BaseAgentState(
            rng=rng,
            actor_state=None,
            critic_state=new_train_state(q_network, q_key, critic_optimizer_args, env_args.observation_zeros(1)),
            collector_state=init_collector(env_key, env_args),
            eval_rng=eval_key,
            n_updates=jnp.zeros((), jnp.int32),
            n_logs=jnp.zeros((), jnp.int32),
        )

    def q_values(state: BaseAgentState, obs: jax.Array) -> jax.Array:
        return q_network.apply(state.critic_state.params, obs)

    def update(state: BaseAgentState, rollout: Transition, start: CollectorState):
        del start  # a feed-forward PQN needs nothing from the rollout's start
        bootstrap = jnp.max(q_values(state, rollout.next_obs), axis=-1)
        returns = q_lambda_returns(
            rollout.reward, bootstrap, rollout.terminated, rollout.truncated, config.gamma, config.q_lambda
        )
        rows = {"obs": rollout.obs, "action": rollout.action, "target": returns}
        flat = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), rows)

        def minibatch_step(critic_state, batch):
            obs, action, target = batch["obs"], batch["action"], batch["target"]

            def loss(params):
                q = q_network.apply(params, obs)
                q_taken = chosen_q(q, action)
                return 0.5 * jnp.mean(jnp.square(q_taken - target)), jnp.mean(q_taken)

            critic_state, value_loss, q_mean, norm = gradient_step(critic_state, loss)
            return critic_state, (value_loss, q_mean, norm)

        def epoch(critic_state, key):
            permutation = jax.random.permutation(key, rollout_size)
            # the action's index, exact in float32, is gathered with the floats: one gather an epoch
            shuffled = take_rows(flat, permutation, exact_in_float=index_action(continuous=False))
            minibatches = jax.tree.map(lambda x: x.reshape(config.n_minibatches, batch_size, *x.shape[1:]), shuffled)
            return final_aux_scan(minibatch_step, critic_state, minibatches)

        state, (shuffle_key,) = state.next_keys(1)
        critic_state, (value_loss, q_mean, norm) = final_aux_scan(
            epoch, state.critic_state, jax.random.split(shuffle_key, config.n_epochs)
        )
        aux = AuxiliaryLogs(ValueAuxiliaries(value_loss, q_mean, norm, at(epsilon, state.collector_state.timestep)))
        return state.replace(critic_state=critic_state), aux

    loop = TrainLoop.create(env_args, run, extensions, greedy_q_evaluation(q_values, config.gamma))
    return loop.on_policy(
        init,
        update,
        config.n_steps,
        explore_pipeline(epsilon_greedy(epsilon, env_args.action_masked), q_values, env_args),
    )
