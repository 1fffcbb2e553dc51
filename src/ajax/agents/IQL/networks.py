"""IQL's policy as the paper's code builds it for locomotion: a Gaussian around a tanh mean."""

from __future__ import annotations

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp

from ajax.networks.mlp import MLP

# The paper's code clips the log standard deviation to [-5, 2] (its locomotion setting).
LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0


class TanhMeanGaussianActor(nn.Module):
    """N(tanh(mu(s)), diag(exp(log_std))^2), log_std a state-independent parameter.

    Kostrikov et al.'s code (`NormalTanhPolicy(state_dependent_std=False,
    tanh_squash_distribution=False)`) rather than SAC's tanh-squashed Gaussian: AWR
    maximises log pi(a|s) at the dataset's actions, and an expert that saturates its
    actuator stores actions at exactly +-1, where a squashed Gaussian's log-density is
    -inf. Here the density stays finite there, and the mean, the action taken at
    evaluation, lies in [-1, 1].
    """

    architecture: tuple[str, ...]
    action_dim: int

    @nn.compact
    def __call__(self, obs: jax.Array) -> distrax.Distribution:
        mean = jnp.tanh(nn.Dense(self.action_dim)(MLP(self.architecture)(obs)))
        log_std = jnp.clip(self.param("log_std", nn.initializers.zeros, (self.action_dim,)), LOG_STD_MIN, LOG_STD_MAX)
        return distrax.MultivariateNormalDiag(mean, jnp.exp(jnp.broadcast_to(log_std, mean.shape)))
