"""Closed-loop rollouts to back-propagate through: the ground analytic policy gradients stand on.

gymnax 1.0.1 detaches each transition's next state from its inputs unless the env
implements differentiable transitions and is asked for them (`with_transition_gradients()`).
Of the ids Ajax routes to gymnax, five do: Pendulum-v1, MountainCarContinuous-v0,
PointRobot-misc, Reacher-misc and Swimmer-misc. CartPole, Acrobot and MountainCar keep
their `stop_gradient`, and the other envs have no gradient to give.

Within a rollout an episode that ends is reset by gymnax's auto-reset, a `select` between
the stepped and the freshly drawn state: the gradient flows through the branch taken, so
nothing after a reset depends on the actions before it, and within an episode everything
does.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import environment

from ajax.state import ENV_AXIS

DIFFERENTIABLE_IDS = (
    "Pendulum-v1",
    "MountainCarContinuous-v0",
    "PointRobot-misc",
    "Reacher-misc",
    "Swimmer-misc",
)

# (observations (N, D), the policy's carry, episode starts (N,)) -> (actions (N, A), carry)
ClosedLoopPolicy = Callable[[jax.Array, Any, jax.Array], tuple[jax.Array, Any]]


def supports_gradients(env: environment.Environment) -> bool:
    """Whether `env`, or the env its wrappers wrap, implements differentiable transitions."""
    if getattr(env, "supports_transition_gradients", False):
        return True
    inner = getattr(env, "env", None)
    return inner is not None and supports_gradients(inner)


def with_gradients(env: environment.Environment) -> environment.Environment:
    """`env` with its transitions differentiable, through any wrappers around the env that has them.

    Refuses, naming the ids that have them, an env whose transitions cut the gradient.
    """
    if getattr(env, "supports_transition_gradients", False):
        return env.with_transition_gradients()
    inner = getattr(env, "env", None)
    if inner is None or not supports_gradients(inner):
        name = getattr(env, "name", type(env).__name__)
        raise ValueError(
            f"{name} has no differentiable transitions, so no gradient can flow through its steps. "
            f"gymnax's envs with them: {', '.join(DIFFERENTIABLE_IDS)} (or a wrapper around one)."
        )
    wrapper = copy.copy(env)
    wrapper.env = with_gradients(inner)
    return wrapper


@struct.dataclass
class Rollout:
    """A closed-loop rollout, time-major (T, N, ...)."""

    obs: Any  # what the policy read at each step (a dict's parts by key, when kept apart)
    action: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    episode_start: jax.Array  # whether the observation began an episode


@struct.dataclass
class LoopState:
    """Where a closed loop stands between rollouts: each copy's env, observation and policy carry."""

    env_state: Any
    obs: Any
    carry: Any
    episode_start: jax.Array


def start_loop(
    env: environment.Environment, env_params: Any, key: jax.Array, n_envs: int, carry: Any = ()
) -> LoopState:
    """`n_envs` freshly reset copies, each at an episode's start, with the policy's carry."""
    reset = jax.vmap(env.reset, in_axes=(0, None), axis_name=ENV_AXIS)
    obs, env_state = reset(jax.random.split(key, n_envs), env_params)
    return LoopState(env_state, obs, carry, jnp.ones((n_envs,), bool))


def closed_loop_rollout(
    env: environment.Environment,
    env_params: Any,
    policy: ClosedLoopPolicy,
    loop: LoopState,
    key: jax.Array,
    horizon: int,
    observe: Callable[[Any], Any] = lambda obs: obs,
) -> tuple[LoopState, Rollout]:
    """`horizon` steps of every copy under `policy`, differentiable wherever `env` is.

    Actions are in the env's own units. The policy sees each step's episode starts, so a
    policy with memory can reset its carry when an episode ends. `observe` turns the env's
    observations into the form `loop.obs` holds and the policy reads (an agent's flat vector,
    or its kept parts), so a dict observation's carry keeps one structure through the scan.
    """
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None), axis_name=ENV_AXIS)
    n_envs = jax.tree.leaves(loop.obs)[0].shape[0]

    def one(loop: LoopState, key: jax.Array) -> tuple[LoopState, Rollout]:
        action, carry = policy(loop.obs, loop.carry, loop.episode_start)
        obs, env_state, reward, terminated, truncated, _ = step(
            jax.random.split(key, n_envs), loop.env_state, action, env_params
        )
        terminated = jnp.asarray(terminated, bool)
        truncated = jnp.asarray(truncated, bool) & ~terminated
        record = Rollout(loop.obs, action, jnp.asarray(reward), terminated, truncated, loop.episode_start)
        return LoopState(env_state, observe(obs), carry, terminated | truncated), record

    return jax.lax.scan(one, loop, jax.random.split(key, horizon))
