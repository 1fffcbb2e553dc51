"""Classical controllers for the classic-control tasks: experts to learn from, baselines to beat.

Each is a JAX function of a batch of raw observations that returns actions in the env's
own units, the form `expert_policy=` and the expert-guidance extensions take. They are the
controllers Ajax's tests, benchmarks and learning checks learn from.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def cartpole_push(obs: jax.Array) -> jax.Array:
    """CartPole-v1: push the cart towards where the pole is falling (angle + 0.5 angular
    velocity > 0: right). Holds the pole for all 500 steps."""
    return (obs[..., 2] + 0.5 * obs[..., 3] > 0).astype(jnp.int32)


def pendulum_pd(obs: jax.Array) -> jax.Array:
    """Pendulum-v1: a PD law on the angle from upright, u = -(2 theta + 0.5 theta_dot) in [-2, 2].

    It holds the pendulum near the top but cannot swing it up from below: a weak expert, at a
    random policy's return on average.
    """
    theta = jnp.arctan2(obs[..., 1], obs[..., 0])
    return jnp.clip(-(2.0 * theta + 0.5 * obs[..., 2]), -2.0, 2.0)[..., None]


def pendulum_swing_up(obs: jax.Array) -> jax.Array:
    """Pendulum-v1: energy pumping far from the top, a PD stabiliser near it, blended by the height.

    With E = theta_dot^2 / 2 + 15 (cos theta - 1) (0 upright at rest), gymnax's dynamics give
    dE/dt = 3 u theta_dot, so u = -0.1 E theta_dot drives E to 0; the weight
    ((1 + cos theta) / 2)^4 hands over to u = -(10 theta + 2 theta_dot) near the top.
    """
    cos, sin, theta_dot = obs[..., 0], obs[..., 1], obs[..., 2]
    theta = jnp.arctan2(sin, cos)
    energy = 0.5 * theta_dot**2 + 15.0 * (cos - 1.0)
    height = ((1.0 + cos) / 2.0) ** 4
    torque = height * -(10.0 * theta + 2.0 * theta_dot) + (1.0 - height) * (-0.1 * energy * theta_dot)
    return jnp.clip(torque, -2.0, 2.0)[..., None]
