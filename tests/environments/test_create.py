"""Environment creation: ids, custom envs, episode length, action repeat, the action map in use."""

import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax.environments.create import ActionRepeat, prepare_env
from ajax.environments.ids import known_env_ids
from ajax.environments.interaction import step_envs
from tests.probe_envs import BestAction


def test_gymnax_ids_and_spaces():
    assert "CartPole-v1" in known_env_ids() and "Pendulum-v1" in known_env_ids()
    pendulum = prepare_env("Pendulum-v1", n_envs=2)
    assert pendulum.continuous and pendulum.action_dim == 1 and pendulum.observation_dim == 3
    assert pendulum.action_low == (-2.0,) and pendulum.action_high == (2.0,)
    assert pendulum.max_episode_steps == 200
    cartpole = prepare_env("CartPole-v1", n_envs=1)
    assert not cartpole.continuous and cartpole.action_dim == 2


def test_episode_length_and_a_custom_env_object():
    env_args = prepare_env("CartPole-v1", episode_length=50)
    assert env_args.env_params.max_steps_in_episode == 50 and env_args.max_episode_steps == 50
    custom = prepare_env(BestAction(continuous=True))
    assert custom.continuous and custom.observation_dim == 1


def test_image_observations_are_flattened():
    env_args = prepare_env("Breakout-MinAtar")
    assert env_args.observation_dim == 10 * 10 * 4


def test_action_repeat_sums_rewards_over_inner_steps():
    env, params = gymnax.make("Pendulum-v1")
    repeated = ActionRepeat(env, 2)
    key = jax.random.PRNGKey(0)
    _, state = env.reset(key, params)
    action = jnp.array([1.5])
    # Pendulum's dynamics ignore the key: two inner steps by hand give the expected sum.
    _, mid, r1, _, _ = env.step_env(key, state, action, params)
    _, end, r2, _, _ = env.step_env(key, mid, action, params)
    obs, out, reward, terminated, _ = repeated.step_env(key, state, action, params)
    assert float(reward) == pytest.approx(float(r1 + r2), rel=1e-6)
    assert int(out.time) == 2 and not bool(terminated)
    np.testing.assert_allclose(out.theta, end.theta, rtol=1e-6)
    assert prepare_env("Pendulum-v1", action_repeat=2).max_episode_steps == 100


def test_every_step_maps_agent_actions_onto_the_box():
    env_args = prepare_env(BestAction(continuous=True), n_envs=3)
    key = jax.random.PRNGKey(0)
    _, env_state = jax.vmap(env_args.env.reset, in_axes=(0, None))(jax.random.split(key, 3), env_args.env_params)
    # Box [-1, 1]: the map is the identity inside it and clips outside it; reward 1 - (a - 0.5)^2.
    _, _, reward, _, _, _ = step_envs(key, env_state, jnp.array([[0.5], [2.0], [-3.0]]), env_args)
    np.testing.assert_allclose(reward, [1.0, 0.75, -1.25], rtol=1e-6)


class OldStepAPI(BestAction):
    """A gymnax 0.x-style env: step returns (obs, state, reward, done, info), one flag for both endings."""

    def step(self, key, state, action, params=None):
        obs, state, reward, terminated, truncated, info = super().step(key, state, action, params)
        return obs, state, reward, terminated | truncated, info


def test_a_custom_env_must_follow_the_gymnax_interface():
    class NotAnEnv:
        def reset(self, key, params):
            return None

    with pytest.raises(TypeError, match="lacks step, action_space, observation_space, default_params"):
        prepare_env(NotAnEnv())
    with pytest.raises(TypeError, match=r"gymnax 1.x's \(obs, state, reward, terminated, truncated, info\)"):
        prepare_env(OldStepAPI(continuous=True))
