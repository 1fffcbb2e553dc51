"""The return scale's percentile EMA against two updates worked out by hand."""

import jax
import jax.numpy as jnp
import numpy as np

from ajax.normalizers import PercentileScale, denominator, update


def test_starts_at_zero_and_the_floor_gives_one():
    scale = PercentileScale.create()
    assert scale.low == 0.0 and scale.high == 0.0
    assert denominator(scale) == 1.0


def test_two_updates_by_hand():
    # 0 .. 20 over a (3, 7) batch: the 5th percentile sits at position 0.05 * 20 = 1, the 95th
    # at 19, so the percentiles are 1 and 19 (taken over all 21 elements).
    first = jnp.arange(21.0).reshape(3, 7)
    scale = jax.jit(update)(PercentileScale.create(), first)
    # low = 0.99 * 0 + 0.01 * 1 = 0.01, high = 0.99 * 0 + 0.01 * 19 = 0.19; range 0.18 < 1.
    np.testing.assert_allclose([scale.low, scale.high], [0.01, 0.19], rtol=1e-6)
    assert denominator(scale) == 1.0
    # 0, 2.5, .., 10 (five values): positions 0.05 * 4 = 0.2 and 0.95 * 4 = 3.8 interpolate to
    # 0.2 * 2.5 = 0.5 and 3.8 * 2.5 = 9.5.
    second = jnp.arange(5.0) * 2.5
    scale = update(scale, second)
    # low = 0.99 * 0.01 + 0.01 * 0.5 = 0.0149, high = 0.99 * 0.19 + 0.01 * 9.5 = 0.2831
    np.testing.assert_allclose([scale.low, scale.high], [0.0149, 0.2831], rtol=1e-5)
    # A faster rate and a lower floor: low = 0.5 * 0.0149 + 0.5 * 0.5 = 0.25745,
    # high = 0.5 * 0.2831 + 0.5 * 9.5 = 4.89155, range 4.6341.
    fast = update(scale, second, rate=0.5)
    np.testing.assert_allclose(denominator(fast, limit=1e-8), 4.89155 - 0.25745, rtol=1e-5)


def test_the_returns_are_a_constant():
    grad = jax.grad(lambda returns: update(PercentileScale.create(), returns).high)(jnp.arange(5.0))
    np.testing.assert_array_equal(grad, np.zeros(5))
