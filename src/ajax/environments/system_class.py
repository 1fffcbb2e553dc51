"""System classes: a distribution over an env's params, drawn afresh for every episode.

A controller trained on one Pendulum is tuned to that pendulum's mass and length. Training
it over a *class* of pendulums (each episode a different mass and length, the controller
never told which) asks it to work for all of them, as a meta-learned controller does (Busetto
et al. 2024, arXiv:2411.06482). A system class is the distribution; `SystemClassWrapper`
keeps each episode's draw in the env state, so every env copy and every episode, gymnax's
auto-resets included, runs its own system.

    env, params = gymnax.make("Pendulum-v1")
    env = SystemClassWrapper(env, UniformPerturbation(params, ("m", "l"), scale=0.2))
    SAC(env, env_params=env.default_params).train(seed=0, n_timesteps=100_000)
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment

from ajax.wrappers import Wrapper

__all__ = ["FixedSystem", "SystemClass", "SystemClassState", "SystemClassWrapper", "UniformPerturbation"]


class SystemClass(Protocol):
    """What `SystemClassWrapper` draws from: `sample(key)` returns the env's params type.

    A class may also have `params`, its nominal system; the wrapper's `default_params` is
    then that system, so a time limit set there is the one gymnax's step applies.
    """

    def sample(self, key: jax.Array) -> Any: ...


@dataclasses.dataclass(frozen=True, eq=False)
class FixedSystem:
    """The degenerate class: one system, so a wrapped env behaves as the bare one.

    Useful as the baseline of an experiment over system classes: the same wrapper, the same
    state layout, only the distribution changes.
    """

    params: Any

    def sample(self, key: jax.Array) -> Any:
        del key
        return self.params


@dataclasses.dataclass(frozen=True, eq=False)
class UniformPerturbation:
    """Each named field scaled by its own factor 1 + u, u ~ U(-scale, scale), per sample.

    A relative perturbation keeps every field's units and sign, so one `scale` fits a mass
    of 1 kg and a time step of 0.05 s alike; `scale < 1` keeps every factor positive, so
    no mass or length can reach zero.
    """

    params: Any
    fields: tuple[str, ...]
    scale: float

    def __init__(self, params: Any, fields: Iterable[str] | str, scale: float):
        names = (fields,) if isinstance(fields, str) else tuple(dict.fromkeys(fields))
        _check_fields(params, names)
        if not 0.0 <= scale < 1.0:  # also refuses NaN
            raise ValueError(
                f"UniformPerturbation needs 0 <= scale < 1, got {scale}: each field is scaled by a factor in "
                "[1 - scale, 1 + scale], which must stay positive. Pass e.g. scale=0.2 for +-20%."
            )
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "fields", names)
        object.__setattr__(self, "scale", float(scale))

    def sample(self, key: jax.Array) -> Any:
        keys = jax.random.split(key, len(self.fields))
        factors = {
            name: 1.0 + jax.random.uniform(k, minval=-self.scale, maxval=self.scale)
            for name, k in zip(self.fields, keys, strict=True)
        }
        return self.params.replace(**{name: getattr(self.params, name) * f for name, f in factors.items()})


def _check_fields(params: Any, names: tuple[str, ...]) -> None:
    """Refuse, at construction, the field lists that would fail (or do nothing) inside a jitted sample."""
    if not dataclasses.is_dataclass(params) or isinstance(params, type):
        raise TypeError(
            f"UniformPerturbation needs an env's params instance (a flax struct dataclass such as the one "
            f"gymnax.make returns), got {type(params).__name__}."
        )
    if not names:
        raise ValueError(
            "UniformPerturbation needs at least one field to perturb; for a single system use FixedSystem(params)."
        )
    known = [f.name for f in dataclasses.fields(params)]
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ValueError(
                f"UniformPerturbation: {type(params).__name__} has no field {name!r}.{hint} "
                f"Its fields: {', '.join(known)}. Name fields from that list."
            )
        if not _is_float(getattr(params, name)):
            raise ValueError(
                f"UniformPerturbation scales float fields only, but {name!r} is "
                f"{type(getattr(params, name)).__name__} {getattr(params, name)!r}: a scaled integer (a step count, "
                "a flag) is no longer one. Drop it from fields, or change it by hand with params.replace(...)."
            )


def _is_float(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, float):
        return True
    dtype = getattr(value, "dtype", None)
    return dtype is not None and np.issubdtype(dtype, np.floating)


@struct.dataclass
class SystemClassState:
    """The wrapped env's state and the system this episode runs, drawn at its reset."""

    env_state: Any
    params: Any


class SystemClassWrapper(Wrapper):
    """Run each episode of `env` on a system drawn from `system_class` at its reset.

    The params an agent passes are ignored by the dynamics (the episode's own system is in
    the state) but still set the time limit and the spaces, so `episode_length=` and
    `env_params=` keep their meaning. Gradients flow through a step wherever the wrapped
    env lets them (`with_transition_gradients()`), to the action and to the episode's params.
    """

    def __init__(self, env: environment.Environment, system_class: SystemClass):
        super().__init__(env)
        self.system_class = system_class
        _check_sample_type(env, system_class)

    @property
    def default_params(self) -> Any:
        return getattr(self.system_class, "params", self.env.default_params)

    @property
    def reset_policy(self) -> dict[str, Any] | None:
        # An inner restart would return the inner env's state, without a drawn system; every
        # episode resets through reset_env instead, so each draws anew.
        inner = super().reset_policy
        return None if inner is None else {**inner, "restart": None}

    def reset_env(self, key: jax.Array, params: Any) -> tuple[Any, SystemClassState]:
        del params
        system_key, env_key = jax.random.split(key)
        system = jax.tree.map(jnp.asarray, self.system_class.sample(system_key))
        obs, env_state = self.env.reset_env(env_key, system)
        return obs, SystemClassState(env_state=env_state, params=system)

    def step_env(self, key: jax.Array, state: SystemClassState, action: Any, params: Any):
        del params
        obs, env_state, reward, terminated, info = self.env.step_env(key, state.env_state, action, state.params)
        return obs, state.replace(env_state=env_state), reward, terminated, info

    def is_truncated(self, state: SystemClassState, params: Any) -> jax.Array:
        return self.env.is_truncated(state.env_state, params)


def _check_sample_type(env: environment.Environment, system_class: SystemClass) -> None:
    """A sample of another params type fails deep inside the env's step; say so at construction."""
    if not callable(getattr(system_class, "sample", None)):
        raise TypeError(
            f"SystemClassWrapper needs a system class with sample(key) -> params, got {type(system_class).__name__}."
        )
    drawn = jax.eval_shape(system_class.sample, jax.random.PRNGKey(0))
    expected = type(env.default_params)
    if type(drawn) is not expected:
        raise TypeError(
            f"{type(system_class).__name__}.sample returns {_qualified(type(drawn))}, but {env.name} takes "
            f"{_qualified(expected)}: build the system class from the env's own params, e.g. "
            "UniformPerturbation(env.default_params, ...)."
        )


def _qualified(cls: type) -> str:
    """Every gymnax env names its params EnvParams; the module tells them apart."""
    return f"{cls.__module__}.{cls.__qualname__}"
