"""APG's controller with a history: encoder -> memory -> dense -> PID -> tanh, over (T, B) sequences.

A controller that acts inside a differentiable closed loop is a sequence model run one
step at a time: its action changes the next observation, so a rollout cannot be read in
parallel, and the gradient reaches every earlier step through both the plant and the
carry. The carry therefore lives in the collector between updates, cut from the graph
there, and a reset zeroes it where an episode starts, in the memory and in the PID's sum.

With `memory` a transformer of the paper's sizes and `pid_head` on, this is the contextual
controller of Busetto et al. (2024, arXiv:2411.06482): the transformer reads the tracking
error and the previous input of the whole episode so far, infers which system of the class
it is driving, and its output passes through a PID layer with learned gains.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from ajax.modules.pid import PIDHead, initial_pid_carry
from ajax.networks.memory import Memory, MemoryConfig, initial_carry
from ajax.networks.mlp import MLP


class ClosedLoopController(nn.Module):
    """tanh(PID(W memory(MLP(obs)))) with the memory and the PID optional; actions in [-1, 1].

    `__call__(carry, obs (T, B, D), resets (T, B)) -> (carry, actions (T, B, action_dim))`.

    The output layer starts at zero, so training starts from the open loop u = 0. A
    transformer's stream ends in a LayerNorm, and a default-initialised layer on it drives
    the plant with random inputs of order one; back-propagated through 100 steps of a
    swinging pendulum, that start left one to three seeds in six of a small contextual
    controller no better than untrained, where the zeroed start trained all twelve tried
    (tests/agents/test_apg.py). DreamerV3 zeroes its output layers for the same reason.
    """

    architecture: tuple[str, ...]
    action_dim: int
    memory: MemoryConfig | None = None
    pid_head: bool = False

    @nn.compact
    def __call__(self, carry: dict[str, Any], obs: jax.Array, resets: jax.Array) -> tuple[dict[str, Any], jax.Array]:
        x = MLP(self.architecture)(obs)
        after = {}
        if self.memory is not None:
            after["memory"], x = Memory(self.memory)(carry["memory"], x, resets)
        # Zeroed, so the untrained controller is u = 0: see the class docstring.
        x = nn.Dense(self.action_dim, kernel_init=nn.initializers.zeros, name="output")(x)
        if self.pid_head:
            after["pid"], x = PIDHead(self.action_dim)(carry["pid"], x, resets)
        return after, jnp.tanh(x)


def initial_controller_carry(controller: ClosedLoopController, batch_size: int) -> dict[str, Any]:
    """The carry of `batch_size` loops at an episode's start."""
    carry = {}
    if controller.memory is not None:
        carry["memory"] = initial_carry(controller.memory, batch_size)
    if controller.pid_head:
        carry["pid"] = initial_pid_carry(batch_size, controller.action_dim)
    return carry
