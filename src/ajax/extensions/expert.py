"""Extensions that hold an expert, and `ImitationLoss`.

An expert is written in env units. The agent binds each extension to its environment at
construction (`Extension.bind`): an `ExpertExtension` then reads its `expert_fields`
through `ExpertInAgentUnits`, refusing a stateful expert, which these phases would call
on replayed observations without the state it needs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from ajax.environments.obs_norm import raw_observation
from ajax.environments.utils import ExpertInAgentUnits, require_stateless
from ajax.extensions.base import Extension, ExtensionContext, check_fields
from ajax.extensions.cloning import cloning_loss, deterministic_action
from ajax.state import EnvironmentConfig


def ensemble_min(critic_state: Any, params: Any, obs: jax.Array, action: jax.Array) -> jax.Array:
    """min_i Q_i(s, a) over the agent's critic ensemble (members on axis 0) under `params`.

    A distributional critic's Q is the mean of its quantiles (TQC's, on a last axis); SimbaV2's
    categorical critics give their expected values through their `apply_fn` already.
    """
    q = critic_state.apply_fn(params, obs, action)
    if q.ndim == action.ndim + 1:
        q = jnp.mean(q, axis=-1)
    return jnp.min(q, axis=0)


@dataclass(frozen=True)
class ExpertExtension(Extension):
    """An extension whose `expert_fields` hold experts; `env` is set when an agent binds it."""

    expert_fields: ClassVar[tuple[str, ...]] = ("expert",)
    env: EnvironmentConfig | None = dataclasses.field(default=None, kw_only=True)

    def bind(self, env_args: EnvironmentConfig) -> ExpertExtension:
        if not env_args.continuous:
            raise ValueError(
                f"{self.name} clones continuous actions; {env_args.env.name} is discrete. Use it with a continuous "
                "agent on a Box-action env."
            )
        experts = {}
        for name in self.expert_fields:
            expert = getattr(self, name)
            if not isinstance(expert, ExpertInAgentUnits):
                require_stateless(expert, self.name)
                expert = ExpertInAgentUnits.for_env(expert, env_args, f"{self.name}'s {name}")
            experts[name] = expert
        return dataclasses.replace(self, env=env_args, **experts)

    def expert_action(self, agent_state: Any, obs: jax.Array, name: str = "expert") -> jax.Array:
        """The expert's action in agent units on the env's raw observation behind `obs`."""
        return getattr(self, name)(raw_observation(agent_state.collector_state.normalizer, obs))


@dataclass(frozen=True)
class ImitationLoss(ExpertExtension):
    """weight * E ||mu(s) - a_expert(s)||^2 added to every actor step, on the step's batch.

    Keeps pulling the actor towards the expert's actions while it also maximises its own
    objective; `weight` trades the two (1.0: the actor's loss and the imitation term at par).
    """

    batch_fields: ClassVar[frozenset[str]] = frozenset({"obs"})

    expert: Any = None
    weight: float = 1.0

    def __post_init__(self) -> None:
        if self.expert is None:
            raise TypeError("ImitationLoss needs an expert: ImitationLoss(expert_fn).")
        check_fields(self, intervals={"weight": "[0, inf)"})

    def actor_loss(
        self, ctx: ExtensionContext, agent_state: Any, ext_state: Any, batch: Any, actor_params: Any
    ) -> tuple[jax.Array, dict[str, jax.Array]]:
        expert = self.expert_action(agent_state, batch.obs)
        loss = cloning_loss(agent_state.actor_state, actor_params, batch.obs, expert)
        return self.weight * loss, {"imitation/loss": jnp.asarray(loss)}


@dataclass(frozen=True)
class ExpertValueMetrics(ExpertExtension):
    """The critic's view of the expert, at every evaluation, on the states the collector stands in.

    Logs `expert_value/q_expert` (the critics' mean Q(s, a_expert)), `expert_value/q_policy`
    (the same at the actor's deterministic action) and their difference
    `expert_value/advantage`: positive while the critic still rates the expert's action above
    the agent's own. For agents with an actor and Q-critics (SAC, TD3, REDQ, ASAC, AVG).
    """

    expert: Any = None

    def __post_init__(self) -> None:
        if self.expert is None:
            raise TypeError("ExpertValueMetrics needs an expert: ExpertValueMetrics(expert_fn).")

    def eval_metrics(self, ctx: ExtensionContext, agent_state: Any, ext_state: Any) -> dict[str, jax.Array]:
        obs = agent_state.collector_state.last_obs
        critic, actor = agent_state.critic_state, agent_state.actor_state
        q_expert = jnp.mean(critic.apply_fn(critic.params, obs, self.expert_action(agent_state, obs)))
        q_policy = jnp.mean(critic.apply_fn(critic.params, obs, deterministic_action(actor, actor.params, obs)))
        return {
            "expert_value/q_expert": q_expert,
            "expert_value/q_policy": q_policy,
            "expert_value/advantage": q_expert - q_policy,
        }
