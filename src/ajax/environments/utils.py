"""Environment helpers: the map between agent units and env units, space queries.

Every continuous agent acts in [-1, 1]. Each env step maps the action onto the env's box
(`agent_action_to_env`), so an agent reaches the whole range whatever the bounds, and
replay stores the agent's own action. An expert written in env units is read through the
inverse map (`env_action_to_agent`), left unclipped so a saturating expert stays visible.
"""

from __future__ import annotations

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
