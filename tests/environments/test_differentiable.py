"""Differentiable closed-loop rollouts: Pendulum's gradients by hand through one and two steps, a
finite-difference check of a closed-loop return, resets that cut the gradient exactly where an
episode ends, and envs without differentiable transitions refused."""

import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax.environments.differentiable import (
    DIFFERENTIABLE_IDS,
    closed_loop_rollout,
    start_loop,
    supports_gradients,
    with_gradients,
)
from ajax.wrappers import InitialStateWrapper

THETA, THETA_DOT = 0.3, -0.2


def pendulum(max_steps: int = 200):
    env, params = gymnax.make("Pendulum-v1")
    start = InitialStateWrapper(
        env, lambda key, state, params: state.replace(theta=jnp.asarray(THETA), theta_dot=jnp.asarray(THETA_DOT))
    )
    return with_gradients(start), params.replace(max_steps_in_episode=max_steps)


def open_loop(actions: jax.Array):
    """A policy replaying `actions` (T,) to one copy; its carry counts the steps."""

    def policy(obs, t, episode_start):
        return actions[t][None, None], t + 1

    return policy


def rewards(actions: jax.Array, max_steps: int = 200) -> jax.Array:
    env, params = pendulum(max_steps)
    key = jax.random.PRNGKey(0)
    loop = start_loop(env, params, key, 1, carry=0)
    _, rollout = closed_loop_rollout(env, params, open_loop(actions), loop, key, actions.shape[0])
    return rollout.reward[:, 0]


def test_the_envs_gymnax_differentiates_are_the_ones_named():
    for env_id in DIFFERENTIABLE_IDS:
        assert supports_gradients(gymnax.make(env_id)[0]), env_id
    assert not supports_gradients(gymnax.make("CartPole-v1")[0])


def test_an_env_without_differentiable_transitions_is_refused_with_those_that_have_them():
    cartpole, _ = gymnax.make("CartPole-v1")
    with pytest.raises(ValueError, match="CartPole-v1 has no differentiable transitions.*Pendulum-v1, Mountain"):
        with_gradients(cartpole)
    with pytest.raises(ValueError, match="no differentiable transitions"):
        with_gradients(InitialStateWrapper(cartpole, lambda key, state, params: state))


def test_pendulums_gradients_through_one_and_two_steps_are_the_hand_computed_ones():
    params = gymnax.make("Pendulum-v1")[1]
    g, m, length, dt = params.g, params.m, params.l, params.dt
    u0, u1 = 0.5, -0.4
    grads = jax.jacobian(rewards)(jnp.array([u0, u1]))
    # r_0 = -(theta^2 + 0.1 theta_dot^2 + 0.001 u_0^2): only the effort term reads u_0.
    np.testing.assert_allclose(grads[0], [-0.002 * u0, 0.0], rtol=1e-5, atol=1e-8)
    # r_1 reads the state u_0 made: theta_dot_1 = theta_dot_0 + (3g/(2l) sin theta_0 + 3/(m l^2) u_0) dt,
    # theta_1 = theta_0 + theta_dot_1 dt.
    theta_dot_1 = THETA_DOT + (3 * g / (2 * length) * np.sin(THETA) + 3 / (m * length**2) * u0) * dt
    theta_1 = THETA + theta_dot_1 * dt
    d_theta_dot = 3 / (m * length**2) * dt
    d_r1_d_u0 = -(2 * theta_1 * d_theta_dot * dt + 0.2 * theta_dot_1 * d_theta_dot)
    np.testing.assert_allclose(grads[1], [d_r1_d_u0, -0.002 * u1], rtol=1e-4, atol=1e-8)
    # Without differentiable transitions the state is cut from the action: only the effort terms remain.
    plain, params = gymnax.make("Pendulum-v1")
    key = jax.random.PRNGKey(0)

    def plain_rewards(actions):
        loop = start_loop(plain, params, key, 1, carry=0)
        return closed_loop_rollout(plain, params, open_loop(actions), loop, key, 2)[1].reward[:, 0]

    assert float(jax.jacobian(plain_rewards)(jnp.array([u0, u1]))[1, 0]) == 0.0


def test_a_closed_loop_returns_gradient_matches_finite_differences():
    """u = K obs on 4 copies for 12 steps, in float64 so the differences are exact enough."""
    with jax.enable_x64(True):
        env, params = gymnax.make("Pendulum-v1")
        env = with_gradients(env)
        key = jax.random.PRNGKey(1)

        def closed_loop_return(gains):
            policy = lambda obs, carry, starts: (jnp.tanh(obs @ gains)[:, None] * 2.0, carry)  # noqa: E731
            loop = start_loop(env, params, key, 4)
            return jnp.mean(jnp.sum(closed_loop_rollout(env, params, policy, loop, key, 12)[1].reward, axis=0))

        gains = jnp.array([-0.8, -1.5, -0.4], jnp.float64)
        grad = jax.grad(closed_loop_return)(gains)
        eps = 1e-6
        numeric = [
            (closed_loop_return(gains.at[i].add(eps)) - closed_loop_return(gains.at[i].add(-eps))) / (2 * eps)
            for i in range(3)
        ]
        np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-8)
        assert np.abs(np.asarray(grad)).min() > 1e-3


def test_a_reset_cuts_the_gradient_exactly_where_the_episode_ends():
    """Episodes of 3 steps over 6: rewards 3-5 owe nothing to actions 0-2, and within an
    episode every later reward depends on every earlier action."""
    jacobian = np.asarray(jax.jacobian(lambda a: rewards(a, max_steps=3))(jnp.linspace(-0.5, 0.5, 6)))
    np.testing.assert_array_equal(jacobian[3:, :3], 0.0)
    np.testing.assert_array_equal(jacobian[np.triu_indices(6, 1)], 0.0)  # no reward reads a later action
    for first in (0, 3):
        block = jacobian[first : first + 3, first : first + 3]
        assert np.all(np.abs(block[np.tril_indices(3)]) > 0), block
