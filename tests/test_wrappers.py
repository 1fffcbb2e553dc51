"""Environment wrappers: observation noise, chosen initial states, action clipping, flags kept."""

import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnax.environments.classic_control.pendulum import EnvState as PendulumState

from ajax.environments.create import prepare_env
from ajax.wrappers import AutoReset, ClipAction, InitialStateWrapper, ObservationMask, ObservationNoiseWrapper
from tests.probe_envs import BestAction, EndlessReward, OneStepReward, ProbeState, TerminalTwin

# Programs' floats compared bit for bit with the same arithmetic run otherwise (conftest.py).
pytestmark = pytest.mark.exact


def hanging_down(key, params):
    return PendulumState(theta=jnp.pi, theta_dot=0.0, last_u=jnp.array(0.0), time=0)


def _with_get_obs(cls):
    """A probe that can say what it observes in a state, as InitialStateWrapper requires."""
    return type(cls.__name__, (cls,), {"get_obs": lambda self, state, params=None, key=None: jnp.ones(1)})


def _rollout(env, params, actions):
    """Step through gymnax's own `step` (auto-reset included), as one program: obs, state, reward, flags per step."""

    def one(carry, inputs):
        obs, state = carry
        key, action = inputs
        obs, state, reward, terminated, truncated, info = env.step(key, state, action, params)
        return (obs, state), (obs, state, reward, terminated, truncated, info["final_observation"])

    @jax.jit
    def run(actions):
        obs, state = env.reset(jax.random.PRNGKey(0), params)
        keys = jax.random.split(jax.random.PRNGKey(1), len(actions))
        return jax.lax.scan(one, (obs, state), (keys, actions))[1]

    return jax.tree.map(np.asarray, run(actions))


def test_observation_noise_has_the_requested_std_and_leaves_the_state_alone():
    env = EndlessReward(continuous=True)  # observes [1.0] always, so the noise is what varies
    noisy = ObservationNoiseWrapper(env, 0.5)
    keys = jax.random.split(jax.random.PRNGKey(0), 4000)
    obs, _ = jax.vmap(noisy.reset, in_axes=(0, None))(keys, env.default_params)
    noise = np.asarray(obs) - 1.0
    assert abs(noise.mean()) < 0.03 and noise.std() == pytest.approx(0.5, abs=0.02)

    pendulum, params = gymnax.make("Pendulum-v1")
    wrapped = ObservationNoiseWrapper(pendulum, 0.5)
    key = jax.random.PRNGKey(3)
    _, state = pendulum.reset(key, params)
    obs, next_state, reward, _, _ = wrapped.step_env(key, state, jnp.array([1.0]), params)
    _, expected, expected_reward, _, _ = pendulum.step_env(key, state, jnp.array([1.0]), params)
    jax.tree.map(np.testing.assert_allclose, next_state, expected)  # Pendulum's step ignores its key
    assert float(reward) == pytest.approx(float(expected_reward))
    assert not np.allclose(obs, pendulum.get_obs(next_state))


def test_a_mask_hides_the_velocities_and_leaves_the_state_alone():
    inner = gymnax.make("CartPole-v1")[0]
    env = ObservationMask(inner, (True, False, True, False))
    params = env.default_params
    key = jax.random.PRNGKey(0)
    obs, state = env.reset(key, params)
    _, bare_state = inner.reset(key, params)
    np.testing.assert_array_equal(obs, inner.get_obs(bare_state, params) * jnp.array([1.0, 0.0, 1.0, 0.0]))
    obs, state, *_ = env.step(key, state, 1, params)
    assert obs[1] == 0.0 and obs[3] == 0.0 and state.x_dot != 0.0
    with pytest.raises(ValueError, match="one flag per observation entry"):
        ObservationMask(inner, (True, False))


def test_zero_noise_is_the_identity():
    pendulum, params = gymnax.make("Pendulum-v1")
    actions = jnp.full((5, 1), 0.7)
    for got, want in zip(
        _rollout(ObservationNoiseWrapper(pendulum, 0.0), params, actions),
        _rollout(pendulum, params, actions),
        strict=True,
    ):
        jax.tree.map(np.testing.assert_array_equal, got, want)


def test_an_initial_state_fn_may_edit_the_state_the_inner_reset_drew():
    """The README's form, fn(key, state, params): pin the angle and speed, keep the rest."""
    pendulum, params = gymnax.make("Pendulum-v1")
    env = InitialStateWrapper(pendulum, lambda key, state, _: state.replace(theta=jnp.asarray(0.5), theta_dot=0.0))
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    np.testing.assert_allclose(obs, [np.cos(0.5), np.sin(0.5), 0.0], atol=1e-6)
    assert int(state.time) == 0 and float(state.last_u) == 0.0


def test_episodes_start_in_the_chosen_state_and_so_do_auto_resets():
    pendulum, params = gymnax.make("Pendulum-v1")
    params = params.replace(max_steps_in_episode=3)
    env = InitialStateWrapper(pendulum, hanging_down)
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    np.testing.assert_allclose(obs, [-1.0, 0.0, 0.0], atol=1e-6)
    assert float(state.theta) == pytest.approx(np.pi)

    obs, states, _, terminated, truncated, final_obs = _rollout(env, params, jnp.full((7, 1), 2.0))
    np.testing.assert_array_equal(truncated, [0, 0, 1, 0, 0, 1, 0])
    assert not terminated.any()
    # At each time limit gymnax auto-resets: the episode's last obs moved away, the next starts hanging down.
    np.testing.assert_allclose(obs[[2, 5]], [[-1.0, 0.0, 0.0]] * 2, atol=1e-6)
    np.testing.assert_array_equal(states.time[[2, 5]], [0, 0])
    assert not np.allclose(final_obs[2], [-1.0, 0.0, 0.0], atol=1e-3)


def test_clip_action_steps_with_the_bound():
    pendulum, params = gymnax.make("Pendulum-v1")
    key = jax.random.PRNGKey(0)
    _, state = pendulum.reset(key, params)
    obs, clipped, reward, _, _ = ClipAction(pendulum).step_env(key, state, jnp.array([5.0]), params)
    want_obs, at_bound, want_reward, _, _ = pendulum.step_env(key, state, jnp.array([2.0]), params)
    assert float(reward) == pytest.approx(float(want_reward)) and float(clipped.last_u) == 2.0
    np.testing.assert_allclose(obs, want_obs)
    jax.tree.map(np.testing.assert_allclose, clipped, at_bound)
    # Pendulum clips inside too; BestAction does not (reward 1 - (a - 0.5)^2 on the box [-1, 1]).
    probe = BestAction(continuous=True)
    _, probe_state = probe.reset(key, probe.default_params)
    step = lambda env: env.step_env(key, probe_state, jnp.array([5.0]), probe.default_params)[2]  # noqa: E731
    out = [step(probe), step(ClipAction(probe))]
    np.testing.assert_allclose(out, [1.0 - 4.5**2, 0.75])


@pytest.mark.parametrize(
    "inner",
    [EndlessReward(continuous=True, episode_steps=3), OneStepReward(continuous=True), TerminalTwin(True, 2)],
    ids=lambda env: type(env).__name__,
)
def test_wrappers_keep_termination_and_truncation(inner):
    inner = _with_get_obs(type(inner))(continuous=True, episode_steps=inner.episode_steps)
    params = inner.default_params
    actions = jnp.zeros((7, 1))
    _, _, reward, terminated, truncated, _ = _rollout(inner, params, actions)
    assert (terminated | truncated).any()
    for env in (
        ObservationNoiseWrapper(inner, 0.3),
        InitialStateWrapper(inner, lambda key, params: ProbeState(time=0)),
        ClipAction(inner),
    ):
        _, _, got_reward, got_terminated, got_truncated, _ = _rollout(env, params, actions)
        np.testing.assert_array_equal(got_terminated, terminated, err_msg=env.name)
        np.testing.assert_array_equal(got_truncated, truncated, err_msg=env.name)
        np.testing.assert_array_equal(got_reward, reward, err_msg=env.name)


def test_wrappers_keep_the_inner_env_description():
    pendulum, params = gymnax.make("Pendulum-v1")
    env_args = prepare_env(ObservationNoiseWrapper(ClipAction(InitialStateWrapper(pendulum, hanging_down)), 0.1))
    assert env_args.continuous and env_args.observation_dim == 3 and env_args.action_high == (2.0,)
    assert env_args.max_episode_steps == 200
    assert env_args.env.name == "ObservationNoiseWrapper(ClipAction(InitialStateWrapper(Pendulum-v1)), 0.1)"
    assert env_args.env.num_actions == pendulum.num_actions


def test_bad_input_is_refused_at_construction():
    cartpole, _ = gymnax.make("CartPole-v1")
    for std in (-0.1, float("nan")):
        with pytest.raises(ValueError, match="std >= 0"):
            ObservationNoiseWrapper(cartpole, std)
    with pytest.raises(ValueError, match="continuous"):
        ClipAction(cartpole)
    with pytest.raises(TypeError, match="get_obs"):
        InitialStateWrapper(EndlessReward(), lambda key, params: ProbeState(time=0))
    with pytest.raises(TypeError, match="get_obs"):  # a wrapper has no observation of a state
        InitialStateWrapper(ObservationNoiseWrapper(cartpole, 0.1), lambda key, params: None)
    with pytest.raises(TypeError, match="fn"):
        InitialStateWrapper(cartpole, None)


def test_an_agent_trains_on_a_wrapped_env():
    from ajax import PPO

    cartpole, params = gymnax.make("CartPole-v1")
    agent = PPO(
        ObservationNoiseWrapper(cartpole, 0.01),
        env_params=params,
        n_envs=2,
        n_steps=32,
        batch_size=32,
        n_epochs=1,
        actor_architecture=("8", "relu"),
        critic_architecture=("8", "relu"),
    )
    state, _ = agent.train(seed=0, n_timesteps=64)
    leaves = [leaf for leaf in jax.tree.leaves(state) if jnp.issubdtype(jnp.asarray(leaf).dtype, jnp.floating)]
    assert leaves and all(np.isfinite(np.asarray(leaf)).all() for leaf in leaves)


def test_auto_reset_steps_exactly_as_gymnax_and_branches_on_episode_ends():
    env, params = gymnax.make("CartPole-v1")
    params = params.replace(max_steps_in_episode=7)
    wrapped = AutoReset(env)

    def rollout(env):
        def step(carry, key):
            state, _ = carry
            action_key, step_key = jax.random.split(key)
            action = jax.random.randint(action_key, (), 0, 2)
            obs, state, reward, terminated, truncated, info = env.step(step_key, state, action, params)
            return (state, obs), (obs, reward, terminated, truncated, info["final_observation"])

        _, state = env.reset(jax.random.PRNGKey(0), params)
        return jax.lax.scan(step, (state, jnp.zeros(4)), jax.random.split(jax.random.PRNGKey(1), 60))[1]

    expected, got = rollout(env), jax.jit(lambda: rollout(wrapped))()
    assert bool(jnp.any(expected[2] | expected[3]))  # episodes ended, by termination and by the limit
    for a, b in zip(jax.tree.leaves(expected), jax.tree.leaves(got), strict=True):
        np.testing.assert_array_equal(a, b)
    _, state = env.reset(jax.random.PRNGKey(0), params)
    step = lambda env: lambda s: env.step(jax.random.PRNGKey(0), s, 0, params)  # noqa: E731
    assert "cond[" in str(jax.make_jaxpr(step(wrapped))(state))
    assert "cond[" not in str(jax.make_jaxpr(step(AutoReset(env, differentiable=True)))(state))


@pytest.mark.parametrize(
    ("fn", "says"),
    [
        (lambda key: 0, "takes 1 positional argument; it must be fn\\(key, params\\)"),
        (lambda key, state, params, extra: 0, "takes 4 positional arguments"),
        (lambda key, params: key["x"], "failed when traced on Pendulum-v1"),
        (lambda key, state, params: params, "'EnvParams' object has no attribute 'theta'"),
    ],
)
def test_initial_state_fn_of_the_wrong_shape_is_refused_at_construction(fn, says):
    plant, _ = gymnax.make("Pendulum-v1")
    with pytest.raises(TypeError, match=says):
        InitialStateWrapper(plant, fn)
