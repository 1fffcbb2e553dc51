"""The behaviour function pi(a | s, c) of Srivastava et al. 2019: a policy conditioned on a command."""

from __future__ import annotations

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp

from ajax.networks.mlp import ACTIVATIONS, MLP, parse_architecture

# Bounds on the continuous head's log standard deviation: maximum likelihood on nearly
# identical stored actions would otherwise shrink it without limit.
LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0


class CommandConditionedPolicy(nn.Module):
    """pi(a | s, c), the observation and the scaled command joined by a multiplicative gate.

    Srivastava et al. combine the two through multiplicative interactions: the first hidden
    layer is act(W_s s) * sigmoid(W_c c), its width and activation the architecture's first
    layer; the architecture's remaining layers follow. The head is a softmax over discrete
    actions, or a diagonal Gaussian with a state- and command-dependent standard deviation.
    """

    architecture: tuple[str, ...]
    action_dim: int
    continuous: bool

    @nn.compact
    def __call__(self, obs: jax.Array, command: jax.Array) -> distrax.Distribution:
        (width, activation), *_ = parse_architecture(self.architecture)
        gate = ACTIVATIONS[activation](nn.Dense(width)(obs)) * nn.sigmoid(nn.Dense(width)(command))
        hidden = MLP(self.architecture[2:])(gate)
        if not self.continuous:
            return distrax.Categorical(logits=nn.Dense(self.action_dim)(hidden))
        mean = nn.Dense(self.action_dim)(hidden)
        log_std = jnp.clip(nn.Dense(self.action_dim)(hidden), LOG_STD_MIN, LOG_STD_MAX)
        return distrax.MultivariateNormalDiag(mean, jnp.exp(log_std))
