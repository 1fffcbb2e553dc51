"""TD-MPC2's world model as functions of parameters: what the losses, the planner and acting read.

Apart from `train_TDMPC2.py` so that `losses.py` can take it without importing the training
program, and apart from `networks.py`, which the configuration (`state.py`) reads.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from ajax.agents.TDMPC2.core import pair_of, predict, squashed_gaussian, value_bins
from ajax.agents.TDMPC2.networks import WorldModel
from ajax.agents.TDMPC2.planner import LatentModel
from ajax.agents.TDMPC2.state import TDMPC2Config


class Networks:
    """The world model's parts as functions of the two train states' parameters, for one task (or `task`)."""

    def __init__(self, model: WorldModel, config: TDMPC2Config) -> None:
        self.model, self.config = model, config
        self.bins = value_bins(config.arch.num_bins, config.vmin, config.vmax)

    def apply(self, params: Any, method: Any, *args: Any, **kwargs: Any) -> Any:
        return self.model.apply({"params": params}, *args, method=method, **kwargs)

    def encode(self, params: Any, obs: jax.Array, task: jax.Array | None = None) -> jax.Array:
        return self.apply(params, WorldModel.encode, obs, task)

    def pi(self, params: Any, z: jax.Array, key: jax.Array, task: Any = None, action_mask: Any = None):
        """(action, mean action, log-prob, scaled entropy) of the policy prior at z."""
        raw = self.apply(params, WorldModel.pi, z, task)
        eps = jax.random.normal(key, (*z.shape[:-1], self.config.arch.action_dim))
        return squashed_gaussian(raw, eps, self.config.log_std_min, self.config.log_std_max, action_mask)

    def q_values(self, params: Any, z: jax.Array, action: jax.Array, task: Any = None, dropout: Any = None):
        """Every Q-function's value (num_q, ...), with dropout where a key is given."""
        if dropout is None:
            logits = self.apply(params, WorldModel.q, z, action, task)
        else:
            logits = self.apply(params, WorldModel.q, z, action, task, False, rngs={"dropout": dropout})
        return predict(logits, self.bins)

    def latent_model(self, params: Any, discount: Any, task: Any = None, action_mask: Any = None) -> LatentModel:
        """The planner's view of the model (no dropout, the online Q-functions)."""
        terminal = None
        if self.config.arch.episodic:
            terminal = lambda z: jax.nn.sigmoid(self.apply(params, WorldModel.termination, z, task))  # noqa: E731
        return LatentModel(
            next=lambda z, a: self.apply(params, WorldModel.next, z, a, task),
            reward=lambda z, a: predict(self.apply(params, WorldModel.reward, z, a, task), self.bins),
            pi=lambda z, key: self.pi(params, z, key, task, action_mask)[0],
            value=lambda z, a, key: jnp.mean(pair_of(self.q_values(params, z, a, task), key), 0),
            discount=discount,
            terminal=terminal,
            action_mask=action_mask,
        )
