"""A research feature as an extension: an action-magnitude penalty in SAC's actor loss.

CONTRIBUTING.md ("Writing an extension") walks through it. The extension implements one
phase, `actor_loss`, reads the batch's observations (declared in `batch_fields`) and logs
its term under its own name at every evaluation.
"""

from dataclasses import dataclass
from typing import ClassVar

import jax.numpy as jnp

from ajax import SAC
from ajax.extensions import Extension
from ajax.extensions.cloning import deterministic_action
from ajax.logging.wandb_logging import LoggingConfig


@dataclass(frozen=True)
class ActionPenalty(Extension):
    """weight * E||mu(s)||^2: keeps the actor's torques small, for a plant that wears."""

    batch_fields: ClassVar[frozenset[str]] = frozenset({"obs"})

    weight: float = 0.1

    def actor_loss(self, ctx, agent_state, ext_state, batch, actor_params):
        action = deterministic_action(agent_state.actor_state, actor_params, batch.obs)
        penalty = jnp.mean(jnp.sum(jnp.square(action), axis=-1))
        return self.weight * penalty, {"penalty/action_square": penalty}


agent = SAC("Pendulum-v1", learning_starts=250, extensions=(ActionPenalty(weight=0.1),))
_, evaluations = agent.train(seed=[0, 1], n_timesteps=500, logging_config=LoggingConfig(log_frequency=250))
print(sorted(key for key in evaluations if key.startswith("penalty/")))
print(evaluations["penalty/action_square"].shape)  # (seeds, evaluations)
