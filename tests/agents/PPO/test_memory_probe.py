"""The memory probe: on CartPole without its velocities, only a PPO that remembers balances.

The observation is (x, 0, theta, 0): which way the pole moves can only be read from two
observations in a row. PPO with 8 envs, 128-step rollouts, 4 epochs (minibatches of 128
for the feed-forward agent; a recurrent one trains on whole rollouts), 200k steps
(195 rollouts: 199,680 steps). The score is the mean over seeds of each seed's last three
evaluations (at 140k, 160k and 180k steps; evaluations every 20k).

Calibration (2026-12-01, seeds 0 and 1, hidden size 64, 2 cores, 1.5-8 minutes a run):
feed-forward 44.3, 41.7 (43.0); GRU 303.0, 272.7 (287.8); LSTM 500.0, 372.0 (436.0);
transformer 155.3, 272.0 (213.7; 391.7, 356.0 with the full attention matrix, the same
maths summed in another order), and 44, 43 before its position bias started from ALiBi's
recency slopes; Mamba 260.0, 500.0 (380.0); GRU with bptt_length=32 and 4
minibatches 414.7, 229.3 (322.0). Thresholds: feed-forward below 150; every memory kind above 150 and above twice the
feed-forward score; GRU with `bptt_length=32` and 4 minibatches at least 80% of the GRU
trained on whole rollouts.
"""

import numpy as np
import pytest
from gymnax.environments.classic_control import CartPole

from ajax import PPO
from ajax.logging.wandb_logging import LoggingConfig
from ajax.networks.memory import MemoryConfig
from ajax.wrappers import ObservationMask

N_TIMESTEPS, EVERY, SEEDS = 200_000, 20_000, [0, 1]
pytestmark = pytest.mark.slow


def score(memory: MemoryConfig | None, **kwargs) -> float:
    env = ObservationMask(CartPole(), (True, False, True, False))
    agent = PPO(env, n_envs=8, n_steps=128, batch_size=128, n_epochs=4, memory=memory, **kwargs)
    _, evaluations = agent.train(seed=SEEDS, n_timesteps=N_TIMESTEPS, logging_config=LoggingConfig(log_frequency=EVERY))
    returns = np.asarray(evaluations["Eval/episodic mean reward"])[:, np.asarray(evaluations["timestep"])[0] >= 0]
    return float(returns[:, -3:].mean())


@pytest.fixture(scope="module")
def feed_forward() -> float:
    return score(None)


def test_feed_forward_ppo_cannot_balance_without_the_velocities(feed_forward):
    assert feed_forward < 150, feed_forward


@pytest.mark.parametrize("kind", ["gru", "lstm", "transformer", "mamba"])
def test_every_memory_kind_learns_what_it_cannot_see(kind, feed_forward):
    remembered = score(MemoryConfig(kind=kind, hidden_size=64))
    assert remembered > 150 and remembered > 2 * feed_forward, (remembered, feed_forward)


def test_truncated_bptt_learns_as_whole_rollouts_do():
    gru = MemoryConfig(kind="gru", hidden_size=64)
    whole, truncated = score(gru), score(gru, bptt_length=32, n_minibatches=4)
    assert truncated >= 0.8 * whole, (truncated, whole)
