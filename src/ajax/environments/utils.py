"""Environment helpers: the map between agent units and env units, space queries.

Every continuous agent acts in [-1, 1]. Each env step maps the action onto the env's box
(`agent_action_to_env`), so an agent reaches the whole range whatever the bounds, and
replay stores the agent's own action. An expert written in env units is read through the
inverse map (`env_action_to_agent`), left unclipped so a saturating expert stays visible.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from ajax.state import EnvironmentConfig


def agent_action_to_env(action: jax.Array, low: jax.Array, high: jax.Array) -> jax.Array:
    """c + h * clip(a, -1, 1), with c the box's centre and h its half-width."""
    centre, half_width = (high + low) / 2.0, (high - low) / 2.0
    return centre + half_width * jnp.clip(action, -1.0, 1.0)


def env_action_to_agent(action: jax.Array, low: jax.Array, high: jax.Array) -> jax.Array:
    """(a - c) / h: the inverse of `agent_action_to_env`, unclipped."""
    centre, half_width = (high + low) / 2.0, (high - low) / 2.0
    return (action - centre) / half_width


def action_bounds(env_args: EnvironmentConfig) -> tuple[jax.Array, jax.Array]:
    return (
        jnp.asarray(env_args.action_low, jnp.float32),
        jnp.asarray(env_args.action_high, jnp.float32),
    )


def to_env_action(action: jax.Array, env_args: EnvironmentConfig) -> jax.Array:
    """The action an env's step receives: mapped onto the box, or the discrete index."""
    if not env_args.continuous:
        return action
    return agent_action_to_env(action, *action_bounds(env_args))


def uniform_action(key: jax.Array, env_args: EnvironmentConfig, n: int) -> jax.Array:
    """`n` actions drawn uniformly over the agent's action space (warm-up)."""
    if env_args.continuous:
        return jax.random.uniform(key, (n, env_args.action_dim), minval=-1.0, maxval=1.0)
    return jax.random.randint(key, (n,), 0, env_args.action_dim)


def flatten_observation(obs: jax.Array, batch_dims: int = 1) -> jax.Array:
    """Agents read one flat vector per observation (image observations included)."""
    return obs.reshape(*obs.shape[:batch_dims], -1).astype(jnp.float32)


class StatefulExpert:
    """An expert that carries state between steps, such as a PID controller's integral.

    Subclass it (a frozen dataclass keeps it hashable): `init_state()` is one copy's state
    at an episode's start, `__call__(obs, state) -> (action, state)` answers one raw
    observation in env units and returns the state to hand back at the next step. The
    collector resets a copy's state when its episode ends.
    """

    def init_state(self) -> Any:
        raise NotImplementedError

    def __call__(self, obs: jax.Array, state: Any) -> tuple[jax.Array, Any]:
        raise NotImplementedError


@dataclass(frozen=True)
class ExpertInAgentUnits:
    """An expert written in env units, read in the agent's: (a - c) / h, unclipped.

    Built once at construction from the env's box, so replay, losses and extensions see one
    unit. Discrete envs' experts answer action indices, which pass through unchanged.
    """

    expert: Callable[..., Any]
    low: tuple[float, ...] = ()
    high: tuple[float, ...] = ()

    @classmethod
    def for_env(cls, expert: Callable[..., Any], env_args: EnvironmentConfig) -> ExpertInAgentUnits:
        if not callable(expert):
            raise TypeError(f"An expert is a function from raw observations to actions, got {type(expert).__name__}.")
        return cls(expert, env_args.action_low, env_args.action_high)

    @property
    def stateful(self) -> bool:
        return isinstance(self.expert, StatefulExpert)

    def _to_agent(self, action: jax.Array) -> jax.Array:
        if not self.low:
            return action
        low, high = jnp.asarray(self.low, jnp.float32), jnp.asarray(self.high, jnp.float32)
        return env_action_to_agent(jnp.asarray(action, jnp.float32).reshape(*action.shape[:-1], -1), low, high)

    def init_state(self, n: int) -> Any:
        """`n` copies of a stateful expert's initial state; () for a stateless expert."""
        if not self.stateful:
            return ()
        return jax.tree.map(lambda leaf: jnp.broadcast_to(leaf, (n, *jnp.shape(leaf))), self.expert.init_state())

    def act(self, obs: jax.Array, state: Any = ()) -> tuple[jax.Array, Any]:
        """The expert's actions in agent units for a batch of raw observations, and its next state."""
        if self.stateful:
            action, state = jax.vmap(self.expert)(obs, state)
            return self._to_agent(action), state
        return self._to_agent(self.expert(obs)), state

    def __call__(self, obs: jax.Array) -> jax.Array:
        """A stateless expert's actions in agent units (a stateful one needs `act` and its state)."""
        if self.stateful:
            raise TypeError(
                f"{type(self.expert).__name__} is a stateful expert: it needs its state at every step, which this "
                "use cannot give it. Pass a stateless expert (a function of the observation alone)."
            )
        return self._to_agent(self.expert(obs))


def require_stateless(expert: Callable[..., Any], user: str) -> None:
    """Refuse, at construction, a stateful expert where nothing can carry its state."""
    if isinstance(expert, StatefulExpert):
        raise TypeError(
            f"{user} calls its expert on single observations without a state, but {type(expert).__name__} is a "
            "stateful expert. Give it a stateless expert (a function of the observation alone)."
        )
