"""SAC's Brax setting, `reward_scaling` (docs/brax.md): every replayed reward times the scale
before any critic target reads it, in SAC and in each of its descendants."""

import jax
import numpy as np
import pytest

from ajax import SAC
from ajax.agents.base import BudgetWarning
from ajax.agents.registry import AGENTS
from ajax.agents.SAC.core import soft_q_target
from ajax.agents.SAC.train_SAC import SoftActorCritic
from tests.conftest import agent_parts, first_seed
from tests.kit import env_of

SMALL = ("16", "relu")


def test_reward_scaling_multiplies_the_replayed_rewards_and_nothing_else():
    settings = dict(n_envs=2, learning_starts=64, batch_size=8, actor_architecture=SMALL, critic_architecture=SMALL)
    plain, scaled = SAC("Pendulum-v1", **settings), SAC("Pendulum-v1", reward_scaling=10.0, **settings)
    with pytest.warns(BudgetWarning):  # the warm-up's 64 steps in the replay, and no update
        state = first_seed(plain.train(seed=0, n_timesteps=64)[0])
    key = jax.random.key(1)
    batch = agent_parts(SoftActorCritic, plain).sample(state, key)
    scaled_batch = agent_parts(SoftActorCritic, scaled).sample(state, key)
    np.testing.assert_allclose(scaled_batch.reward, 10.0 * batch.reward, rtol=1e-6)
    for field in ("obs", "action", "next_obs", "terminated", "truncated"):
        np.testing.assert_array_equal(getattr(scaled_batch, field), getattr(batch, field))


def test_the_soft_target_reads_the_scaled_reward():
    # Brax's critic target: y = reward_scaling r + gamma (1 - d) (min Q' - alpha log pi'):
    # r = 0.5 scaled by 10, Q' = 2, log pi' = -1, alpha 0.2, gamma 0.9: 5 + 0.9 * 2.2 = 6.98.
    target = soft_q_target(10.0 * np.float32(0.5), np.bool_(False), np.float32(2.0), np.float32(-1.0), 0.2, 0.9)
    assert float(target) == pytest.approx(6.98, rel=1e-6)


@pytest.mark.parametrize("name", sorted(name for name, agent in AGENTS.items() if issubclass(agent, SAC)))
def test_every_sac_descendant_takes_the_scale(name):
    agent = AGENTS[name](env_of(name), reward_scaling=3.0)
    assert agent.agent_config.reward_scaling == 3.0
    assert AGENTS[name](env_of(name)).agent_config.reward_scaling == 1.0
