"""Scores over seeds that do not hinge on one evaluation: rliable's IQM and its bootstrap interval.

A learning row scored by each seed's final evaluation moves with where that evaluation falls:
a seed that oscillates scores high or low by the luck of the last step. Here a seed's score is
the mean of its last three evaluations and, following rliable (Agarwal et al., 2021, "Deep RL
at the Edge of the Statistical Precipice"), the row's score is the interquartile mean (IQM) of
those over seeds, with a 95% percentile bootstrap interval over seeds. rliable itself is not a
dependency (scipy comes with jax); its definitions are:

- IQM: `scipy.stats.trim_mean(scores, 0.25)`, the mean after dropping `floor(0.25 n)` scores
  from each end of the sorted scores (`rliable.metrics.aggregate_iqm`);
- interval: resample the seeds with replacement, take the IQM of each resample, and report the
  2.5th and 97.5th percentiles of those IQMs (`rliable.library.get_interval_estimates`, one
  task, `method="percentile"`, its default 50,000 resamples).

The resampling uses a fixed numpy seed, so a table rebuilt from the same rows prints the
same intervals. Below three seeds there is no interval: a bootstrap over one or two seeds
only reshuffles them, and the table says so rather than printing a width it does not know.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import trim_mean

LAST = 3  # evaluations averaged into a seed's score
TRIM = 0.25  # the proportion cut from each end: the IQM
RESAMPLES = 50_000  # rliable's default number of bootstrap resamples
CONFIDENCE = 0.95
BOOTSTRAP_SEED = 0
MIN_SEEDS = 3  # fewer than this and the bootstrap has nothing to resample


def final_means(curve: ArrayLike, last: int = LAST) -> np.ndarray:
    """Each seed's mean over its last `last` evaluations, from a (seeds, evaluations) curve.

    Averaging a few evaluations keeps a seed's score from riding on the one that happened to
    come last; with fewer than `last` evaluations every evaluation counts.
    """
    curve = np.asarray(curve, dtype=float)
    if curve.ndim != 2 or curve.shape[1] == 0:
        raise ValueError(f"Expected a (seeds, evaluations) curve with evaluations, got shape {curve.shape}.")
    return curve[:, -last:].mean(axis=1)


def iqm(scores: ArrayLike) -> float:
    """The interquartile mean of per-seed scores, as rliable defines it (scipy's `trim_mean`).

    It ignores the best and worst quarter of the seeds, so one lucky or broken seed moves it
    less than it moves the mean, while it still uses half the seeds, unlike the median.
    """
    return float(trim_mean(np.asarray(scores, dtype=float), TRIM))


def iqm_interval(
    scores: ArrayLike,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float] | None:
    """A percentile bootstrap interval of the IQM over seeds, or None below `MIN_SEEDS` seeds.

    The seeds are the only source of variation the table samples, so they are what is
    resampled; the fixed `seed` makes the interval a function of the scores alone.
    """
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 1:
        raise ValueError(f"Expected one score per seed, got shape {scores.shape}.")
    if scores.size < MIN_SEEDS:
        return None
    draws = np.random.default_rng(seed).integers(0, scores.size, size=(resamples, scores.size))
    estimates = trim_mean(scores[draws], TRIM, axis=1)
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(estimates, [tail, 100 - tail])
    return float(low), float(high)


def learning_summary(curve: ArrayLike) -> dict[str, Any]:
    """The fields a learning row stores, from its per-seed curve (seeds, evaluations).

    Returns `final3` (each seed's mean of its last three evaluations), `final3_mean` (their
    mean), `iqm` (their IQM) and `iqm_ci` ([low, high], or None below `MIN_SEEDS` seeds),
    rounded to hundredths as the rows' other returns are.
    """
    finals = final_means(curve)
    interval = iqm_interval(finals)
    return {
        "final3": [round(float(x), 2) for x in finals],
        "final3_mean": round(float(finals.mean()), 2),
        "iqm": round(iqm(finals), 2),
        "iqm_ci": None if interval is None else [round(x, 2) for x in interval],
    }


def interval_text(interval: Sequence[float] | None) -> str:
    """A row's `iqm_ci` for a summary line: "[low, high]", or "-" where there is none."""
    return "-" if interval is None else f"[{interval[0]:.1f}, {interval[1]:.1f}]"
