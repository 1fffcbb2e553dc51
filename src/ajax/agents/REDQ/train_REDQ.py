"""REDQ on the shared off-policy loop: an update-to-data ratio of G with a 10-critic ensemble.

Each tick (one environment step per env) makes G critic updates, each on a fresh
minibatch, towards a target from a random subset of M target critics, with a Polyak
update after each; then one actor and one temperature step, on the last minibatch,
against the mean of all N critics. The N critics are one vmapped network and the G
updates one `lax.scan` over minibatches drawn together.
"""

from __future__ import annotations

from typing import Any

import jax

from ajax.agents.loop import RunSettings
from ajax.agents.REDQ.core import ensemble_mean_q, random_subset, subset_min_target, subset_parameters
from ajax.agents.REDQ.state import REDQConfig
from ajax.agents.SAC.state import SoftACState
from ajax.agents.SAC.train_SAC import AuxiliaryLogs, SoftActorCritic
from ajax.buffers import ReplayBuffer
from ajax.buffers.sequence import SequenceReplay, SequenceStep
from ajax.environments.interaction import Transition
from ajax.perf_utils import final_aux_scan


def sample_minibatches(
    buffer: ReplayBuffer | SequenceReplay, buffer_state: Any, key: jax.Array, n: int
) -> Transition | SequenceStep:
    """`n` independent minibatches, stacked on axis 0: one fresh minibatch per critic update."""
    return jax.vmap(lambda key: buffer.sample(buffer_state, key))(jax.random.split(key, n))


def make_train(*, agent_config: REDQConfig, run: RunSettings, **settings: Any):
    sac = SoftActorCritic(config=agent_config, **settings)
    config = agent_config

    def subset_target_parameters(params: Any, indices: jax.Array) -> Any:
        """The subset's target critics; with memory or an image encoder they share that trunk, and only
        the heads form the ensemble."""
        if sac.memory is None and sac.network_args.encoder is None:
            return subset_parameters(params, indices)
        inner = params["params"]
        return {**params, "params": {**inner, "head": subset_parameters(inner["head"], indices)}}

    def critic_update(state: SoftACState, batch: Transition | SequenceStep):
        state, (next_key, subset_key) = state.next_keys(2)
        trained = sac.reader.trained(batch)
        next_action, next_log_prob = sac.next_policy(state, batch).sample_and_log_prob(seed=next_key)
        indices = random_subset(subset_key, config.n_critics, config.subset_size)
        subset = subset_target_parameters(state.critic_state.target_params, indices)
        subset_next_q = sac.next_q_values(subset, batch, next_action, n=config.subset_size)
        target = subset_min_target(
            trained.reward, trained.terminated, subset_next_q, next_log_prob, sac.alpha(state), config.gamma
        )
        critic_state, value_aux, metrics = sac.critic_update(state, batch, target)
        return state.replace(critic_state=critic_state), (value_aux, metrics)

    def update(state: SoftACState, transition: Transition):
        del transition  # REDQ learns from replay; the loop has already stored the step
        state, (sample_key, actor_key) = state.next_keys(2)
        batches = sample_minibatches(sac.buffer, state.collector_state.buffer_state, sample_key, config.utd_ratio)
        state, (value_aux, critic_metrics) = final_aux_scan(critic_update, state, batches)

        last = jax.tree.map(lambda x: x[-1], batches)
        mean_q = lambda action: ensemble_mean_q(sac.q_values(state.critic_state.params, last, action))  # noqa: E731
        state, policy_aux, temperature_aux, actor_metrics = sac.actor_update(state, last, actor_key, mean_q)
        return state, AuxiliaryLogs(policy_aux, value_aux, temperature_aux, {**critic_metrics, **actor_metrics})

    return sac.loop(run, sac.init, update, ensemble_mean_q)
