"""Learning on small budgets over several seeds, thresholds from calibration runs.

The score of a seed is its last evaluation's mean return over 10 deterministic episodes.
Calibration (2026-11-29, this machine kind, seeds 0-2 as in the tests and 3-5 as a check):

- PPO, CartPole-v1, 30k steps, 4 envs x 128 steps, 4 epochs of 4 minibatches, 64-unit tanh:
  seeds 0-2: 414, 243, 500 (mean 386); seeds 3-5: 331, 404, 458 (mean 397).
  Threshold: mean >= 250 and every seed >= 100 (a random policy scores about 22).
- DQN, CartPole-v1, 30k steps, 4 envs, the paper's defaults: seeds 0-2: 96, 100, 90 (mean
  95); seeds 3-5: 161, 109, 112 (mean 127). Threshold: mean >= 60, every seed >= 40.
- SAC, Pendulum-v1, 8k steps, 1 env, learning from step 1,000, 64-unit relu: seeds 0-2:
  -156, -208, -189 (mean -184); seeds 3-5: -130, -155, -159 (mean -148).
  Threshold: mean >= -400, every seed >= -700 (a random policy scores about -1,200).
"""

import numpy as np

from ajax import DQN, PPO, SAC
from ajax.logging.wandb_logging import LoggingConfig

SEEDS = [0, 1, 2]


def last_returns(agent, n_timesteps: int, log_frequency: int) -> np.ndarray:
    _, evaluations = agent.train(
        seed=SEEDS, n_timesteps=n_timesteps, logging_config=LoggingConfig(log_frequency=log_frequency)
    )
    returns, timesteps = evaluations["Eval/episodic mean reward"], evaluations["timestep"]
    return np.array([row[steps >= 0][-1] for row, steps in zip(returns, timesteps, strict=True)])


def test_ppo_learns_cartpole():
    tanh64 = ("64", "tanh", "64", "tanh")
    agent = PPO(
        "CartPole-v1",
        n_envs=4,
        n_steps=128,
        batch_size=128,
        n_epochs=4,
        actor_architecture=tanh64,
        critic_architecture=tanh64,
    )
    scores = last_returns(agent, 30_000, 2_500)
    assert scores.mean() >= 250 and scores.min() >= 100, scores


def test_dqn_learns_cartpole():
    scores = last_returns(DQN("CartPole-v1", n_envs=4), 30_000, 2_500)
    assert scores.mean() >= 60 and scores.min() >= 40, scores


def test_sac_learns_pendulum():
    relu64 = ("64", "relu", "64", "relu")
    agent = SAC("Pendulum-v1", learning_starts=1_000, actor_architecture=relu64, critic_architecture=relu64)
    scores = last_returns(agent, 8_000, 1_000)
    assert scores.mean() >= -400 and scores.min() >= -700, scores
