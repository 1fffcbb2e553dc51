"""PIDTerms: the error, its sum and its difference by hand across an auto-reset, gradients
through them, its spaces and refusals, and the default error on a tracking task."""

import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct
from gymnax.environments import environment, spaces

from ajax.environments.differentiable import with_gradients
from ajax.environments.model_reference import LinearReferenceModel, ModelReferenceWrapper, StepReference, pendulum_angle
from ajax.environments.pid_terms import PIDTerms
from tests.probe_envs import ProbeParams


@struct.dataclass
class IntegratorState(environment.EnvState):
    x: jax.Array
    time: int


class Integrator(environment.Environment):
    """x starts at 1 and moves by a each step; the observation is [x, 10 x]; 3 steps an episode."""

    _supports_transition_gradients = True

    @property
    def default_params(self) -> ProbeParams:
        return ProbeParams(max_steps_in_episode=3)

    def reset_env(self, key, params):
        x = jnp.ones(())
        return jnp.stack([x, 10.0 * x]), IntegratorState(x=x, time=0)

    def step_env(self, key, state, action, params):
        x = state.x + jnp.reshape(action, ())
        return jnp.stack([x, 10.0 * x]), IntegratorState(x=x, time=state.time + 1), -(x**2), jnp.array(False), {}

    def action_space(self, params):
        return spaces.Box(-5.0, 5.0, (1,))

    def observation_space(self, params):
        return spaces.Box(-100.0, 100.0, (2,))


def test_the_terms_follow_the_error_by_hand_and_restart_at_the_auto_reset():
    env = PIDTerms(Integrator())
    params = env.default_params
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    # [x, 10x, e, sum e, delta e] with e = x: x = 1, then 1.5, 0.5, 2.5 (the episode's end), then a reset.
    seen = [np.asarray(obs)]
    finals, truncations = [], []
    for t, a in enumerate([0.5, -1.0, 2.0, 0.5]):
        obs, state, _, _, truncated, info = env.step(jax.random.PRNGKey(t), state, jnp.array([a]), params)
        seen.append(np.asarray(obs))
        finals.append(np.asarray(info["final_observation"]))
        truncations.append(bool(truncated))
    expected = [
        [1.0, 10.0, 1.0, 1.0, 0.0],
        [1.5, 15.0, 1.5, 2.5, 0.5],
        [0.5, 5.0, 0.5, 3.0, -1.0],
        [1.0, 10.0, 1.0, 1.0, 0.0],  # reset: the sum restarts with e_0, no difference from the last episode
        [1.5, 15.0, 1.5, 2.5, 0.5],
    ]
    np.testing.assert_allclose(seen, expected)
    np.testing.assert_allclose(finals[2], [2.5, 25.0, 2.5, 5.5, 2.0])  # the episode's last step, kept for bootstrap
    assert truncations == [False, False, True, False]


def test_a_vector_error_fn_appends_all_errors_then_all_sums_then_all_differences():
    env = PIDTerms(Integrator(), error_fn=lambda obs: jnp.stack([obs[0], -obs[1]]))
    params = env.default_params
    assert env.n_errors == 2
    assert env.observation_space(params).shape == (8,)
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    obs, *_ = env.step_env(jax.random.PRNGKey(1), state, jnp.array([1.0]), params)
    np.testing.assert_allclose(obs, [2.0, 20.0, 2.0, -20.0, 3.0, -30.0, 1.0, -10.0])


def test_the_observation_space_extends_the_box_unbounded_and_the_rest_is_the_wrapped_envs():
    env = PIDTerms(Integrator())
    space = env.observation_space(env.default_params)
    np.testing.assert_allclose(space.low, [-100.0, -100.0, -np.inf, -np.inf, -np.inf])
    np.testing.assert_allclose(space.high, [100.0, 100.0, np.inf, np.inf, np.inf])
    assert env.action_space(env.default_params).shape == (1,)
    assert env.default_params == Integrator().default_params
    assert env.name == "PIDTerms(Integrator)"


def test_gradients_pass_through_the_sum_and_the_difference():
    env = with_gradients(PIDTerms(Integrator()))
    assert isinstance(env, PIDTerms)
    params = env.default_params
    _, start = env.reset(jax.random.PRNGKey(0), params)

    def terms_after_two_steps(actions):
        _, state, *_ = env.step_env(jax.random.PRNGKey(0), start, actions[:1], params)
        obs, *_ = env.step_env(jax.random.PRNGKey(1), state, actions[1:], params)
        return obs[3], obs[4]  # x0 + x1 + x2 and x2 - x1

    d_sum, d_difference = jax.jacobian(terms_after_two_steps)(jnp.array([0.5, -1.0]))
    np.testing.assert_allclose(d_sum, [2.0, 1.0])  # x1 = x0 + a0, x2 = x1 + a1
    np.testing.assert_allclose(d_difference, [0.0, 1.0])


def test_the_default_error_is_a_tracking_tasks_error_r_minus_y():
    pendulum, _ = gymnax.make("Pendulum-v1")
    task = ModelReferenceWrapper(
        pendulum, StepReference(8, -0.5, 0.5, 2, 4), LinearReferenceModel.first_order(), pendulum_angle
    )
    env = PIDTerms(task)
    params = env.default_params
    assert params.max_steps_in_episode == 8
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    inner_obs, _ = task.reset(jax.random.PRNGKey(0), params)
    np.testing.assert_allclose(obs, [inner_obs[0], inner_obs[1], inner_obs[0], inner_obs[0], 0.0])
    errors = [float(obs[0])]
    for t in range(3):
        obs, state, *_ = env.step(jax.random.PRNGKey(t), state, jnp.array([1.0]), params)
        errors.append(float(obs[0]))
        assert float(obs[2]) == errors[-1]
        np.testing.assert_allclose(obs[3], sum(errors), rtol=1e-6)
        np.testing.assert_allclose(obs[4], errors[-1] - errors[-2], rtol=1e-6)


@pytest.mark.parametrize(
    ("error_fn", "error", "message"),
    [
        ("obs[0]", TypeError, "error_fn\\(obs\\) -> \\(n,\\) errors, got str"),
        (lambda obs: obs[None], ValueError, "a scalar or a vector of errors .* got \\(1, 2\\)"),
        (lambda obs: obs[:0], ValueError, "a scalar or a vector of errors .* got \\(0,\\)"),
        (lambda obs: obs["e"], ValueError, "failed on Integrator's observation"),
        (lambda obs: obs > 0, ValueError, "must return numbers, got dtype bool"),
    ],
)
def test_a_bad_error_fn_is_refused_at_construction(error_fn, error, message):
    with pytest.raises(error, match=message):
        PIDTerms(Integrator(), error_fn=error_fn)
