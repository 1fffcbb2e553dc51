"""Symlog and two-hot against values worked out by hand.

Most cases use five bins at -1, 0, 1, 2, 3 (symlog_bins(5, -1, 3)), where the arithmetic is easy.
"""

import jax
import jax.numpy as jnp
import numpy as np

from ajax.distributional import (
    bins_mean,
    symexp,
    symlog,
    symlog_bins,
    two_hot,
    two_hot_cross_entropy,
    two_hot_loss,
    two_hot_mean,
    unimix_logits,
)

E = np.e
FIVE = symlog_bins(5, -1.0, 3.0)


def test_symlog_and_symexp_known_values_and_round_trip():
    # symlog(e - 1) = log(e) = 1; symlog(-(e^2 - 1)) = -log(e^2) = -2; both are odd functions through 0.
    np.testing.assert_allclose(symlog(jnp.array([0.0, E - 1, -(E**2 - 1)])), [0.0, 1.0, -2.0], rtol=1e-6)
    np.testing.assert_allclose(symexp(jnp.array([0.0, 1.0, -2.0])), [0.0, E - 1, -(E**2 - 1)], rtol=1e-6)
    x = jnp.array([-1e4, -3.5, -1e-3, 0.0, 0.5, 1e3])
    np.testing.assert_allclose(symexp(symlog(x)), x, rtol=1e-5)
    np.testing.assert_allclose(symlog(symexp(x[1:-1])), x[1:-1], rtol=1e-5)


def test_bins_are_the_references_and_exactly_symmetric():
    bins = symlog_bins()
    # 255 bins from -20 to 20: a step of 40 / 254, with bin 127 in the middle.
    assert bins.shape == (255,) and bins.dtype == jnp.float32
    np.testing.assert_allclose(bins[np.array([0, 1, 254])], [-20.0, -20.0 + 40 / 254, 20.0], rtol=1e-6)
    assert bins[127] == 0.0
    np.testing.assert_array_equal(bins, -bins[::-1])
    np.testing.assert_allclose(FIVE, [-1.0, 0.0, 1.0, 2.0, 3.0])


def test_two_hot_between_bins_on_a_bin_and_past_the_edges():
    x = jnp.array([[0.25, 1.0, 2.9], [-1.0, -5.0, 7.0]])
    expected = np.array(
        [
            [
                [0, 0.75, 0.25, 0, 0],  # 0.25 is a quarter of the way from bin 0 to bin 1
                [0, 0, 1, 0, 0],  # on a bin: all of it there
                [0, 0, 0, 0.1, 0.9],  # 2.9: 0.1 from bin 3, 0.9 of the way from bin 2
            ],
            [
                [1, 0, 0, 0, 0],  # on the lower edge
                [1, 0, 0, 0, 0],  # below the range: all on the edge bin
                [0, 0, 0, 0, 1],  # above the range: all on the edge bin
            ],
        ]
    )
    np.testing.assert_allclose(two_hot(x, FIVE), expected, atol=1e-6)
    # Uneven bins interpolate linearly between the two neighbours: 2 is 1/3 of the way from 1 to 4.
    np.testing.assert_allclose(two_hot(jnp.array(2.0), jnp.array([0.0, 1.0, 4.0])), [0, 2 / 3, 1 / 3], rtol=1e-6)


def test_two_hot_mean_of_a_one_hot_a_mixture_and_a_uniform():
    bins = symlog_bins()
    one_hot = jnp.where(jnp.arange(255) == 137, 0.0, -jnp.inf)  # all mass on bin 137 = 10 * 40 / 254
    np.testing.assert_allclose(two_hot_mean(one_hot, bins), np.expm1(400 / 254), rtol=1e-5)
    # Probabilities 0.75 and 0.25 on bins 0 and 1 average to 0.25 in symlog space.
    mixture = jnp.log(jnp.array([1e-30, 0.75, 0.25, 1e-30, 1e-30]))
    np.testing.assert_allclose(bins_mean(mixture, FIVE), 0.25, rtol=1e-5)
    np.testing.assert_allclose(two_hot_mean(mixture, FIVE), np.expm1(0.25), rtol=1e-5)
    # A zero-initialised head: uniform over symmetric bins decodes to exactly 0, in either space.
    assert two_hot_mean(jnp.zeros(255), bins) == 0.0
    assert bins_mean(jnp.zeros(255), symexp(bins)) == 0.0
    assert bins_mean(jnp.zeros(4), jnp.array([-3.0, -1.0, 1.0, 3.0])) == 0.0  # even n: pairs only


def test_two_hot_loss_for_a_known_target_and_its_gradient():
    probs = jnp.array([0.1, 0.3, 0.4, 0.1, 0.1])
    logits = jnp.log(probs)
    target = jnp.array(np.expm1(0.25))  # symlog(target) = 0.25: weights 0.75 on bin 0, 0.25 on bin 1
    # -(0.75 log 0.3 + 0.25 log 0.4) = 0.75 * 1.20397 + 0.25 * 0.91629 = 1.13205
    np.testing.assert_allclose(
        two_hot_loss(logits, target, FIVE), -(0.75 * np.log(0.3) + 0.25 * np.log(0.4)), rtol=1e-5
    )
    # d/dlogits = softmax - two-hot = [0.1, 0.3 - 0.75, 0.4 - 0.25, 0.1, 0.1]; the target gets none.
    grad_logits, grad_target = jax.grad(two_hot_loss, argnums=(0, 1))(logits, target, FIVE)
    np.testing.assert_allclose(grad_logits, [0.1, -0.45, 0.15, 0.1, 0.1], atol=1e-6)
    assert grad_target == 0.0
    # Per element: a batch of targets gives a batch of losses.
    assert two_hot_loss(jnp.zeros((2, 3, 5)), jnp.zeros((2, 3)), FIVE).shape == (2, 3)


def test_raw_space_bins_interpolate_in_raw_units():
    # The newest reference's placement: bins symexp([-1, 0, 1, 2, 3]), raw target (e - 1) / 4, a
    # quarter of the way from bin 0 (value 0) to bin 1 (value e - 1): weights 0.75 and 0.25.
    raw_bins = symexp(FIVE)
    target = jnp.array((E - 1) / 4)
    logits = jnp.log(jnp.array([0.1, 0.3, 0.4, 0.1, 0.1]))
    expected = -(0.75 * np.log(0.3) + 0.25 * np.log(0.4))
    np.testing.assert_allclose(two_hot_cross_entropy(logits, target, raw_bins), expected, rtol=1e-5)
    # In symlog space the same target sits at log(1 + (e - 1) / 4) = 0.35745 of the way instead.
    w = np.log1p((E - 1) / 4)
    np.testing.assert_allclose(
        two_hot_loss(logits, target, FIVE), -((1 - w) * np.log(0.3) + w * np.log(0.4)), rtol=1e-5
    )


def test_unimix_mixes_one_percent_uniform():
    logits = jnp.log(jnp.array([0.5, 0.5, 0.0, 0.0]))
    # 0.99 * [0.5, 0.5, 0, 0] + 0.01 / 4 = [0.4975, 0.4975, 0.0025, 0.0025]
    np.testing.assert_allclose(jnp.exp(unimix_logits(logits)), [0.4975, 0.4975, 0.0025, 0.0025], rtol=1e-6)
    # Without mixing: the normalised log-probabilities of the logits; softmax(0, log 3) = [1/4, 3/4].
    np.testing.assert_allclose(unimix_logits(jnp.array([0.0, np.log(3.0)]), 0.0), np.log([0.25, 0.75]), rtol=1e-6)
