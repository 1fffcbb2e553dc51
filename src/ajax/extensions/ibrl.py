"""`IBRLTargets`: an expert's proposals beside the actor's, in the bootstrap and in acting.

Hu et al. 2023, "Imitation Bootstrapped Reinforcement Learning" (arXiv:2311.02198): an
imitation policy proposes an action beside the RL actor, and the critic picks. Its two
uses, both here with the expert as the imitation policy:

- the bootstrap proposal: the TD target bootstraps from the better of the two proposals at
  s', y = r + gamma max_{a' in {a_RL, a_IL}} Q'(s', a'), so the critic learns the expert's
  value where it exceeds the actor's instead of waiting for the actor to find it;
- the actor proposal: the executed action is the one the critic rates higher at s, so the
  agent follows the expert where the critic says the expert does better, and its replay
  (which stores the executed action) fills with those transitions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from ajax.extensions.base import ExtensionContext, check_fields
from ajax.extensions.expert import ExpertExtension, ensemble_min


def expert_bootstrap(reward: jax.Array, terminated: jax.Array, next_q_expert: jax.Array, gamma: float) -> jax.Array:
    """y_IL = r + gamma (1 - terminated) min_i Q'_i(s', a_expert(s')): the target from the expert's proposal.

    Only a true terminal stops the bootstrap: at a time limit s' is the final observation
    and the target bootstraps from it, as the agents' own targets do.
    """
    return reward + gamma * (1.0 - terminated.astype(jnp.float32)) * next_q_expert


def bootstrap_proposal(target: jax.Array, expert_target: jax.Array) -> tuple[jax.Array, jax.Array]:
    """max(y_RL, y_IL) and where the expert's won (strictly): IBRL's bootstrap proposal.

    With gamma (1 - terminated) >= 0, r + gamma (1 - terminated) max(Q'(s', a_RL), Q'(s', a_IL))
    is the max of the two targets, so the agent's own target is taken as it stands.
    """
    expert_won = expert_target > target
    return jnp.where(expert_won, expert_target, target), expert_won


def actor_proposal(action: jax.Array, expert_action: jax.Array, q_action: jax.Array, q_expert: jax.Array) -> jax.Array:
    """The expert's action where Q(s, a_expert) > Q(s, a), else the agent's: IBRL's greedy actor proposal.

    `action`, `expert_action`: (batch, action_dim); `q_action`, `q_expert`: (batch,). A tie
    keeps the agent's action.
    """
    return jnp.where((q_expert > q_action)[..., None], expert_action, action)


@dataclass(frozen=True)
class IBRLTargets(ExpertExtension):
    """IBRL's bootstrap proposal (on_target) and, with `act=True`, its actor proposal (action).

    on_target: y <- max(y, r + gamma (1 - terminated) min_i Q'_i(s', a_expert(s'))), with Q'
    the target critics and the minimum over the whole ensemble (SAC's and TD3's clipped
    double-Q). The agent's own y is kept as it is: for SAC (and REDQ, AVG) it is the soft
    target, entropy term included, so the result is the max of SAC's soft target and the
    expert's plain bootstrap; for TD3 it is the smoothed clipped double-Q target. REDQ's own
    target takes a random subset's minimum, against which the whole ensemble's is the more
    pessimistic. Logs `ibrl/expert_share`, the fraction of the batch where the expert's
    bootstrap won.

    gamma is the agent's own: `ActorCritic` writes its discount into
    `env_args.normalization.gamma` before binding extensions, and this extension reads it
    there (`discount`), so there is no second gamma to keep in step with the agent's. The
    expert's bootstrap is a discounted one: ASAC's differential target (r - rho, undiscounted)
    would meet a bootstrap without its -rho, which is not IBRL's; use it with discounted agents.

    action (`act=True`): the executed action is the expert's where min_i Q_i(s, a_expert) >
    min_i Q_i(s, a) under the online critics, `a` being what the agent's pipeline chose, and
    the agent's elsewhere; the replay stores the executed action. `act=False` removes the
    action phase from `phases`, so the stack never folds it and an agent that does not fold
    action accepts the extension.
    """

    batch_fields: ClassVar[frozenset[str]] = frozenset({"reward", "next_obs", "terminated"})

    expert: Any = None
    act: bool = True

    def __post_init__(self) -> None:
        if self.expert is None:
            raise TypeError("IBRLTargets needs an expert: IBRLTargets(expert_fn).")
        check_fields(self, flags=("act",))

    @property
    def phases(self) -> frozenset[str]:
        """on_target, and action only with `act=True`: `act` decides whether the action phase is folded."""
        return super().phases if self.act else super().phases - {"action"}

    @property
    def discount(self) -> float:
        """The agent's gamma, read from the environment config the agent bound this extension to."""
        return self.env.normalization.gamma

    def on_target(
        self, ctx: ExtensionContext, agent_state: Any, ext_state: Any, batch: Any, target: jax.Array
    ) -> tuple[jax.Array, dict[str, jax.Array]]:
        critic = agent_state.critic_state
        next_expert = self.expert_action(agent_state, batch.next_obs)
        next_q_expert = ensemble_min(critic, critic.target_params, batch.next_obs, next_expert)
        expert_target = expert_bootstrap(batch.reward, batch.terminated, next_q_expert, self.discount)
        target, expert_won = bootstrap_proposal(target, expert_target)
        return target, {"ibrl/expert_share": jnp.mean(expert_won.astype(jnp.float32))}

    def action(
        self, ctx: ExtensionContext, agent_state: Any, ext_state: Any, obs: jax.Array, action: jax.Array
    ) -> jax.Array:
        critic = agent_state.critic_state
        expert = self.expert_action(agent_state, obs)
        q_action = ensemble_min(critic, critic.params, obs, action)
        q_expert = ensemble_min(critic, critic.params, obs, expert)
        return actor_proposal(action, expert, q_action, q_expert)
