"""Model-reference tracking: step references, the reference model, the wrapper's timing and its gradients."""

import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax.environments.model_reference import (
    LinearReferenceModel,
    ModelReferenceWrapper,
    StepReference,
    pendulum_angle,
)

HORIZON = 6


@pytest.fixture(scope="module")
def tracking():
    pendulum, _ = gymnax.make("Pendulum-v1")
    env = ModelReferenceWrapper(
        pendulum.with_transition_gradients(),
        StepReference(HORIZON, -0.5, 0.5, 2, 3),
        LinearReferenceModel.first_order(),
        pendulum_angle,
    )
    return env, env.default_params


def _runs(signal: np.ndarray) -> list[int]:
    """The lengths of the constant stretches of a signal, in order."""
    changes = np.flatnonzero(np.diff(signal) != 0) + 1
    return np.diff(np.concatenate([[0], changes, [len(signal)]])).tolist()


def test_a_step_reference_holds_levels_in_range_for_durations_in_bounds():
    reference = StepReference(horizon=200, min_value=-1.0, max_value=2.0, min_duration=3, max_duration=7)
    signals = np.asarray(jax.jit(jax.vmap(reference.sample))(jax.random.split(jax.random.PRNGKey(0), 20)))
    assert signals.shape == (20, 200)
    assert signals.min() >= -1.0 and signals.max() <= 2.0
    lengths = [n for signal in signals for n in _runs(signal)[:-1]]  # the last run is cut by the horizon
    assert min(lengths) == 3 and max(lengths) == 7


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ((0, -1.0, 1.0, 1, 2), "horizon a positive integer"),
        ((10, -1.0, 1.0, 2.5, 3), "min_duration a positive integer"),
        ((10, -1.0, 1.0, 4, 3), "min_duration <= max_duration"),
        ((10, 1.0, -1.0, 1, 3), "min_value <= max_value"),
    ],
)
def test_a_step_reference_refuses_bad_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        StepReference(*arguments)


def test_the_paper_model_has_unit_dc_gain_and_its_hand_computed_step_response():
    model = LinearReferenceModel.first_order()
    assert model.dc_gain() == pytest.approx(1.0, abs=1e-3)
    x = jnp.zeros(1)
    outputs = []
    for _ in range(3):
        x, y = model.step(x, 1.0)
        outputs.append(float(y))
    x1 = 0.7143
    x2 = 0.4286 * x1 + 0.7143
    np.testing.assert_allclose(outputs, [0.2914, 0.5669 * x1 + 0.2914, 0.5669 * x2 + 0.2914], rtol=1e-6)


def test_a_model_started_at_rest_stays_there():
    model = LinearReferenceModel([[0.5, 0.1], [0.0, 0.3]], [1.0, 0.5], [0.2, 0.4], 0.1)
    x = model.initial_state(0.7)
    r = 0.7 / model.dc_gain()  # the reference that holds it at 0.7; 0.7 itself for a unit-gain model
    for _ in range(5):
        x_next, y = model.step(x, r)
        np.testing.assert_allclose(x_next, x, rtol=1e-6)
        assert float(y) == pytest.approx(0.7, rel=1e-6)
        x = x_next
    paper = LinearReferenceModel.first_order()  # its gain is 1 to 1e-4, so the reference y0 holds it too
    x_next, y = paper.step(paper.initial_state(-0.3), -0.3)
    np.testing.assert_allclose(x_next, paper.initial_state(-0.3), rtol=1e-4)
    assert float(y) == pytest.approx(-0.3, rel=1e-4)


def test_a_reference_model_must_be_stable_and_single_input_single_output():
    with pytest.raises(ValueError, match="stable A"):
        LinearReferenceModel.first_order(1.0, 1.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="single input, single output"):
        LinearReferenceModel([[0.5]], [1.0, 2.0], [1.0], 0.0)


def test_the_wrapper_observes_the_error_and_the_last_action(tracking):
    env, params = tracking
    assert env.observation_space(params).shape == (2,)
    assert params.max_steps_in_episode == HORIZON
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    y0 = pendulum_angle(env.env.get_obs(state.env_state))
    np.testing.assert_allclose(obs, [state.reference[0] - y0, 0.0], rtol=1e-6)
    np.testing.assert_allclose(state.model_state, env.model.initial_state(y0), rtol=1e-6)

    action = jnp.array([0.7])
    obs, next_state, reward, _, _, info = env.step(jax.random.PRNGKey(1), state, action, params)
    y1 = pendulum_angle(env.env.get_obs(next_state.env_state))
    np.testing.assert_allclose(obs, [state.reference[1] - y1, 0.7], rtol=1e-6)
    assert float(info["y"]) == pytest.approx(float(y1))
    assert float(info["reference"]) == pytest.approx(float(state.reference[0]))
    assert float(reward) == pytest.approx(-((float(info["y_ref"]) - float(info["y"])) ** 2), rel=1e-6)


def test_an_episode_lasts_the_reference_horizon(tracking):
    env, params = tracking
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    flags = []
    for t in range(HORIZON):
        obs, state, reward, terminated, truncated, info = env.step(jax.random.PRNGKey(t), state, jnp.zeros(1), params)
        flags.append(bool(truncated))
        assert float(reward) == pytest.approx(-((float(info["y_ref"]) - float(info["y"])) ** 2), rel=1e-6)
    assert flags == [False] * (HORIZON - 1) + [True]
    assert int(state.time) == 0  # auto-reset into a new episode


def test_rewards_are_differentiable_in_the_action(tracking):
    """Three steps of one constant action, in float64 so the central difference is exact enough."""
    env, params = tracking
    with jax.enable_x64(True):
        _, start = env.reset(jax.random.PRNGKey(0), params)

        def tracking_return(u):
            state, total = start, 0.0
            for t in range(3):
                _, state, reward, _, _, _ = env.step(jax.random.PRNGKey(t), state, jnp.reshape(u, (1,)), params)
                total = total + reward
            return total

        u, eps = jnp.float64(0.3), 1e-6
        grad = float(jax.grad(tracking_return)(u))
        finite_difference = float((tracking_return(u + eps) - tracking_return(u - eps)) / (2 * eps))
    assert np.isfinite(grad) and abs(grad) > 1e-3
    assert grad == pytest.approx(finite_difference, rel=1e-5)
