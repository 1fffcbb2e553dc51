"""Networks with memory: encoder -> memory -> head, run over sequences with episode starts.

An agent's feed-forward actor or critic becomes the head of a `Recurrent` network: the
encoder (the agent's architecture) reads each observation, a reset-aware `Memory` carries
what it saw through the episode, and the head maps the memory's output as it mapped the
encoder's. Acting is the sequence run with T = 1, so what an agent does at collection is
what it trains on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
from flax import struct

from ajax.networks.encoders import as_read
from ajax.networks.memory import Memory, MemoryConfig, initial_carry
from ajax.networks.mlp import MLP
from ajax.state import ObservationPart


class Recurrent(nn.Module):
    """`head(memory(encoder(obs)))` over a (T, B) sequence; a reset at t zeroes the carry first.

    `skip` hands the head the observation beside the memory's output, so a replay agent's
    feed-forward actor or critic keeps reading what it sees now and gains a summary of what
    it saw before. Arguments after the resets go to the head: a Q-critic's actions.

    `image_encoder` reads each observation as stored (`parts`) before the layers: the memory
    then carries image features, and `skip` hands the head those features, not the pixels.
    """

    architecture: tuple[str, ...]
    memory: MemoryConfig
    head: nn.Module
    hidden_init: Callable = nn.initializers.lecun_normal()
    skip: bool = False
    image_encoder: nn.Module | None = None
    parts: tuple[ObservationPart, ...] | None = None

    def setup(self) -> None:
        self.encoder = MLP(self.architecture, self.hidden_init)
        self.core = Memory(self.memory)

    def remember(self, carry: Any, obs: Any, resets: jax.Array) -> tuple[Any, jax.Array]:
        """The carry after the sequence and the features the head reads at each step."""
        seen = obs if self.image_encoder is None else self.image_encoder(as_read(obs, self.parts))
        carry, outputs = self.core(carry, self.encoder(seen), resets)
        if self.skip:
            outputs = jnp.concatenate([outputs, jnp.asarray(seen, outputs.dtype)], axis=-1)
        return carry, outputs

    def read(self, features: jax.Array, *args: Any) -> Any:
        """The head on features `remember` made."""
        return self.head(features, *args)

    def __call__(self, carry: Any, obs: jax.Array, resets: jax.Array, *args: Any) -> tuple[Any, Any]:
        carry, features = self.remember(carry, obs, resets)
        return carry, self.read(features, *args)


@struct.dataclass
class MemoryCarries:
    """What collection carries for a recurrent agent: each network's carry, per env copy.

    `episode_start[i]` says the env's last observation begins an episode, so the next step
    zeroes the carries before reading it: termination and truncation alike.
    """

    carries: dict[str, Any]
    episode_start: jax.Array


def fresh_carries(memory: MemoryConfig, names: tuple[str, ...], n_envs: int) -> MemoryCarries:
    """Zero carries for `names` and every env at an episode's start."""
    return MemoryCarries({name: initial_carry(memory, n_envs) for name in names}, jnp.ones((n_envs,), bool))
