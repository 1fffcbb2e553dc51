"""The RL Baselines3 Zoo presets: every one builds its agent, and the agent holds every Zoo setting."""

import numpy as np
import pytest

from ajax import zoo
from ajax.agents.registry import AGENTS
from ajax.schedule import linear


def start(value):
    """A Zoo `lin_x` setting's value at the start of the run; anything else as it is."""
    return float(value.removeprefix("lin_")) if isinstance(value, str) and value.startswith("lin_") else value


def ent_coef(agent):
    """PPO's entropy weight; SAC's temperature, "auto" when it is learned."""
    config = agent.agent_config
    if agent.name == "PPO":
        return config.ent_coef
    return "auto" if config.learn_alpha else config.alpha_init


def realized(agent, name: str):
    """What the constructed agent holds for the Zoo setting `name`, in the Zoo's units (gradient_steps
    as the updates of a round, which -1 makes one per env step the round collected)."""
    config = agent.agent_config
    schedule = getattr(config, "schedule", None)
    readers = {
        "n_envs": lambda: agent.env_args.n_envs,
        "learning_rate": lambda: agent.optimizer_args["critic"].learning_rate,
        "max_grad_norm": lambda: agent.optimizer_args["critic"].max_grad_norm,
        "net_arch": lambda: tuple(int(width) for width in agent.network_args.critic_architecture[::2]),
        "train_freq": lambda: schedule.train_freq,
        "gradient_steps": lambda: schedule.per_round(agent.env_args.n_envs),
        "ent_coef": lambda: (
            config.ent_coef if agent.name == "PPO" else ("auto" if config.learn_alpha else config.alpha_init)
        ),
        "noise_std": lambda: config.exploration_noise,
        "normalize": lambda: agent.env_args.normalization.observations and agent.env_args.normalization.rewards,
        "clip_range": lambda: config.clip_range.start if isinstance(config.clip_range, linear) else config.clip_range,
        "top_quantiles_to_drop_per_net": lambda: config.drop_per_critic,
    }
    return readers[name]() if name in readers else getattr(config, name)


@pytest.mark.parametrize("key", sorted(zoo.PRESETS), ids=lambda key: f"{key[0]}-{key[1]}")
def test_every_preset_builds_its_agent_with_every_zoo_setting(key):
    preset = zoo.PRESETS[key]
    agent = AGENTS[preset.agent].from_zoo(preset.env_id)
    for name, value in preset.settings.items():
        expected = start(value)
        if name == "gradient_steps" and value == -1:
            expected = preset.settings["train_freq"] * preset.settings["n_envs"]
        assert realized(agent, name) == (pytest.approx(expected) if isinstance(expected, float) else expected), name
    # Both networks alike, and the actor's rate the critic's (DQN builds its Q-network alone).
    layers = [getattr(agent.network_args, f"{role}_architecture") for role in agent.networks]
    assert all(architecture == layers[0] for architecture in layers)
    rates = [optimizer.learning_rate for optimizer in agent.optimizer_args.values()]
    assert all(rate == rates[0] for rate in rates)


def test_the_zoos_numbers_are_the_files():
    # hyperparams/dqn.yml, CartPole-v1: 128 updates every 256 steps, the target copied every 10.
    cartpole = zoo.preset("DQN", "CartPole-v1")
    assert (cartpole.n_timesteps, cartpole.published) == (50_000, 500.0)
    assert {
        k: cartpole.zoo[k] for k in ("learning_rate", "train_freq", "gradient_steps", "target_update_interval")
    } == {
        "learning_rate": 2.3e-3,
        "train_freq": 256,
        "gradient_steps": 128,
        "target_update_interval": 10,
    }
    # hyperparams/td3.yml, Pendulum-v1 over SB3's TD3 defaults.
    td3 = zoo.preset("TD3", "Pendulum-v1").settings
    assert (td3["gamma"], td3["learning_starts"], td3["net_arch"], td3["batch_size"]) == (0.98, 10_000, (400, 300), 256)
    # hyperparams/sac.yml: a fixed entropy coefficient on MountainCarContinuous, learned on Pendulum.
    assert zoo.preset("SAC", "MountainCarContinuous-v0").kwargs["learn_alpha"] is False
    assert zoo.preset("SAC", "Pendulum-v1").kwargs["learn_alpha"] is True


def test_a_lin_clip_range_falls_to_zero_over_the_presets_budget():
    preset = zoo.preset("PPO", "CartPole-v1")
    assert preset.kwargs["clip_range"] == linear(0.2, 0.0, 100_000)
    assert any("lin_0.001" in difference for difference in preset.differences)


def test_overrides_go_over_the_preset():
    agent = AGENTS["DQN"].from_zoo("CartPole-v1", learning_starts=0, double_q=True)
    assert agent.agent_config.learning_starts == 0 and agent.agent_config.double_q
    assert agent.agent_config.schedule.per_round(agent.env_args.n_envs) == 128


def test_a_missing_preset_names_the_ones_that_exist():
    with pytest.raises(ValueError, match=r"No Zoo preset for DQN on 'CartPole-v0'. Did you mean 'CartPole-v1'\?"):
        zoo.preset("DQN", "CartPole-v0")
    with pytest.raises(ValueError, match="no presets for AVG; presets exist for CrossQ, DQN, PPO, SAC, TD3, TQC"):
        AGENTS["AVG"].from_zoo("Pendulum-v1")


def final_returns(agent, n_timesteps: int, seeds) -> np.ndarray:
    """Each seed's return over 10 greedy episodes from the state its run ends in."""
    state, _ = agent.train(seed=list(seeds), n_timesteps=n_timesteps)
    return np.asarray(agent.evaluate(state, num_episode_test=10)["Eval/episodic mean reward"])


@pytest.mark.learning
def test_the_ppo_cartpole_preset_learns_on_a_small_budget():
    """PPO's learning test in the default suite (its defaults' test, test_ppo.py, is slow).

    Calibration (2026-12-01): the preset's 100k steps, seeds 0-4: 500 on every seed from 40k
    on. At 20,480 steps, greedy returns from the final state: seeds 0-2 500, 383, 500 (mean
    461); seeds 3-5 403, 198, 500 (mean 367). Threshold: mean >= 300, every seed >= 150.

    20,480 steps sat mid-learning, where a seed's return hangs on float rounding: on an
    AVX-512 machine (2026-12-07, same code and lock) seeds 0-2 gave 120, 488 and 500, and
    seed 0 gave 169 when trained in a batch of ten seeds. Recalibrated there at 30,720
    steps: seeds 0-2, 3-5 and 6-8, each batch of three, 500 on all nine; in one batch of ten
    seeds, 500 on eight, 410 and 314. The threshold is unchanged.
    """
    scores = final_returns(AGENTS["PPO"].from_zoo("CartPole-v1"), 30_720, range(3))
    assert scores.mean() >= 300 and scores.min() >= 150, scores


@pytest.mark.learning
def test_the_dqn_cartpole_preset_learns_on_a_small_budget():
    """DQN's learning test in the default suite (its defaults' test, test_dqn.py, is slow).

    Calibration (2026-12-01): the preset's 50k steps, seeds 0-4: 500 on every seed. At
    15,000 steps (58 rounds of 256 steps, 128 updates each from the fourth), greedy returns
    from the final state: seeds 0-2 140, 81, 98 (mean 107); seeds 3-5 261, 157, 139 (mean
    186); at 25,000 steps 500, 205, 199 and 222, 120, 105; a random policy scores about 20.
    Threshold: mean >= 70, every seed >= 50.
    """
    scores = final_returns(AGENTS["DQN"].from_zoo("CartPole-v1"), 15_000, range(3))
    assert scores.mean() >= 70 and scores.min() >= 50, scores


@pytest.mark.slow
@pytest.mark.learning
def test_the_sac_mountain_car_preset_climbs_the_hill_with_gsde_on_a_small_budget():
    """SAC's learning test for the Zoo presets, and gSDE's: without it no seed reaches the flag.

    Slow (50 s): the default suite's SAC learning test is the memory recall task's
    (tests/agents/test_recurrent_recall.py).

    Calibration (2026-12-01): the preset's 50k steps, seeds 0-4: 95.6, 95.7, 95.6, 94.7, 95.1
    (with Ajax's white Gaussian noise, 0 on every seed: the car learns to stand still). At
    5,000 steps, greedy returns from the final state: seeds 0-2 95.9, -4.6, 96.2; seeds 3-5
    96.8, 36.1, 92.6. Threshold: two seeds of three at 90 (the flag), mean >= 50.
    """
    scores = final_returns(AGENTS["SAC"].from_zoo("MountainCarContinuous-v0"), 5_000, range(3))
    assert (scores >= 90).sum() >= 2 and scores.mean() >= 50, scores


# The targets: the published budget, 5 seeds, at least 4 of them at the bar.
TARGETS = [
    pytest.param("DQN", "CartPole-v1", 475.0, id="DQN-CartPole-v1"),
    pytest.param("SAC", "Pendulum-v1", -200.0, id="SAC-Pendulum-v1"),
    pytest.param("TD3", "Pendulum-v1", -200.0, id="TD3-Pendulum-v1"),
    pytest.param("SAC", "MountainCarContinuous-v0", 90.0, id="SAC-MountainCarContinuous-v0"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("agent", "env_id", "bar"), TARGETS)
def test_a_zoo_preset_reaches_the_published_result_on_four_of_five_seeds(agent, env_id, bar):
    scores = final_returns(AGENTS[agent].from_zoo(env_id), zoo.preset(agent, env_id).n_timesteps, range(5))
    assert (scores >= bar).sum() >= 4, scores
