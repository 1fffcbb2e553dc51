"""REDQ on the shared off-policy loop: an update-to-data ratio of G with a 10-critic ensemble.

Each tick (one environment step per env) makes G critic updates, each on a fresh
minibatch, towards a target from a random subset of M target critics, with a Polyak
update after each; then one actor and one temperature step, on the last minibatch,
against the mean of all N critics. The N critics are one vmapped network and the G
updates one `lax.scan` over minibatches drawn together.
"""

from __future__ import annotations

import jax
from flax import struct

from ajax.agents.loop import RunSettings
from ajax.agents.REDQ.core import ensemble_mean_q, random_subset, subset_min_target, subset_parameters
from ajax.agents.REDQ.state import REDQConfig
from ajax.agents.SAC.state import SoftACState
from ajax.agents.SAC.train_SAC import AuxiliaryLogs, SoftActorCritic
from ajax.buffers import ReplayBuffer
from ajax.environments.interaction import Transition
from ajax.extensions import ExtensionStack
from ajax.perf_utils import final_aux_scan
from ajax.state import EnvironmentConfig, NetworkConfig, OptimizerConfig


def sample_minibatches(buffer: ReplayBuffer, buffer_state: struct.PyTreeNode, key: jax.Array, n: int) -> Transition:
    """`n` independent minibatches, stacked on axis 0: one fresh minibatch per critic update."""
    return jax.vmap(lambda key: buffer.sample(buffer_state, key))(jax.random.split(key, n))


def make_train(
    *,
    env_args: EnvironmentConfig,
    network_args: NetworkConfig,
    actor_optimizer_args: OptimizerConfig,
    critic_optimizer_args: OptimizerConfig,
    agent_config: REDQConfig,
    extensions: ExtensionStack,
    run: RunSettings,
):
    sac = SoftActorCritic(env_args, network_args, actor_optimizer_args, critic_optimizer_args, agent_config, extensions)
    config = agent_config
    ensemble, subset = sac.critic(), sac.critic(config.subset_size)

    def critic_update(state: SoftACState, batch: Transition):
        state, (next_key, subset_key) = state.next_keys(2)
        next_action, next_log_prob = sac.policy(state, batch.next_obs).sample_and_log_prob(seed=next_key)
        indices = random_subset(subset_key, config.n_critics, config.subset_size)
        subset_next_q = subset.apply(
            subset_parameters(state.critic_state.target_params, indices), batch.next_obs, next_action
        )
        target = subset_min_target(
            batch.reward, batch.terminated, subset_next_q, next_log_prob, sac.alpha(state), config.gamma
        )
        critic_state, value_aux, metrics = sac.critic_update(state, batch, target)
        return state.replace(critic_state=critic_state), (value_aux, metrics)

    def update(state: SoftACState, transition: Transition):
        del transition  # REDQ learns from replay; the loop has already stored the step
        state, (sample_key, actor_key) = state.next_keys(2)
        batches = sample_minibatches(sac.buffer, state.collector_state.buffer_state, sample_key, config.utd_ratio)
        state, (value_aux, critic_metrics) = final_aux_scan(critic_update, state, batches)

        last = jax.tree.map(lambda x: x[-1], batches)
        mean_q = lambda obs, action: ensemble_mean_q(ensemble.apply(state.critic_state.params, obs, action))  # noqa: E731
        state, policy_aux, temperature_aux, actor_metrics = sac.actor_update(state, last, actor_key, mean_q)
        return state, AuxiliaryLogs(policy_aux, value_aux, temperature_aux, {**critic_metrics, **actor_metrics})

    return sac.loop(run, sac.init, update, sac.value(ensemble_mean_q))
