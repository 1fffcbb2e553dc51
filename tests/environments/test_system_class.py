"""System classes: fixed and perturbed params, refused field lists, one draw per copy and per episode."""

import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax.environments.system_class import FixedSystem, SystemClassWrapper, UniformPerturbation

PERTURBED = ("m", "l")


@pytest.fixture(scope="module")
def pendulum():
    return gymnax.make("Pendulum-v1")


def test_a_fixed_system_is_always_its_params(pendulum):
    _, params = pendulum
    system = FixedSystem(params)
    assert system.sample(jax.random.PRNGKey(0)) is params
    assert system.sample(jax.random.PRNGKey(1)) is params


def test_uniform_perturbation_scales_the_named_fields_only_and_within_bounds(pendulum):
    _, params = pendulum
    scale = 0.3
    samples = jax.vmap(UniformPerturbation(params, PERTURBED, scale).sample)(
        jax.random.split(jax.random.PRNGKey(0), 500)
    )
    for name in PERTURBED:
        ratio = np.asarray(getattr(samples, name)) / getattr(params, name)
        assert ratio.min() >= 1 - scale - 1e-6 and ratio.max() <= 1 + scale + 1e-6
        assert ratio.min() < 1 - 0.8 * scale and ratio.max() > 1 + 0.8 * scale  # spread over the range
    assert not np.array_equal(samples.m, samples.l)  # each field draws its own factor
    single = UniformPerturbation(params, PERTURBED, scale).sample(jax.random.PRNGKey(1))
    for name in ("max_speed", "max_torque", "dt", "g", "max_steps_in_episode"):
        assert getattr(single, name) is getattr(params, name)  # untouched, not even cast
        np.testing.assert_array_equal(getattr(samples, name), np.float32(getattr(params, name)))


@pytest.mark.parametrize(
    ("fields", "scale", "message"),
    [
        (("max_sped",), 0.1, r"no field 'max_sped'\. Did you mean 'max_speed'\?.*Its fields: max_steps_in_episode"),
        (("max_steps_in_episode",), 0.1, r"float fields only.*'max_steps_in_episode' is int"),
        ((), 0.1, r"at least one field.*FixedSystem"),
        (("m",), 1.0, r"0 <= scale < 1, got 1\.0"),
        (("m",), -0.1, r"0 <= scale < 1"),
        (("m",), float("nan"), r"0 <= scale < 1"),
    ],
)
def test_uniform_perturbation_refuses_what_it_cannot_sample(pendulum, fields, scale, message):
    _, params = pendulum
    with pytest.raises(ValueError, match=message):
        UniformPerturbation(params, fields, scale)


def test_the_wrapper_refuses_a_system_class_of_another_env(pendulum):
    env, _ = pendulum
    _, cartpole_params = gymnax.make("CartPole-v1")
    with pytest.raises(TypeError, match=r"returns .*cartpole\.EnvParams, but Pendulum-v1 takes .*pendulum\.EnvParams"):
        SystemClassWrapper(env, FixedSystem(cartpole_params))


def test_the_wrapper_delegates_spaces_and_names(pendulum):
    env, params = pendulum
    wrapped = SystemClassWrapper(env, UniformPerturbation(params.replace(max_steps_in_episode=7), PERTURBED, 0.2))
    assert wrapped.default_params.max_steps_in_episode == 7
    assert wrapped.name == "SystemClassWrapper(Pendulum-v1)"
    assert wrapped.num_actions == 1
    assert wrapped.observation_space(params).shape == (3,)
    assert wrapped.action_space(params).shape == (1,)


def test_each_copy_draws_its_own_system(pendulum):
    env, params = pendulum
    wrapped = SystemClassWrapper(env, UniformPerturbation(params, PERTURBED, 0.2))
    keys = jax.random.split(jax.random.PRNGKey(0), 8)
    _, states = jax.vmap(wrapped.reset, in_axes=(0, None))(keys, params)
    assert len(np.unique(np.asarray(states.params.m))) == 8


def test_an_auto_reset_draws_a_new_system(pendulum):
    env, params = pendulum
    wrapped = SystemClassWrapper(env, UniformPerturbation(params, PERTURBED, 0.2))
    short = params.replace(max_steps_in_episode=2)
    _, state = wrapped.reset(jax.random.PRNGKey(0), short)
    first = float(state.params.m)
    action = jnp.array([0.0])
    _, state, _, _, truncated, _ = wrapped.step(jax.random.PRNGKey(1), state, action, short)
    assert not bool(truncated) and float(state.params.m) == first  # the episode keeps its system
    _, state, _, _, truncated, _ = wrapped.step(jax.random.PRNGKey(2), state, action, short)
    assert bool(truncated) and float(state.params.m) != first


def test_the_step_runs_the_drawn_system(pendulum):
    env, params = pendulum
    wrapped = SystemClassWrapper(env, UniformPerturbation(params, PERTURBED, 0.2))
    _, state = wrapped.reset(jax.random.PRNGKey(0), params)
    action = jnp.array([1.0])
    obs, _, reward, _, _ = wrapped.step_env(jax.random.PRNGKey(1), state, action, params)
    expected_obs, _, expected_reward, _, _ = env.step_env(jax.random.PRNGKey(1), state.env_state, action, state.params)
    np.testing.assert_array_equal(obs, expected_obs)
    assert float(reward) == float(expected_reward)


def test_gradients_flow_through_a_step(pendulum):
    env, params = pendulum
    wrapped = SystemClassWrapper(env.with_transition_gradients(), UniformPerturbation(params, PERTURBED, 0.2))
    _, state = wrapped.reset(jax.random.PRNGKey(0), params)

    def next_speed(action):
        obs, *_ = wrapped.step(jax.random.PRNGKey(1), state, action, params)
        return obs[2]

    grad = jax.grad(next_speed)(jnp.array([0.5]))
    assert np.isfinite(grad).all() and float(grad[0]) > 0.0
