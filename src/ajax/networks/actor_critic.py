"""The policies and value functions the agents build on."""

from __future__ import annotations

from collections.abc import Callable

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from ajax.networks.distributions import PreTanhGaussian, Squash, StateDependentSquash
from ajax.networks.initializers import orthogonal
from ajax.networks.mlp import MLP, dense

LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0


class CategoricalActor(nn.Module):
    """A softmax policy over `n_actions`."""

    architecture: tuple[str, ...]
    n_actions: int
    hidden_init: Callable = orthogonal(np.sqrt(2))
    head_init: Callable = orthogonal(0.01)
    head_bias_init: Callable = nn.initializers.zeros

    @nn.compact
    def __call__(self, obs: jax.Array) -> distrax.Distribution:
        head = nn.Dense(self.n_actions, kernel_init=self.head_init, bias_init=self.head_bias_init)
        logits = head(MLP(self.architecture, self.hidden_init)(obs))
        return distrax.Categorical(logits=logits)


class GaussianActor(nn.Module):
    """A diagonal Gaussian with a state-independent log standard deviation (PPO's)."""

    architecture: tuple[str, ...]
    action_dim: int
    hidden_init: Callable = orthogonal(np.sqrt(2))
    head_init: Callable = orthogonal(0.01)
    head_bias_init: Callable = nn.initializers.zeros

    @nn.compact
    def __call__(self, obs: jax.Array) -> distrax.Distribution:
        head = nn.Dense(self.action_dim, kernel_init=self.head_init, bias_init=self.head_bias_init)
        mean = head(MLP(self.architecture, self.hidden_init)(obs))
        log_std = self.param("log_std", nn.initializers.zeros, (self.action_dim,))
        return distrax.MultivariateNormalDiag(mean, jnp.exp(jnp.broadcast_to(log_std, mean.shape)))


class TanhGaussianActor(nn.Module):
    """tanh of a diagonal Gaussian whose deviation the network outputs: Brax PPO's policy.

    The head gives loc and a pre-softplus scale x for each action; scale = softplus(x) +
    `min_std` (Brax's NormalTanhDistribution, min_std 0.001). Sampled and scored before the
    tanh (`PreTanhGaussian`).
    """

    architecture: tuple[str, ...]
    action_dim: int
    hidden_init: Callable = orthogonal(np.sqrt(2))
    head_init: Callable = orthogonal(0.01)
    head_bias_init: Callable = nn.initializers.zeros
    min_std: float = 0.001

    @nn.compact
    def __call__(self, obs: jax.Array) -> PreTanhGaussian:
        head = nn.Dense(2 * self.action_dim, kernel_init=self.head_init, bias_init=self.head_bias_init)
        loc, raw_scale = jnp.split(head(MLP(self.architecture, self.hidden_init)(obs)), 2, axis=-1)
        return PreTanhGaussian(loc, jax.nn.softplus(raw_scale) + self.min_std)


class SquashedGaussianActor(nn.Module):
    """tanh of a state-dependent diagonal Gaussian: SAC's policy (Haarnoja et al. 2018, App. C)."""

    architecture: tuple[str, ...]
    action_dim: int
    normalize_features: bool = False

    @nn.compact
    def __call__(self, obs: jax.Array) -> Squash:
        hidden = MLP(self.architecture, normalize_features=self.normalize_features)(obs)
        mean = nn.Dense(self.action_dim)(hidden)
        log_std = jnp.clip(nn.Dense(self.action_dim)(hidden), LOG_STD_MIN, LOG_STD_MAX)
        return Squash(distrax.Normal(mean, jnp.exp(log_std)))


class StateDependentNoiseActor(nn.Module):
    """SAC's actor with generalised state-dependent exploration (gSDE, arXiv:2005.05719).

    The noise scales sigma are parameters (features x actions, from `log_std_init`), and the
    features z(s) are the last hidden layer's, trained through the variance as
    Stable-Baselines3 trains them. The mean is kept in (-2, 2) before tanh as there, but by
    2 tanh(mu / 2) rather than a hard clip: a mean pushed past the hard clip gets no gradient
    back (one seed in three of the best-action probe froze at tanh(2) = 0.96).
    """

    architecture: tuple[str, ...]
    action_dim: int
    log_std_init: float = -3.0
    clip_mean: float = 2.0

    @nn.compact
    def __call__(self, obs: jax.Array) -> StateDependentSquash:
        features = MLP(self.architecture)(obs)
        mean = self.clip_mean * jnp.tanh(nn.Dense(self.action_dim)(features) / self.clip_mean)
        log_std = self.param(
            "log_std", nn.initializers.constant(self.log_std_init), (features.shape[-1], self.action_dim)
        )
        return StateDependentSquash(mean, features, jnp.exp(log_std))


class DeterministicActor(nn.Module):
    """a = tanh(f(s)): a deterministic policy in the agent's [-1, 1] units (TD3's)."""

    architecture: tuple[str, ...]
    action_dim: int

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        return jnp.tanh(nn.Dense(self.action_dim)(MLP(self.architecture)(obs)))


class ValueCritic(nn.Module):
    """V(s)."""

    architecture: tuple[str, ...]
    hidden_init: Callable = orthogonal(np.sqrt(2))
    head_bias_init: Callable = nn.initializers.zeros

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        hidden = MLP(self.architecture, self.hidden_init)(obs)
        return nn.Dense(1, kernel_init=orthogonal(1.0), bias_init=self.head_bias_init)(hidden).squeeze(-1)


class QCritic(nn.Module):
    """Q(s, a) for continuous actions: the action joins the observation at the input.

    `outputs` gives that many values on a last axis (TQC's quantiles of the return) instead of one value.
    """

    architecture: tuple[str, ...]
    normalize_features: bool = False
    outputs: int | None = None

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        hidden = MLP(self.architecture, normalize_features=self.normalize_features)(
            jnp.concatenate([obs, action], axis=-1)
        )
        if self.outputs is None:
            return nn.Dense(1)(hidden).squeeze(-1)
        return nn.Dense(self.outputs)(hidden)


def critic_ensemble(critic: type[nn.Module], n: int) -> type[nn.Module]:
    """`n` independent copies of `critic` as one module: each its own parameters (stacked on axis 0,
    drawn from split keys), all reading the same inputs, their outputs stacked on axis 0: one
    batched forward instead of `n` small ones."""
    return nn.vmap(
        critic,
        variable_axes={"params": 0},
        split_rngs={"params": True},
        in_axes=None,
        out_axes=0,
        axis_size=n,
    )


class QEnsemble(nn.Module):
    """`n` independent Q(s, a) critics as one vmapped network; output axis 0 is the critic."""

    architecture: tuple[str, ...]
    n: int = 2
    outputs: int | None = None

    @nn.compact
    def __call__(self, obs: jax.Array, action: jax.Array) -> jax.Array:
        return critic_ensemble(QCritic, self.n)(self.architecture, outputs=self.outputs)(obs, action)


class DiscreteQNetwork(nn.Module):
    """Q(s, .) over `n_actions` discrete actions.

    `dueling` splits the head into a state value and advantages, Q(s, a) = V(s) + A(s, a) -
    mean_a' A(s, a') (Wang et al. 2016, arXiv:1511.06581, eq. 9): V learns from every action's
    update, and subtracting the mean makes the split identifiable. `fan_in_uniform` starts
    every layer, the head's too, as Torch's default does (DQN's).
    """

    architecture: tuple[str, ...]
    n_actions: int
    layer_norm: bool = False
    dueling: bool = False
    fan_in_uniform: bool = False

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        features = MLP(self.architecture, layer_norm=self.layer_norm, fan_in_uniform=self.fan_in_uniform)(obs)
        head = lambda n: dense(n, features.shape[-1], nn.initializers.lecun_normal(), self.fan_in_uniform)(features)  # noqa: E731
        if not self.dueling:
            return head(self.n_actions)
        value, advantage = head(1), head(self.n_actions)
        return value + advantage - jnp.mean(advantage, axis=-1, keepdims=True)


def chosen_q(q_values: jax.Array, action: jax.Array) -> jax.Array:
    """Q(s, a) for the taken discrete actions, from a DiscreteQNetwork's Q(s, .)."""
    return jnp.take_along_axis(q_values, action[..., None].astype(jnp.int32), axis=-1).squeeze(-1)
