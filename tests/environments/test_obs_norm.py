"""Observation and reward normalisation: the statistics by hand, and carried, saved and resumed with a run."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import PPO, SAC
from ajax.checkpoint import restore_into, save_checkpoint
from ajax.environments.obs_norm import (
    NormalizationConfig,
    init_normalizer,
    init_statistics,
    normalize_observation,
    observe_reset,
    observe_step,
    update_statistics,
)

PRIOR = 1e-4  # the initial statistics' weight (mean 0, variance 1)
HORIZON = 192  # three 64-step rollouts and the horizon's own; split 128 + 64, two rollouts per call


def test_running_statistics_equal_the_mean_and_variance_of_everything_seen():
    batches = [np.random.default_rng(i).normal(3.0 * i, 1.0 + i, size=(5 + i, 3)) for i in range(4)]
    stats = init_statistics((3,))
    for batch in batches:
        stats = update_statistics(stats, jnp.asarray(batch))
    seen = np.concatenate(batches)
    assert float(stats.count) == pytest.approx(len(seen) + PRIOR)
    np.testing.assert_allclose(stats.mean, seen.mean(axis=0), rtol=1e-4)
    np.testing.assert_allclose(stats.var, seen.var(axis=0), rtol=1e-4)


def test_observations_are_standardised_with_the_statistics_that_include_them():
    config = NormalizationConfig(observations=True, clip_observations=10.0)
    first, second = jnp.array([[1.0, 10.0], [3.0, 30.0]]), jnp.array([[5.0, 50.0], [7.0, 70.0]])
    normalizer, seen_first = observe_reset(init_normalizer(config, (2,), 2), first, config)
    normalizer, seen, final, reward = observe_step(normalizer, second, second, jnp.ones(2), jnp.zeros(2, bool), config)
    everything = np.concatenate([first, second])
    expected = (np.asarray(second) - everything.mean(0)) / np.sqrt(everything.var(0))
    np.testing.assert_allclose(seen, expected, rtol=1e-3)
    np.testing.assert_allclose(final, expected, rtol=1e-3)
    np.testing.assert_allclose(seen_first, [[-1.0, -1.0], [1.0, 1.0]], rtol=1e-3)  # first batch alone
    np.testing.assert_allclose(reward, [1.0, 1.0])  # rewards untouched when only observations are on
    np.testing.assert_allclose(normalize_observation(normalizer, second, config), seen)
    tight = NormalizationConfig(observations=True, clip_observations=0.5)
    clipped = observe_step(normalizer, second, second, jnp.ones(2), jnp.zeros(2, bool), tight)[1]
    assert float(jnp.max(jnp.abs(clipped))) == pytest.approx(0.5)


def test_rewards_are_scaled_by_the_spread_of_the_discounted_return():
    config = NormalizationConfig(rewards=True, gamma=0.5, clip_rewards=100.0)
    normalizer = init_normalizer(config, (1,), 1)
    rewards, dones = [2.0, 4.0, 1.0, 3.0], [False, True, False, False]
    returns, g, scaled = [], 0.0, []
    for r, d in zip(rewards, dones, strict=True):
        g = 0.5 * g + r  # G <- gamma G + r, restarted after an episode's end
        returns.append(g)
        scaled.append(r / np.sqrt(np.var(returns)) if len(returns) > 1 else None)
        obs = jnp.zeros((1, 1))
        normalizer, _, _, out = observe_step(normalizer, obs, obs, jnp.array([r]), jnp.array([d]), config)
        if d:
            g = 0.0
        if scaled[-1] is not None:
            assert float(out[0]) == pytest.approx(scaled[-1], rel=1e-3)
    np.testing.assert_allclose(normalizer.returns.var, np.var(returns), rtol=1e-3)
    assert np.sign(float(out[0])) == 1.0  # scaled, not re-centred


@pytest.fixture(scope="module")
def normalised_ppo():
    agent = PPO(
        "CartPole-v1",
        n_envs=2,
        n_steps=32,
        batch_size=32,
        n_epochs=1,
        actor_architecture=("8", "relu"),
        critic_architecture=("8", "relu"),
        normalize_observations=True,
        normalize_rewards=True,
    )
    state, _ = agent.train(seed=[0, 1], n_timesteps=HORIZON)
    return agent, state


def test_a_run_carries_its_statistics_in_the_agent_state(normalised_ppo):
    agent, state = normalised_ppo
    normalizer = state.collector_state.normalizer
    # Two reset observations and two per tick of both envs: every observation the collector saw.
    seen = 2 + np.asarray(state.collector_state.timestep, np.float64)
    np.testing.assert_allclose(normalizer.observations.count, seen + PRIOR, rtol=1e-6)
    assert normalizer.observations.mean.shape == (2, 4) and normalizer.discounted_return.shape == (2, 2)
    assert not np.allclose(normalizer.observations.var, 1.0)
    # Evaluation reads the statistics: other statistics, other episodes.
    shifted = normalizer.replace(observations=normalizer.observations.replace(mean=normalizer.observations.mean + 3.0))
    scrambled = state.replace(collector_state=state.collector_state.replace(normalizer=shifted))
    entropies = [agent.evaluate(s, 2)["Eval/episodic entropy"] for s in (state, scrambled)]
    assert not np.allclose(*entropies)


def test_statistics_are_saved_and_a_normalised_run_resumes_exactly(normalised_ppo, tmp_path):
    agent, _ = normalised_ppo
    skeleton, _ = agent.train(seed=[0, 1], n_timesteps=0, total_timesteps=HORIZON)  # the fixture's fresh program
    # The untrained state with the integer types a restored state has (not weak): both calls,
    # two rollouts each, then run one compiled program.
    untrained = jax.tree.map(lambda x: jnp.asarray(np.asarray(x)), skeleton)
    first, _ = agent.train(initial_state=untrained, n_timesteps=128, total_timesteps=HORIZON)
    path = save_checkpoint(first, tmp_path / "state.ckpt")
    restored = restore_into(skeleton, path)
    np.testing.assert_array_equal(
        restored.collector_state.normalizer.observations.mean, first.collector_state.normalizer.observations.mean
    )
    resumed, _ = agent.train(initial_state=restored, n_timesteps=HORIZON - 128, total_timesteps=HORIZON)
    whole = normalised_ppo[1]
    for a, b in zip(jax.tree.leaves(resumed), jax.tree.leaves(whole), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5)


def test_off_by_default_and_refused_where_the_paper_normalises_itself():
    assert SAC("Pendulum-v1").env_args.normalization == NormalizationConfig(gamma=0.99)
    from ajax import AVG, UDRL

    for agent in (AVG, UDRL):
        with pytest.raises(TypeError, match="normalize_observations"):
            agent("Pendulum-v1", normalize_observations=True)
