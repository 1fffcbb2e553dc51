"""TQC on the shared off-policy loop: SAC's update with distributional critics and a truncated target.

SAC's parts (collection, warm-up, expert and gSDE, memory, the actor and temperature steps,
the extensions' folds) are SAC's own; TQC's critic is an ensemble of `n_critics` networks of
`n_quantiles` outputs, trained with the quantile Huber loss towards the truncated mixture.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import flax.linen as nn
import jax

from ajax.agents.loop import RunSettings
from ajax.agents.recurrent import replay_network
from ajax.agents.SAC.state import SoftACState
from ajax.agents.SAC.train_SAC import AuxiliaryLogs, SoftActorCritic
from ajax.agents.TQC.core import mean_atom, quantile_huber_loss, tqc_target, truncated_atoms
from ajax.agents.TQC.state import TQCConfig
from ajax.environments.interaction import Transition
from ajax.networks.actor_critic import QEnsemble


@dataclass(frozen=True)
class QuantileActorCritic(SoftActorCritic):
    """SAC's parts with critics of `n_quantiles` outputs each, trained by quantile regression."""

    config: TQCConfig

    def critic(self, n: int | None = None) -> nn.Module:
        head = QEnsemble(
            self.network_args.critic_architecture,
            n=self.config.n_critics if n is None else n,
            outputs=self.config.n_quantiles,
        )
        return replay_network(head, self.memory, self.network_args.encoder, self.env_args.observation_parts)

    @staticmethod
    def critic_loss(quantiles: jax.Array, target: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Quantile regression of every critic on the kept atoms; and the mean atom."""
        return quantile_huber_loss(quantiles, target), mean_atom(quantiles).mean()


def make_train(*, agent_config: TQCConfig, run: RunSettings, **settings: Any):
    tqc = QuantileActorCritic(config=agent_config, **settings)
    config = agent_config

    def update(state: SoftACState, transition: Transition):
        del transition  # TQC learns from replay; the loop has already stored the step
        state, (sample_key, next_key, actor_key) = state.next_keys(3)
        batch = tqc.sample(state, sample_key)
        trained = tqc.reader.trained(batch)

        next_action, next_log_prob = tqc.next_policy(state, batch).sample_and_log_prob(seed=next_key)
        next_quantiles = tqc.next_q_values(state.critic_state.target_params, batch, next_action)
        atoms = truncated_atoms(next_quantiles, config.drop_per_critic)
        target = tqc_target(trained.reward, trained.terminated, atoms, next_log_prob, tqc.alpha(state), config.gamma)
        critic_state, value_aux, critic_metrics = tqc.critic_update(state, batch, target)

        state = state.replace(critic_state=critic_state)
        mean_q = lambda action: mean_atom(tqc.q_values(critic_state.params, batch, action))  # noqa: E731
        state, policy_aux, temperature_aux, actor_metrics = tqc.actor_update(state, batch, actor_key, mean_q)
        return state, AuxiliaryLogs(policy_aux, value_aux, temperature_aux, {**critic_metrics, **actor_metrics})

    return tqc.loop(run, tqc.init, update, mean_atom)
