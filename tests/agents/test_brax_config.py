"""ajax.agents.brax_settings: a Brax or Playground trainer configuration becomes Ajax's keywords,
as docs/brax.md tables them, and what Ajax cannot follow is refused by its key."""

from __future__ import annotations

import inspect

import pytest

from ajax import PPO, SAC
from ajax.agents.brax_settings import (
    PPO_DEFAULTS,
    PPO_NETWORKS,
    SAC_DEFAULTS,
    SAC_NETWORKS,
    ppo_from_brax,
    sac_from_brax,
)
from tests.benchmark_scripts import load_benchmark

# Brax's training notebook, train_fn['ant'], as the race beside Brax's trainer runs it (docs/brax.md
# writes the same run out by hand).
ANT = load_benchmark("brax_race").RACES["ppo", "ant"].settings


def test_brax_ants_ppo_config_becomes_the_keywords_the_docs_write_out():
    run = ppo_from_brax(ANT)
    kw = run.keywords
    assert kw["n_envs"] == 4096 and kw["n_steps"] == 80  # 2,048 x 32 x 5 / 4,096
    assert (kw["unroll_length"], kw["n_minibatches"], kw["n_epochs"]) == (5, 32, 4)
    assert (kw["gamma"], kw["gae_lambda"], kw["clip_range"], kw["ent_coef"]) == (0.97, 0.95, 0.3, 1e-2)
    assert kw["vf_coef"] == 0.25 and kw["reward_scaling"] == 10
    assert kw["actor_learning_rate"] == kw["critic_learning_rate"] == 3e-4 and kw["shared_optimizer"]
    assert kw["max_grad_norm"] is None and kw["bootstrap_on_truncation"] is False
    assert (kw["advantage_estimator"], kw["policy_distribution"]) == ("vtrace", "tanh_gaussian")
    assert kw["actor_architecture"] == ("32", "swish") * 4 and kw["critic_architecture"] == ("256", "swish") * 5
    assert (kw["episode_length"], kw["action_repeat"]) == (1000, 1)
    assert run.train_keywords() == {"n_timesteps": 50_000_000, "seed": 1, "num_episode_test": 128}
    assert run.log_frequency == 50_000_000 // 9  # one evaluation before training, nine over it


def test_the_mapped_keywords_build_a_ppo_whose_minibatches_are_brax_segments():
    settings = {**ANT, "num_envs": 8, "batch_size": 4, "num_minibatches": 4, "unroll_length": 8, "episode_length": 200}
    run = ppo_from_brax(settings)
    agent = PPO("Pendulum-v1", **run.keywords)
    config = agent.agent_config
    assert config.n_steps == 16 and config.batch_size == 4 * 8  # four segments of eight steps a minibatch
    assert config.unroll_length == 8 and config.shared_optimizer and config.policy_distribution == "tanh_gaussian"


def test_brax_sac_config_becomes_sacs_keywords_with_brax_temperature():
    run = sac_from_brax(
        {"num_timesteps": 100_000, "num_envs": 4, "grad_updates_per_step": 8, "min_replay_size": 1024}, action_dim=6
    )
    kw = run.keywords
    assert kw["buffer_size"] == 100_000  # Brax's max_replay_size None holds the whole budget
    assert (kw["train_freq"], kw["gradient_steps"], kw["learning_starts"]) == (1, 8, 1024)
    assert kw["target_entropy"] == -3.0 and kw["alpha_learning_rate"] == 3e-4
    assert kw["actor_architecture"] == ("256", "relu") * 2 and kw["gamma"] == 0.9
    agent = SAC("Pendulum-v1", **sac_from_brax({"num_timesteps": 5_000, "num_envs": 2}, action_dim=1).keywords)
    assert agent.agent_config.target_entropy == -0.5


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"clipping_epsilon_value": 0.2}, "clipping_epsilon_value=0.2 has no Ajax counterpart"),
        ({"learning_rate_schedule": "ADAPTIVE_KL"}, "learning_rate_schedule='ADAPTIVE_KL' has no Ajax counterpart"),
        ({"num_envs": 3}, "does not split over num_envs=3"),
        ({"entropy_bonus": 0.1}, "'entropy_bonus' is not a keyword of brax's ppo.train"),
        ({"network_factory": {"policy_obs_key": "state", "value_obs_key": "privileged_state"}}, "privileged critic"),
        ({"network_factory": {"activation": "relu"}}, "Ajax maps only"),
    ],
)
def test_what_ajax_cannot_follow_is_refused_by_its_key(change, message):
    with pytest.raises(ValueError, match=message):
        ppo_from_brax({**ANT, **change})


def test_loop_keys_are_dropped_and_a_budget_is_required():
    run = ppo_from_brax({**ANT, "num_resets_per_eval": 10, "progress_fn": print, "use_pmap_on_reset": False})
    assert "num_resets_per_eval" not in run.keywords
    with pytest.raises(ValueError, match="needs num_timesteps"):
        ppo_from_brax({key: value for key, value in ANT.items() if key != "num_timesteps"})


def test_the_defaults_are_those_of_the_installed_brax():
    pytest.importorskip("brax")
    from brax.training.agents.ppo import networks as ppo_networks
    from brax.training.agents.ppo import train as ppo
    from brax.training.agents.sac import networks as sac_networks
    from brax.training.agents.sac import train as sac

    def defaults(fn):
        parameters = inspect.signature(fn).parameters.items()
        return {name: p.default for name, p in parameters if p.default is not inspect.Parameter.empty}

    for ours, fn in [
        (PPO_DEFAULTS, ppo.train),
        (SAC_DEFAULTS, sac.train),
        (PPO_NETWORKS, ppo_networks.make_ppo_networks),
        (SAC_NETWORKS, sac_networks.make_sac_networks),
    ]:
        theirs = defaults(fn)
        assert set(ours) - set(theirs) <= {"episode_length"}  # sac.train requires it: None here means the env's
        assert {key: ours[key] for key in ours if key in theirs} == {key: theirs[key] for key in ours if key in theirs}


def test_every_playground_dm_control_ppo_config_maps():
    pytest.importorskip("mujoco_playground")
    from mujoco_playground import dm_control_suite
    from mujoco_playground.config import dm_control_suite_params

    for name in dm_control_suite.ALL_ENVS:
        run = ppo_from_brax(dm_control_suite_params.brax_ppo_config(name))
        assert run.keywords["n_steps"] * run.keywords["n_envs"] == 1024 * 32 * 30, name
