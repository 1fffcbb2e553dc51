"""The PID actor: `actor_architecture=PIDPolicy(...)` makes an agent's policy a learned PID.

The agent's env gains `PIDTerms` (`ajax.environments.pid_terms`), so every observation
ends with [e, sum e, delta e] for the n errors `error_fn` picks; the actor's action mean is
u = K_P e + K_I sum e + K_D delta e (`PIDGains`), the gains being the actor's parameters,
started identity-like (K_P = I, K_I = K_D = 0). Three forms, one per kind of agent:

- deterministic, a = tanh(u): TD3's;
- squashed Gaussian, a = tanh(x), x ~ N(u, sigma): SAC's, REDQ's, ASAC's and AVG's;
- Gaussian, a ~ N(u, sigma): PPO's and APO's (the env clips the action to [-1, 1]).

sigma = exp(log_std) is one learned scale per action, independent of the state, started at
`exp(log_std_init)`: a PID's exploration is noise on its output, not a second network.
With `residual`, an MLP of that architecture reads the whole observation and adds its
output, zero at the start, to u: a learned correction (feed-forward, gravity compensation)
on top of the PID, which the identity-like start leaves a pure P controller at first.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp

from ajax.environments.pid_terms import PIDTerms
from ajax.modules.pid import PIDGains
from ajax.networks.actor_critic import LOG_STD_MAX, LOG_STD_MIN
from ajax.networks.distributions import Squash
from ajax.networks.mlp import MLP, parse_architecture
from ajax.state import EnvironmentConfig

__all__ = [
    "FORMS",
    "DeterministicPIDActor",
    "GaussianPIDActor",
    "PIDMean",
    "PIDPolicy",
    "SquashedPIDActor",
    "pid_actor",
    "pid_terms_of",
]

# The actor forms an agent can ask for, by the shape of its policy.
FORMS = ("deterministic", "squashed", "gaussian")


@dataclass(frozen=True)
class PIDPolicy:
    """Settings of a PID actor, given as an agent's `actor_architecture`.

    - `error_fn(obs) -> (n,)`: the errors to control, read from the env's own observation
      (unbatched); None takes its first entry, a `ModelReferenceWrapper` task's e = r - y.
    - `log_std_init`: the stochastic forms' initial log standard deviation, in the agent's
      [-1, 1] action units (0.0: sigma = 1, as the agents' own actors start); TD3's
      deterministic actor takes none.
    - `residual`: an MLP architecture, e.g. ("32", "relu"), whose output is added to the
      PID's, zero at the start; () (the default) is the PID alone.
    """

    error_fn: Callable[[Any], jax.Array] | None = None
    log_std_init: float = 0.0
    residual: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.error_fn is not None and not callable(self.error_fn):
            raise TypeError(f"PIDPolicy's error_fn is a function obs -> errors, got {type(self.error_fn).__name__}.")
        number = isinstance(self.log_std_init, int | float) and not isinstance(self.log_std_init, bool)
        if not number or not math.isfinite(self.log_std_init):
            raise ValueError(f"PIDPolicy's log_std_init must be a finite number, got {self.log_std_init!r}.")
        if isinstance(self.residual, str):
            raise ValueError(
                f"PIDPolicy's residual is an architecture, a sequence such as ('32', 'relu'), got the string "
                f"{self.residual!r}."
            )
        parse_architecture(self.residual)
        object.__setattr__(self, "log_std_init", float(self.log_std_init))
        object.__setattr__(self, "residual", tuple(map(str, self.residual)))


class PIDMean(nn.Module):
    """u = PIDGains(e, sum e, delta e) from the observation's last 3n entries, plus the residual if any."""

    n_errors: int
    action_dim: int
    residual: tuple[str, ...] = ()

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        obs = jnp.asarray(obs, jnp.float32)
        n = self.n_errors
        terms = obs[..., obs.shape[-1] - 3 * n :]
        u = PIDGains(self.action_dim, name="gains")(terms[..., :n], terms[..., n : 2 * n], terms[..., 2 * n :])
        if self.residual:
            hidden = MLP(self.residual, name="residual")(obs)
            zeros = nn.initializers.zeros
            u = u + nn.Dense(self.action_dim, kernel_init=zeros, bias_init=zeros, name="residual_out")(hidden)
        return u


class DeterministicPIDActor(nn.Module):
    """a = tanh(u): TD3's form; at the identity-like start a = tanh(e)."""

    n_errors: int
    action_dim: int
    residual: tuple[str, ...] = ()

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        return jnp.tanh(PIDMean(self.n_errors, self.action_dim, self.residual, name="pid")(obs))


class SquashedPIDActor(nn.Module):
    """tanh(N(u, sigma)), sigma a learned state-independent scale: SAC's `Squash` type."""

    n_errors: int
    action_dim: int
    residual: tuple[str, ...] = ()
    log_std_init: float = 0.0

    @nn.compact
    def __call__(self, obs: jax.Array) -> Squash:
        mean = PIDMean(self.n_errors, self.action_dim, self.residual, name="pid")(obs)
        log_std = self.param("log_std", nn.initializers.constant(self.log_std_init), (self.action_dim,))
        std = jnp.exp(jnp.clip(jnp.broadcast_to(log_std, mean.shape), LOG_STD_MIN, LOG_STD_MAX))
        return Squash(distrax.Normal(mean, std))


class GaussianPIDActor(nn.Module):
    """N(u, sigma), sigma a learned state-independent scale: `GaussianActor`'s type (PPO's)."""

    n_errors: int
    action_dim: int
    residual: tuple[str, ...] = ()
    log_std_init: float = 0.0

    @nn.compact
    def __call__(self, obs: jax.Array) -> distrax.Distribution:
        mean = PIDMean(self.n_errors, self.action_dim, self.residual, name="pid")(obs)
        log_std = self.param("log_std", nn.initializers.constant(self.log_std_init), (self.action_dim,))
        return distrax.MultivariateNormalDiag(mean, jnp.exp(jnp.broadcast_to(log_std, mean.shape)))


def pid_terms_of(env: Any) -> PIDTerms:
    """The `PIDTerms` layer of an env (the outermost one), through any wrappers around it."""
    layer = env
    while layer is not None:
        if isinstance(layer, PIDTerms):
            return layer
        layer = getattr(layer, "env", None)
    raise ValueError(
        f"{getattr(env, 'name', type(env).__name__)} has no PIDTerms layer, which a PID actor reads its error terms "
        "from. Agents add it when actor_architecture is a PIDPolicy; outside an agent wrap the env in PIDTerms."
    )


def pid_actor(policy: PIDPolicy, env_args: EnvironmentConfig, form: str) -> nn.Module:
    """The PID actor of `form` ("deterministic", "squashed" or "gaussian") for `env_args`' env.

    The env must carry `PIDTerms` (the agents add it at construction), which sets n.
    """
    if form not in FORMS:
        raise ValueError(f"A PID actor's form is one of {FORMS}, got {form!r}.")
    n_errors = pid_terms_of(env_args.env).n_errors
    if form == "deterministic":
        return DeterministicPIDActor(n_errors, env_args.action_dim, policy.residual)
    actor = SquashedPIDActor if form == "squashed" else GaussianPIDActor
    return actor(n_errors, env_args.action_dim, policy.residual, policy.log_std_init)
