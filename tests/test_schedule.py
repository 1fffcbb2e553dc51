"""Schedules: a constant or a function of the timestep, read with `at`."""

import numpy as np
import pytest

from ajax.schedule import at, linear


def test_linear_schedule():
    ramp = linear(1.0, 0.0, 100)
    np.testing.assert_allclose([at(ramp, t) for t in (0, 50, 100, 200)], [1.0, 0.5, 0.0, 0.0], atol=1e-6)
    assert float(at(0.3, 7)) == pytest.approx(0.3)
    assert hash(linear(1.0, 0.0, 100)) == hash(ramp)
