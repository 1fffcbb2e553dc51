"""The PID layer: its gains' identity-like start, the formula by hand across a reset, and
step-wise acting equal to the sequence run."""

import jax
import jax.numpy as jnp
import numpy as np

from ajax.modules import PIDGains, PIDHead, initial_pid_carry

# One batch row, one channel: x over six steps, an episode starting at step 3.
X = jnp.array([1.0, 2.0, 4.0, 3.0, 1.0, -1.0])[:, None, None]  # (T, B = 1, n = 1)
RESETS = jnp.array([True, False, False, True, False, False])[:, None]


def test_the_gains_start_as_the_identity_so_the_layer_passes_its_input_through():
    params = PIDGains(2).init(jax.random.PRNGKey(0), jnp.zeros((1, 2)), jnp.zeros((1, 2)), jnp.zeros((1, 2)))
    gains = params["params"]
    np.testing.assert_array_equal(gains["K_P"], np.eye(2))
    np.testing.assert_array_equal(gains["K_I"], np.zeros((2, 2)))
    np.testing.assert_array_equal(gains["K_D"], np.zeros((2, 2)))
    head = PIDHead(1)
    params = head.init(jax.random.PRNGKey(0), initial_pid_carry(1, 1), X, RESETS)
    _, u = head.apply(params, initial_pid_carry(1, 1), X, RESETS)
    np.testing.assert_array_equal(u, X)


def hand_set(k_p: float, k_i: float, k_d: float) -> dict:
    return {
        "params": {
            "PIDGains_0": {"K_P": jnp.full((1, 1), k_p), "K_I": jnp.full((1, 1), k_i), "K_D": jnp.full((1, 1), k_d)}
        }
    }


def test_u_is_kp_x_plus_ki_the_episodes_sum_plus_kd_the_difference_restarting_at_a_reset():
    _, u = PIDHead(1).apply(hand_set(2.0, 0.5, 3.0), initial_pid_carry(1, 1), X, RESETS)
    # Sums within each episode: 1, 3, 7 | 3, 4, 3; differences: 0, 1, 2 | 0, -2, -2.
    integral = np.array([1.0, 3.0, 7.0, 3.0, 4.0, 3.0])
    difference = np.array([0.0, 1.0, 2.0, 0.0, -2.0, -2.0])
    expected = 2.0 * np.asarray(X).ravel() + 0.5 * integral + 3.0 * difference
    np.testing.assert_allclose(np.asarray(u).ravel(), expected, rtol=1e-6)


def test_acting_step_by_step_equals_the_sequence_and_the_carry_holds_the_sum_and_last_input():
    params = hand_set(1.5, -0.25, 0.75)
    head = PIDHead(1)
    carry, whole = head.apply(params, initial_pid_carry(1, 1), X, RESETS)
    stepped, steps = initial_pid_carry(1, 1), []
    for t in range(X.shape[0]):
        stepped, u = head.apply(params, stepped, X[t : t + 1], RESETS[t : t + 1])
        steps.append(u[0])
    np.testing.assert_allclose(np.stack(steps), whole, rtol=1e-6)
    np.testing.assert_allclose(carry.integral, [[3.0]])
    np.testing.assert_allclose(carry.previous, [[-1.0]])
    for a, b in zip(jax.tree.leaves(carry), jax.tree.leaves(stepped), strict=True):
        np.testing.assert_allclose(a, b)


def test_a_reset_makes_the_carry_irrelevant():
    head = PIDHead(1)
    params = hand_set(1.0, 1.0, 1.0)
    stale = initial_pid_carry(1, 1)._replace(integral=jnp.full((1, 1), 9.0), previous=jnp.full((1, 1), -5.0))
    _, fresh = head.apply(params, initial_pid_carry(1, 1), X, RESETS)
    _, after_stale = head.apply(params, stale, X, RESETS)
    np.testing.assert_array_equal(fresh, after_stale)
