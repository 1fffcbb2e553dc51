"""PID error terms: the observation followed by the error, its running sum and its difference.

A PID controller acts on three numbers per error: e_t, the sum of e over the episode so far
and the change e_t - e_{t-1}. `PIDTerms` computes them in the env, so a feed-forward
network reads them as part of its observation: a PID actor (`ajax.modules.PIDPolicy`)
needs no memory of its own, and the critics, which see the same observation, keep a Markov
state. The sum includes the current step and restarts at every reset; the difference is
zero at an episode's first step, so no derivative kick carries over from the last episode.

    env = PIDTerms(ModelReferenceWrapper(pendulum, reference, model, pendulum_angle))
    obs, state = env.reset(key, env.default_params)  # [e, u_prev, e, sum e, delta e]

The step adds no `stop_gradient`: gradients flow through the terms as through the wrapped
env's step (`ajax.environments.differentiable.with_gradients` reaches the plant through
`.env`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import environment, spaces

from ajax.wrappers import Wrapper

__all__ = ["PIDTerms", "PIDTermsState", "advance_terms", "first_entry"]


def first_entry(obs: Any) -> jax.Array:
    """The observation's first entry, as a vector of one: a `ModelReferenceWrapper` task's e = r - y."""
    return jnp.ravel(jax.tree.leaves(obs)[0])[:1]


def advance_terms(
    integral: jax.Array, previous: jax.Array, error: jax.Array, start: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """The sum and the difference once `error` is seen: both restart where `start` (an episode's
    first step), the sum at the error itself, the difference at zero.

    The one convention of Ajax's PIDs: the env's terms here and `ajax.modules.PIDHead`'s.
    """
    integral = jnp.where(start, 0.0, integral) + error
    derivative = error - jnp.where(start, error, previous)
    return integral, derivative


@struct.dataclass
class PIDTermsState:
    """The wrapped env's state, the error's sum over the episode so far and its last value."""

    env_state: Any
    integral: jax.Array
    previous: jax.Array


class PIDTerms(Wrapper):
    """Append [e_t, sum_{s<=t} e_s, e_t - e_{t-1}] to `env`'s flattened observation.

    `error_fn(obs) -> (n,)` reads the n errors from the wrapped env's observation (default:
    `first_entry`, the tracking error of a model-reference task). The observation grows by
    3n entries, the error terms last, in the order all errors, all sums, all differences.
    """

    def __init__(self, env: environment.Environment, error_fn: Callable[[Any], jax.Array] | None = None):
        super().__init__(env)
        self.error_fn = first_entry if error_fn is None else error_fn
        self._inner_size, self.n_errors, self._dtype = _check_error_fn(env, self.error_fn)

    @property
    def reset_policy(self) -> dict[str, Any] | None:
        # An inner restart would return the wrapped env's state, without the terms' sum.
        inner = super().reset_policy
        return None if inner is None else {**inner, "restart": None}

    def observation_space(self, params: Any) -> spaces.Box:
        inner = self.env.observation_space(params)
        if isinstance(inner, spaces.Box):
            shape = tuple(inner.shape)
            low = jnp.broadcast_to(jnp.asarray(inner.low, jnp.float32), shape).reshape(-1)
            high = jnp.broadcast_to(jnp.asarray(inner.high, jnp.float32), shape).reshape(-1)
        else:
            low, high = jnp.full((self._inner_size,), -jnp.inf), jnp.full((self._inner_size,), jnp.inf)
        unbounded = jnp.full((3 * self.n_errors,), jnp.inf)
        size = self._inner_size + 3 * self.n_errors
        return spaces.Box(jnp.concatenate([low, -unbounded]), jnp.concatenate([high, unbounded]), (size,), jnp.float32)

    def _error(self, obs: Any) -> jax.Array:
        return jnp.reshape(jnp.asarray(self.error_fn(obs), self._dtype), (self.n_errors,))

    def _observe(self, obs: Any, error: jax.Array, integral: jax.Array, derivative: jax.Array) -> jax.Array:
        flat = [jnp.ravel(leaf).astype(self._dtype) for leaf in jax.tree.leaves(obs)]
        return jnp.concatenate([*flat, error, integral, derivative])

    def reset_env(self, key: jax.Array, params: Any) -> tuple[jax.Array, PIDTermsState]:
        obs, env_state = self.env.reset_env(key, params)
        error = self._error(obs)
        integral, derivative = advance_terms(jnp.zeros_like(error), jnp.zeros_like(error), error, jnp.asarray(True))
        state = PIDTermsState(env_state=env_state, integral=integral, previous=error)
        return self._observe(obs, error, integral, derivative), state

    def step_env(self, key: jax.Array, state: PIDTermsState, action: Any, params: Any):
        obs, env_state, reward, terminated, info = self.env.step_env(key, state.env_state, action, params)
        error = self._error(obs)
        integral, derivative = advance_terms(state.integral, state.previous, error, jnp.asarray(False))
        state = PIDTermsState(env_state=env_state, integral=integral, previous=error)
        return self._observe(obs, error, integral, derivative), state, reward, terminated, info

    def is_truncated(self, state: PIDTermsState, params: Any) -> jax.Array:
        return self.env.is_truncated(state.env_state, params)


def _check_error_fn(env: environment.Environment, error_fn: Callable[[Any], jax.Array]) -> tuple[int, int, Any]:
    """(the wrapped observation's size, the number of errors, the terms' dtype), or a refusal now.

    A bad error_fn would otherwise fail, or broadcast silently, inside the compiled step.
    """
    if not callable(error_fn):
        raise TypeError(f"PIDTerms needs error_fn(obs) -> (n,) errors, got {type(error_fn).__name__}.")
    obs, _ = jax.eval_shape(env.reset_env, jax.random.PRNGKey(0), env.default_params)
    name = getattr(error_fn, "__name__", type(error_fn).__name__)
    try:
        error = jax.eval_shape(error_fn, obs)
    except Exception as failure:
        raise ValueError(
            f"PIDTerms' error_fn {name} failed on {env.name}'s observation ({type(failure).__name__}: {failure}). "
            "It takes one observation, unbatched, and returns the errors to control."
        ) from failure
    shapes = {tuple(leaf.shape) for leaf in jax.tree.leaves(obs)}
    if not isinstance(error, jax.ShapeDtypeStruct) or error.ndim > 1 or error.size < 1:
        got = error.shape if isinstance(error, jax.ShapeDtypeStruct) else type(error).__name__
        raise ValueError(
            f"PIDTerms' error_fn {name} must return a scalar or a vector of errors for one observation "
            f"(of shape {', '.join(map(str, sorted(shapes)))}), got {got}. For one error return obs[:1] or a scalar."
        )
    if not jnp.issubdtype(error.dtype, jnp.floating) and not jnp.issubdtype(error.dtype, jnp.integer):
        raise ValueError(f"PIDTerms' error_fn {name} must return numbers, got dtype {error.dtype}.")
    inner_size = sum(math.prod(leaf.shape) for leaf in jax.tree.leaves(obs))
    dtype = jnp.result_type(error.dtype, *(leaf.dtype for leaf in jax.tree.leaves(obs)), jnp.float32)
    return int(inner_size), int(error.size), dtype
