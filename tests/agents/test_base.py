"""Bad input gets a clear error at construction (or a warning), saying what to do."""

import warnings

import pytest

from ajax import DQN, PPO, SAC, TDMPC2
from ajax.agents.base import BudgetWarning
from ajax.agents.registry import AGENTS
from ajax.logging.wandb_logging import LoggingConfig

SMALL = ("16", "relu")
TINY_TDMPC2 = {"model_size": 1, "enc_dim": 16, "mlp_dim": 16, "latent_dim": 16, "batch_size": 4}
TINY_TDMPC2 |= {"num_samples": 8, "num_elites": 2, "num_pi_trajs": 2, "iterations": 1}


def test_unknown_env_id_lists_the_closest_ids():
    with pytest.raises(ValueError, match=r"Unknown environment id 'CartPole-v2'.*Closest ids: CartPole-v1"):
        PPO("CartPole-v2")


def test_discrete_env_for_sac_and_continuous_env_for_dqn():
    with pytest.raises(ValueError, match="SAC acts in continuous.*CartPole.*discrete"):
        SAC("CartPole-v1")
    with pytest.raises(ValueError, match="DQN acts in discrete.*continuous"):
        DQN("Pendulum-v1")


def test_negative_timesteps_and_empty_seed_list():
    agent = DQN("CartPole-v1", architecture=SMALL, buffer_size=1000)
    with pytest.raises(ValueError, match="n_timesteps must be an integer >= 0"):
        agent.train(seed=0, n_timesteps=-1)
    with pytest.raises(ValueError, match="at least one seed"):
        agent.train(seed=[], n_timesteps=10)


def test_batch_size_that_does_not_divide_the_rollout():
    with pytest.raises(ValueError, match=r"batch_size=100 does not divide .* = 256 transitions"):
        PPO("CartPole-v1", n_envs=2, n_steps=128, batch_size=100)


def test_learning_starts_beyond_the_budget_warns():
    agent = DQN("CartPole-v1", learning_starts=1000, architecture=SMALL, buffer_size=1000)
    with pytest.warns(UserWarning, match=r"learning_starts=1000 leaves no update before the call.s end \(500 "):
        agent.train(seed=0, n_timesteps=500)


def test_seed_steps_beyond_the_budget_warn_and_reaching_them_updates():
    """TD-MPC2's burst of updates comes when the collected steps reach seed_steps, not past them."""
    agent = TDMPC2("Pendulum-v1", **TINY_TDMPC2, seed_steps=100)
    with pytest.warns(UserWarning, match=r"seed_steps=100 leaves no update before the call.s end \(99 timesteps\)"):
        state, _ = agent.train(seed=0, n_timesteps=99)
    assert int(state.n_updates[0]) == 0
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*leaves no update.*")
        state, _ = agent.train(seed=0, n_timesteps=100)
    assert int(state.n_updates[0]) == 100


def test_a_budget_shorter_than_one_rollout_warns_that_the_call_runs_it_whole():
    """PPO runs whole rollouts: asked for 20 steps of 2 x 16, it runs 32; asked for 32, it warns of nothing."""
    agent = PPO("CartPole-v1", n_envs=2, n_steps=16, batch_size=32, n_epochs=1, actor_architecture=SMALL)
    with pytest.warns(BudgetWarning, match=r"budget of 20 timesteps .* rollout of PPO \(n_steps=16 x n_envs=2 = 32"):
        state, _ = agent.train(seed=0, n_timesteps=20)
    assert int(state.collector_state.timestep[0]) == 32 and int(state.n_updates[0]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", BudgetWarning)
        agent.train(seed=0, n_timesteps=32)


def test_a_budget_shorter_than_one_apg_update_window_warns_before_anything_compiles():
    agent = AGENTS["APG"]("Pendulum-v1", n_envs=2, horizon=8, actor_architecture=SMALL)
    with warnings.catch_warnings(), pytest.raises(BudgetWarning, match=r"one update window of APG \(horizon=8 x n_"):
        warnings.simplefilter("error", BudgetWarning)
        agent.train(seed=0, n_timesteps=15)


def test_log_frequency_beyond_the_budget_warns():
    agent = PPO(
        "CartPole-v1",
        n_envs=2,
        n_steps=8,
        batch_size=8,
        n_epochs=1,
        actor_architecture=SMALL,
        critic_architecture=SMALL,
    )
    with pytest.warns(UserWarning, match="log_frequency=1000 exceeds"):
        _, evaluations = agent.train(seed=0, n_timesteps=64, logging_config=LoggingConfig(log_frequency=1000))
    assert evaluations["timestep"].tolist() == [[-1]]


def test_no_warning_on_a_sound_run():
    agent = DQN("CartPole-v1", learning_starts=10, batch_size=8, architecture=SMALL, buffer_size=100)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        agent.train(seed=0, n_timesteps=20)


def test_bad_hyperparameters():
    with pytest.raises(ValueError, match="alternates widths and activations"):
        SAC("Pendulum-v1", actor_architecture=("64", "relu", "64"))
    with pytest.raises(ValueError, match="Unknown activation 'rellu'"):
        PPO("CartPole-v1", critic_architecture=("64", "rellu"))
    with pytest.raises(ValueError, match="buffer must hold at least one batch"):
        SAC("Pendulum-v1", buffer_size=10, batch_size=256)
    with pytest.raises(ValueError, match="n_envs must be a positive integer"):
        DQN("CartPole-v1", n_envs=0)
    with pytest.raises(ValueError, match="clip_range must be >= 0"):
        PPO("CartPole-v1", clip_range=-0.1)
    with pytest.raises(ValueError, match="actor_learning_rate must be a finite number above 0"):
        SAC("Pendulum-v1", actor_learning_rate=0.0)


# DreamerV3 (recurrent by design) and TDMPC2 refuse memory= in their own words (their test files);
# TDMPC2MultiTask, built on a dataset rather than an env, takes no memory= argument at all.
OWN_WORDS = {"DreamerV3", "TDMPC2", "TDMPC2MultiTask"}


@pytest.mark.parametrize("name", sorted(n for n in AGENTS if not AGENTS[n].supports_memory and n not in OWN_WORDS))
def test_memory_on_an_agent_without_it(name):
    agent = AGENTS[name]
    with pytest.raises(NotImplementedError, match=f"{name} has no recurrent memory"):
        agent("Pendulum-v1" if agent.continuous else "CartPole-v1", memory={"kind": "gru", "hidden_size": 64})


def test_the_agents_with_memory_are_the_ones_the_docs_list():
    assert sorted(name for name in AGENTS if AGENTS[name].supports_memory) == [
        "APG",
        "ASAC",
        "PPO",
        "REDQ",
        "SAC",
        "TD3",
    ]


@pytest.mark.parametrize("name", ["TD3", "REDQ", "ASAC", "AVG"])
def test_a_discrete_env_for_a_continuous_agent(name):
    with pytest.raises(ValueError, match=f"{name} acts in continuous.*CartPole.*discrete"):
        AGENTS[name]("CartPole-v1")


def test_a_custom_env_without_the_gymnax_interface():
    class NotAnEnv:
        def reset(self, key):
            return None

    with pytest.raises(TypeError, match="lacks step, action_space, observation_space"):
        PPO(NotAnEnv())


def test_bad_logging_settings_are_refused():
    with pytest.raises(ValueError, match="mode is W&B's mode"):
        LoggingConfig(use_wandb=True, mode="sometimes")
    with pytest.raises(ValueError, match="log_frequency must be a positive"):
        LoggingConfig(log_frequency=0)
