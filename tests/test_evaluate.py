"""The evaluation's discounted returns, which the value bias compares the critic with."""

import jax.numpy as jnp
import numpy as np

from ajax.evaluate import discounted_returns


def test_discounted_returns_restart_at_episode_ends():
    reward = jnp.array([1.0, 1.0, 1.0, 1.0])[:, None]
    done = jnp.array([0, 1, 0, 1], bool)[:, None]
    np.testing.assert_allclose(discounted_returns(reward, done, 0.5)[:, 0], [1.5, 1.0, 1.5, 1.0])


def test_evaluating_a_state_again_reruns_its_program_instead_of_compiling_it_again():
    import jax

    from ajax import PPO

    compiles = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, duration, **_: compiles.append(event) if event.endswith("backend_compile_duration") else None
    )
    agent = PPO("CartPole-v1", n_envs=2, n_steps=16, batch_size=16, n_epochs=1)
    state, _ = agent.train(seed=[0, 1], n_timesteps=32)
    first = agent.evaluate(state, num_episode_test=2, seed=3)
    compiled = len(compiles)
    other_seed = agent.evaluate(state, num_episode_test=2, seed=4)
    again = agent.evaluate(state, num_episode_test=2, seed=3)
    assert len(compiles) == compiled  # no backend compile after the first evaluation
    assert set(other_seed) == set(first)
    for name in first:
        np.testing.assert_array_equal(again[name], first[name])
