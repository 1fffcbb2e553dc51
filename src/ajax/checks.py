"""The checks every constructor applies to the numbers it is given, before anything compiles.

One place for what a count, a rate and a fraction are, so that an agent, the environment
and the training loop refuse a mistaken value with the same words: the argument's name, the
value and what is accepted.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def is_count(value: Any) -> bool:
    """An integer that is not a bool: `True` is no count of anything."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _is_number(value: Any) -> bool:
    """A real number that is not a bool: `True` is no rate, scale or coefficient."""
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool | np.bool_)


def require_counts(minimum: int = 1, /, **values: Any) -> None:
    """Refuse, at construction, a count that is not an integer (`True` included) of at least `minimum`, naming it."""
    accepted = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    for label, value in values.items():
        if not is_count(value) or value < minimum:
            raise ValueError(f"{label} must be {accepted}, got {value!r}.")


def require_flags(**values: Any) -> None:
    """Refuse a switch that is not True or False (a numpy bool counts), naming it: "False" is a true string."""
    for label, value in values.items():
        if not isinstance(value, bool | np.bool_):
            raise ValueError(f"{label} must be True or False, got {value!r}.")


def require_finite_positive(**values: Any) -> None:
    """Refuse a rate, a norm or a scale that is not a finite number above 0, naming it."""
    for label, value in values.items():
        if not _is_number(value) or not 0 < value < np.inf:
            raise ValueError(f"{label} must be a finite number above 0, got {value!r}.")


def in_interval(interval: str, value: Any) -> bool:
    """Whether `value` is a number in `interval`, written as a message shows it: "(0, 1]", "[0, inf)".

    NaN lies in no interval, and an infinite end admits only the finite numbers on its side.
    """
    low, high = (float(end) for end in interval[1:-1].split(","))
    return _is_number(value) and (
        (low < value if interval[0] == "(" else low <= value)
        and (value < high if interval[-1] == ")" else value <= high)
    )


def require_in_interval(interval: str, /, **values: Any) -> None:
    """Refuse a number outside `interval`, naming it: one spelling for the fractions, mixing rates
    and coefficients every agent takes."""
    for label, value in values.items():
        if not in_interval(interval, value):
            raise ValueError(f"{label} must lie in {interval}, got {value!r}.")
