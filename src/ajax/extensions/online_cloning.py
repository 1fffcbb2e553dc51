"""`OnlineCloning`: behaviour cloning of an expert beside the actor's objective, behind the Q-filter.

Nair et al. 2018, "Overcoming Exploration in Reinforcement Learning with Demonstrations"
(arXiv:1709.10089), §4.2-4.3: the actor's step adds a behaviour-cloning loss L_BC, and the
Q-filter keeps a sample in L_BC only where the critic rates the demonstrated action above
the actor's, so the actor can outgrow a suboptimal demonstrator instead of being held to
it. The paper's demonstrations are recorded pairs (s_i, a_i); here the expert is a function
that answers on every replayed state, so a_i = a_expert(s_i) on the whole batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from ajax.extensions.base import ExtensionContext, check_fields
from ajax.extensions.cloning import deterministic_action
from ajax.extensions.expert import ExpertExtension, ensemble_min


def q_filtered_cloning_loss(
    action: jax.Array, expert_action: jax.Array, q_expert: jax.Array, q_policy: jax.Array, q_filter: bool
) -> tuple[jax.Array, jax.Array]:
    """L_BC = mean_i 1{Q(s_i, a_e(s_i)) > Q(s_i, mu(s_i))} ||mu(s_i) - a_e(s_i)||^2, and the kept fraction.

    The Q-filtered L_BC of Nair et al. 2018 (§4.3), averaged over the batch rather than
    summed so `weight` does not scale with the batch size. The filter is the indicator of a
    comparison, through which no gradient passes: the critic decides which states count but
    never pushes mu itself (the actor's own objective does that). Without the filter
    (`q_filter=False`) every sample is kept: plain online behaviour cloning (§4.2).
    `action`, `expert_action`: (batch, action_dim); `q_expert`, `q_policy`: (batch,).
    """
    if q_filter:
        keep = (q_expert > q_policy).astype(jnp.float32)
    else:
        keep = jnp.ones(q_expert.shape, jnp.float32)
    distance = jnp.sum(jnp.square(action - jax.lax.stop_gradient(expert_action)), axis=-1)
    return jnp.mean(keep * distance), jnp.mean(keep)


@dataclass(frozen=True)
class OnlineCloning(ExpertExtension):
    """weight * L_BC with the Q-filter (Nair et al. 2018, §4.3) added to every actor step.

    Unlike `ImitationLoss`, which pulls the actor to the expert everywhere, the Q-filter
    keeps a state in the loss only while the critic (the minimum over its ensemble, online
    parameters) rates the expert's action above the actor's deterministic one; once the
    actor beats the expert there, the state leaves the loss. `q_filter=False` drops the
    filter. Logs `online_cloning/loss` (the unweighted filtered loss) and
    `online_cloning/accepted` (the fraction of the batch the filter keeps). For agents with
    an actor and Q-critics that fold actor_loss (SAC, TD3, REDQ, ASAC, AVG).
    """

    batch_fields: ClassVar[frozenset[str]] = frozenset({"obs"})

    expert: Any = None
    weight: float = 1.0
    q_filter: bool = True

    def __post_init__(self) -> None:
        if self.expert is None:
            raise TypeError("OnlineCloning needs an expert: OnlineCloning(expert_fn).")
        check_fields(self, intervals={"weight": "[0, inf)"}, flags=("q_filter",))

    def actor_loss(
        self, ctx: ExtensionContext, agent_state: Any, ext_state: Any, batch: Any, actor_params: Any
    ) -> tuple[jax.Array, dict[str, jax.Array]]:
        critic = agent_state.critic_state
        expert = self.expert_action(agent_state, batch.obs)
        action = deterministic_action(agent_state.actor_state, actor_params, batch.obs)
        q_expert = ensemble_min(critic, critic.params, batch.obs, expert)
        q_policy = ensemble_min(critic, critic.params, batch.obs, action)
        loss, accepted = q_filtered_cloning_loss(action, expert, q_expert, q_policy, self.q_filter)
        return self.weight * loss, {"online_cloning/loss": loss, "online_cloning/accepted": accepted}
