"""SimbaV2 on the shared off-policy loop: SAC's parts with hyperspherical networks, a
categorical critic and SimbaV2's order of updates.

The replay holds observations and rewards as the env gave them; each minibatch, and each
observation the policy acts on, is normalised with the statistics as they stand
(`ajax.environments.obs_norm`, `per_batch`). Each update, on one minibatch: the actor against the
critics as they stand, the temperature on the actor's log-probabilities, then the critics
towards the categorical target drawn with the updated actor and temperature, then the Polyak
target. Kernels go back on the sphere after each actor and critic step (SAC's `projected`);
the target is an average of projected kernels and is left as it is, as in the reference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from ajax.agents.loop import RunSettings
from ajax.agents.recurrent import replay_network
from ajax.agents.SAC.state import SoftACState
from ajax.agents.SAC.train_SAC import AuxiliaryLogs, SoftActorCritic
from ajax.agents.SimbaV2.core import categorical_loss, categorical_target, expected_value, support, temperature_loss
from ajax.agents.SimbaV2.state import SimbaV2Config
from ajax.environments.interaction import ActionPipeline, Transition
from ajax.environments.obs_norm import normalize_batch, normalize_observation, reward_scale
from ajax.evaluate import ValueEstimate
from ajax.networks.actor_critic import QEnsemble
from ajax.networks.hyperspherical import HypersphericalEnsemble, SimbaV2Network


@dataclass(frozen=True)
class ExpectedQ:
    """The critics as extensions read them (`critic_state.apply_fn`): each one's expected value,
    in scaled units, where the training reads the logits through `CategoricalActorCritic.critic`.
    A value-equal dataclass, so that two builds of one agent give one static pytree field."""

    critic: nn.Module
    n_atoms: int
    bound: float

    def __call__(self, params: Any, obs: jax.Array, action: jax.Array) -> jax.Array:
        return expected_value(self.critic.apply(params, obs, action), support(self.n_atoms, self.bound))


@dataclass(frozen=True)
class CategoricalActorCritic(SoftActorCritic):
    """SAC's parts with critics of `n_atoms` logits each over [-return_bound, return_bound]."""

    config: SimbaV2Config
    temperature_loss = staticmethod(temperature_loss)

    @property
    def atoms(self) -> jax.Array:
        return support(self.config.n_atoms, self.config.return_bound)

    def critic(self, n: int | None = None) -> nn.Module:
        """SimbaV2's hyperspherical critics, or with layer strings MLP critics with the same categorical head."""
        architecture, n = self.network_args.critic_architecture, self.config.n_critics if n is None else n
        if isinstance(architecture, SimbaV2Network):
            head = HypersphericalEnsemble(architecture, n, outputs=self.config.n_atoms)
        else:
            head = QEnsemble(architecture, n=n, outputs=self.config.n_atoms)
        return replay_network(head, self.memory, self.network_args.encoder, self.env_args.observation_parts)

    def init(self, key: jax.Array, state_class: type[SoftACState] = SoftACState, **fields: Any) -> SoftACState:
        state = super().init(key, state_class, **fields)
        reader = ExpectedQ(self.critic(), self.config.n_atoms, self.config.return_bound)
        return state.replace(critic_state=state.critic_state.replace(apply_fn=reader))

    @property
    def pipeline(self) -> ActionPipeline:
        """SAC's pipeline on the collector's raw observations, standardised as the statistics stand."""
        act, normalization = super().pipeline, self.env_args.normalization

        def normalized(state: SoftACState, obs: jax.Array, key: jax.Array) -> Any:
            return act(state, normalize_observation(state.collector_state.normalizer, obs, normalization), key)

        return normalized

    def sample(self, state: SoftACState, key: jax.Array) -> Transition:
        """A minibatch of raw transitions, normalised with the statistics as they stand."""
        batch = super().sample(state, key)
        normalizer, normalization = state.collector_state.normalizer, self.env_args.normalization
        obs, next_obs, reward = normalize_batch(normalizer, batch.obs, batch.next_obs, batch.reward, normalization)
        return batch.replace(obs=obs, next_obs=next_obs, reward=reward)

    def critic_loss(self, logits: jax.Array, target: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Every critic's cross-entropy to the target distribution; and the mean expected Q."""
        return categorical_loss(logits, target), jnp.mean(expected_value(logits, self.atoms))

    def value(self, reduce: Callable[[jax.Array], jax.Array]) -> ValueEstimate:
        """The critic's estimate in the env's units: scaled returns times the current reward scale."""
        normalization = self.env_args.normalization

        def estimate(state: SoftACState, obs: jax.Array, action: jax.Array) -> jax.Array:
            scaled = reduce(self.critic().apply(state.critic_state.params, obs, action))
            return scaled * reward_scale(state.collector_state.normalizer, normalization)

        return estimate

    def q_value(self, logits: jax.Array) -> jax.Array:
        """min_i E[Z_i]: the clipped double-Q estimate of the expected values, for the actor and evaluation."""
        return jnp.min(expected_value(logits, self.atoms), axis=0)


def make_train(*, agent_config: SimbaV2Config, run: RunSettings, **settings: Any):
    simba = CategoricalActorCritic(config=agent_config, **settings)
    config = agent_config

    def update(state: SoftACState, transition: Transition):
        del transition  # SimbaV2 learns from replay; the loop has already stored the step
        state, (sample_key, next_key, actor_key) = state.next_keys(3)
        batch = simba.sample(state, sample_key)
        trained = simba.reader.trained(batch)

        critic_params = state.critic_state.params
        q_value = lambda action: simba.q_value(simba.q_values(critic_params, batch, action))  # noqa: E731
        state, policy_aux, temperature_aux, actor_metrics = simba.actor_update(state, batch, actor_key, q_value)

        next_action, next_log_prob = simba.next_policy(state, batch).sample_and_log_prob(seed=next_key)
        next_logits = simba.next_q_values(state.critic_state.target_params, batch, next_action)
        entropy_term = simba.alpha(state) * next_log_prob
        target = categorical_target(
            trained.reward, trained.terminated, next_logits, simba.atoms, entropy_term, config.gamma
        )
        critic_state, value_aux, critic_metrics = simba.critic_update(state, batch, target)
        state = state.replace(critic_state=critic_state)
        return state, AuxiliaryLogs(policy_aux, value_aux, temperature_aux, {**critic_metrics, **actor_metrics})

    return simba.loop(run, simba.init, update, simba.q_value)
