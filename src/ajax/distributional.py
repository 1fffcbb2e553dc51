"""Symlog and two-hot: scale-free regression by classification over fixed bins.

DreamerV3 (Hafner et al., arXiv:2301.04104v2) predicts rewards and values as a softmax over
255 bins and trains them with the cross-entropy against a two-hot target; TD-MPC2 (Hansen et
al. 2024) does the same with 101 bins. Gradients then no longer scale with the size of the
targets, so one set of hyperparameters serves rewards of 1 and of 1,000.

Two placements of the bins are in use, and these functions serve both:

- In symlog space (TD-MPC2; DreamerV3's paper v1 and its January 2023 reference): the bins are
  `symlog_bins()`, the target is encoded as `two_hot(symlog(y), bins)` and the prediction is
  `symexp` of the bins' mean. `two_hot_loss` and `two_hot_mean` do exactly this.
- In raw space (danijar/dreamerv3 since April 2024, commit 2411f7d, to its newest version; its
  `symexp_twohot` head in `embodied/jax/heads.py`): the bins are `symexp(symlog_bins())`, the
  raw target is encoded between them and the prediction is the bins' mean itself, with no
  transform. That is `two_hot_cross_entropy(logits, y, bins)` and `bins_mean(logits, bins)`.

Both decode a two-hot target back to its value; they differ in how they interpolate between
two bins (linearly in symlog or in raw units), so the two losses are not equal.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def symlog(x: jax.Array) -> jax.Array:
    """sign(x) log(1 + |x|), DreamerV3's squashing: about the identity near 0, logarithmic far from it."""
    return jnp.sign(x) * jnp.log1p(jnp.abs(x))


def symexp(x: jax.Array) -> jax.Array:
    """sign(x) (exp(|x|) - 1), the inverse of `symlog`."""
    return jnp.sign(x) * jnp.expm1(jnp.abs(x))


def symlog_bins(n: int = 255, low: float = -20.0, high: float = 20.0) -> jax.Array:
    """`n` bin centres spaced linearly from `low` to `high` in symlog space, float32.

    The defaults are the reference's for DreamerV3's reward and value heads (255 bins over
    [-20, 20]; `bins: 255` in `dreamerv3/configs.yaml`, the range in `embodied/jax/heads.py`).
    The centres are computed from the middle outwards, so that a symmetric range gives bins that
    are exact negatives of each other with an exact 0 in the middle (n odd): the reference builds
    its bins that way, and a uniform softmax (a zero-initialised output layer) then decodes to 0.
    """
    if n < 2:
        raise ValueError(f"two-hot needs at least 2 bins, got {n}.")
    # (2i - (n - 1)) / (n - 1) runs over [-1, 1]; IEEE division is exact under negation, so
    # mirrored indices give mirrored fractions.
    fraction = (2.0 * np.arange(n) - (n - 1)) / (n - 1)
    centre, half_width = (low + high) / 2.0, (high - low) / 2.0
    return jnp.asarray(centre + half_width * fraction, dtype=jnp.float32)


def two_hot(x: jax.Array, bins: jax.Array) -> jax.Array:
    """The two-hot encoding (..., n) of `x` (...), which is already in the space of `bins` (increasing).

    The weight goes to the two bins around x, each in proportion to x's closeness to it, so the
    encoding's mean over the bins is x. A value on or outside an edge bin puts all its weight on
    that bin, as the reference's `TwoHot.loss` does (`embodied/jax/outs.py`), and a value equal to
    a bin puts all its weight on that bin.
    """
    n = bins.shape[-1]
    # The last bin at or below x, kept where a pair (lower, lower + 1) of bins exists.
    lower = jnp.clip(jnp.searchsorted(bins, x, side="right") - 1, 0, n - 2)
    below, above = bins[lower], bins[lower + 1]
    upper_weight = jnp.clip((x - below) / (above - below), 0.0, 1.0)
    return (1.0 - upper_weight)[..., None] * jax.nn.one_hot(lower, n) + upper_weight[..., None] * jax.nn.one_hot(
        lower + 1, n
    )


def bins_mean(logits: jax.Array, bins: jax.Array) -> jax.Array:
    """sum_i softmax(logits)_i bins_i, in the bins' own space, summed in mirrored pairs.

    A plain left-to-right sum of 255 products of opposite sign leaves a rounding error, so a
    uniform softmax over symmetric bins would not give 0. Like the reference's `TwoHot.pred`
    (`embodied/jax/outs.py`), each term is added to its mirror image first (the middle term on
    its own when n is odd), which cancels exactly, and only then are the pairs summed.
    """
    n = bins.shape[-1]
    terms = jax.nn.softmax(logits, axis=-1) * bins
    pairs = terms[..., : n // 2][..., ::-1] + terms[..., (n + 1) // 2 :]
    middle = terms[..., n // 2] if n % 2 else 0.0
    return middle + pairs.sum(-1)


def two_hot_cross_entropy(logits: jax.Array, x: jax.Array, bins: jax.Array) -> jax.Array:
    """-sum two_hot(x, bins) log_softmax(logits), per element: x is in the bins' space and a constant.

    The target is stopped, as in the reference's `TwoHot.loss`: only the logits learn.
    """
    target = two_hot(jax.lax.stop_gradient(x), bins)
    return -(target * jax.nn.log_softmax(logits, axis=-1)).sum(-1)


def two_hot_mean(logits: jax.Array, bins: jax.Array) -> jax.Array:
    """symexp(sum_i softmax(logits)_i bins_i): the prediction of logits over bins in symlog space (paper v1)."""
    return symexp(bins_mean(logits, bins))


def two_hot_loss(logits: jax.Array, target: jax.Array, bins: jax.Array) -> jax.Array:
    """The cross-entropy of two_hot(symlog(target)) against the logits, per element (bins in symlog space)."""
    return two_hot_cross_entropy(logits, symlog(target), bins)


def unimix_logits(logits: jax.Array, unimix: float = 0.01) -> jax.Array:
    """log((1 - unimix) softmax(logits) + unimix / K): a categorical mixed with 1% uniform.

    DreamerV3 (the paper's world-model and actor sections; the reference's `Categorical` in `embodied/jax/outs.py`)
    mixes its latent and discrete-action distributions with the uniform so that no probability
    reaches 0, which keeps the KL losses and log-probabilities finite. The result is a normalised
    log-probability (K = the last axis); at unimix 0 it is log_softmax(logits), the same
    distribution as the logits.
    """
    probs = jax.nn.softmax(logits, axis=-1)
    return jnp.log((1.0 - unimix) * probs + unimix / logits.shape[-1])
