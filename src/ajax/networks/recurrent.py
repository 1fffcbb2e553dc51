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

from ajax.networks.memory import Memory, MemoryConfig, initial_carry
from ajax.networks.mlp import MLP


class Recurrent(nn.Module):
    """`head(memory(encoder(obs)))` over a (T, B) sequence; a reset at t zeroes the carry first."""

    architecture: tuple[str, ...]
    memory: MemoryConfig
    head: nn.Module
    hidden_init: Callable = nn.initializers.lecun_normal()

    @nn.compact
    def __call__(self, carry: Any, obs: jax.Array, resets: jax.Array) -> tuple[Any, Any]:
        features = MLP(self.architecture, self.hidden_init)(obs)
        carry, outputs = Memory(self.memory)(carry, features, resets)
        return carry, self.head(outputs)


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
