"""LaProp with adaptive gradient clipping, one and two steps worked out by hand; its parts on all
tensors at once against the same parts tensor by tensor."""

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from ajax.networks.optim import adaptive_gradient_clipping, laprop, raveled, scale_by_debiased_rms, tensor_norms


def test_agc_clips_each_tensor_against_its_own_norm():
    params = {"a": jnp.array([3.0, 4.0]), "b": jnp.zeros(2), "c": jnp.array([10.0, 0.0])}
    grads = {"a": jnp.array([6.0, 8.0]), "b": jnp.array([0.3, 0.4]), "c": jnp.array([1.0, 0.0])}
    agc = adaptive_gradient_clipping(0.3)
    clipped, _ = agc.update(grads, agc.init(params), params)
    # a: ||g|| = 10 > 0.3 * ||p|| = 0.3 * 5 = 1.5, so g * 1.5 / 10 = [0.9, 1.2].
    np.testing.assert_allclose(clipped["a"], [0.9, 1.2], rtol=1e-6)
    # b: ||p|| = 0 is floored at pmin: bound 0.3 * 1e-3 = 3e-4, g * 3e-4 / 0.5 = [1.8e-4, 2.4e-4].
    np.testing.assert_allclose(clipped["b"], [1.8e-4, 2.4e-4], rtol=1e-5)
    # c: ||g|| = 1 <= 0.3 * 10 = 3: unchanged (a global norm would have clipped it with the rest).
    np.testing.assert_array_equal(clipped["c"], grads["c"])
    with pytest.raises(ValueError, match="params"):
        agc.update(grads, agc.init(params))


def test_laprop_one_and_two_steps_by_hand():
    optimizer = laprop(learning_rate=0.1, warmup=0)
    params = jnp.array([3.0, 4.0])
    state = optimizer.init(params)

    # Step 1: g = [6, 8] is clipped to [0.9, 1.2] (as above). nu = 0.001 g^2 = [8.1e-4, 1.44e-3],
    # debiased by 1 - 0.999 = 0.001: [0.81, 1.44], root [0.9, 1.2], so g' = [1, 1]. m = 0.1 g',
    # debiased by 1 - 0.9: [1, 1]. Update -0.1 m = [-0.1, -0.1].
    updates, state = optimizer.update(jnp.array([6.0, 8.0]), state, params)
    np.testing.assert_allclose(updates, [-0.1, -0.1], rtol=1e-5)
    params = optax.apply_updates(params, updates)  # [2.9, 3.9], norm 4.86: bound 1.458

    # Step 2: g = [0.3, 0] is under the bound. nu = 0.999 [8.1e-4, 1.44e-3] + 0.001 [0.09, 0]
    # = [8.9919e-4, 1.43856e-3], debiased by 1 - 0.999^2 = 1.999e-3.
    nu_hat = np.array([0.999 * 8.1e-4 + 0.001 * 0.09, 0.999 * 1.44e-3]) / (1 - 0.999**2)  # [0.44982, 0.71964]
    g_prime = np.array([0.3, 0.0]) / np.sqrt(nu_hat)  # [0.44730, 0]
    # m = 0.9 * 0.1 [1, 1] + 0.1 g' = [0.134730, 0.09], debiased by 1 - 0.9^2 = 0.19: [0.70911, 0.47368].
    m_hat = (0.9 * 0.1 * np.ones(2) + 0.1 * g_prime) / (1 - 0.9**2)
    updates, state = optimizer.update(jnp.array([0.3, 0.0]), state, params)
    np.testing.assert_allclose(updates, -0.1 * m_hat, rtol=1e-5)  # [-0.070911, -0.047368]


def test_the_rate_warms_up_linearly_from_zero():
    # A constant gradient gives g' = g / |g| = 1 and m = 1 at every step, so each update is
    # -rate_k: with warmup 2, rate_k = 0.1 * min(k, 2) / 2 for k = 0, 1, 2, 3.
    optimizer = laprop(learning_rate=0.1, agc=0.0, warmup=2)
    params = jnp.array([1.0])
    state = optimizer.init(params)
    steps = []
    for _ in range(4):
        updates, state = optimizer.update(jnp.array([0.5]), state, params)
        steps.append(float(updates[0]))
    np.testing.assert_allclose(steps, [0.0, -0.05, -0.1, -0.1], rtol=1e-5, atol=1e-12)


def test_defaults_are_the_references():
    defaults = {k: v.default for k, v in inspect.signature(laprop).parameters.items()}
    # dreamerv3/configs.yaml `opt`: lr 4e-5, agc 0.3, eps 1e-20, beta1 0.9, beta2 0.999, warmup 1000;
    # pmin 1e-3 from clip_by_agc's default.
    assert defaults == {
        "learning_rate": 4e-5,
        "agc": 0.3,
        "pmin": 1e-3,
        "beta1": 0.9,
        "beta2": 0.999,
        "eps": 1e-20,
        "warmup": 1000,
    }


def test_tensor_norms_are_each_leafs_norm():
    # Leaves shorter than a row, a row exactly, and over it with a partial last row.
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    tree = {
        "scalar": jnp.float32(-2.0),
        "matrix": jax.random.normal(keys[0], (3, 5)),
        "row": jax.random.normal(keys[1], (64,)),
        "cube": jax.random.normal(keys[2], (2, 5, 13)),
    }
    expected = [np.linalg.norm(np.ravel(leaf)) for leaf in jax.tree.leaves(tree)]
    np.testing.assert_allclose(tensor_norms(tree), expected, rtol=1e-6)


def test_raveled_steps_match_the_steps_tensor_by_tensor():
    steps = optax.chain(scale_by_debiased_rms(0.999, 1e-20), optax.ema(0.9, debias=True))
    params = {"a": jnp.ones((3, 2)), "b": jnp.zeros(5)}
    per_tensor, flat = steps.init(params), raveled(steps).init(params)
    for k in range(3):
        keys = jax.random.split(jax.random.PRNGKey(k), 2)
        grads = {"a": jax.random.normal(keys[0], (3, 2)), "b": jax.random.normal(keys[1], (5,))}
        expected, per_tensor = steps.update(grads, per_tensor)
        updates, flat = raveled(steps).update(grads, flat)
        jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, rtol=1e-6), updates, expected)
