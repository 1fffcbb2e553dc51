"""benchmarks/brax_race.py: Brax's published settings and Ajax's keywords from them, how Brax's
epochs are told apart from its compilation, the shim, and (slow) a CPU-sized race end to end."""

from __future__ import annotations

import inspect
import json

import pytest
from tests.benchmark_scripts import load_benchmark

race = load_benchmark("brax_race")

ACTIONS = {"ant": 8, "humanoid": 17}  # brax.envs' ant and humanoid actuators
TINY = [
    "--budget",
    "480",
    "--set",
    "num_envs=4",
    "batch_size=4",
    "num_minibatches=2",
    "num_updates_per_batch=1",
    "num_evals=4",
    "episode_length=50",
    "num_eval_envs=2",
    "grad_updates_per_step=2",
    "min_replay_size=64",
    "max_replay_size=2000",
    "network_factory={'policy_hidden_layer_sizes': (8,), 'value_hidden_layer_sizes': (8,), 'hidden_layer_sizes': (8,)}",
]


def settings(agent: str, env: str, argv: tuple[str, ...] = ()) -> dict:
    args = race.parse_args(["--agents", agent, "--envs", env, *argv])
    return race.resolve(race.RACES[agent, env], args.budget, args.budget_scale, args.seed, args.overrides)


def test_ppo_gets_n_steps_and_minibatches_from_braxs_segments_as_docs_brax_says():
    from ajax.agents.brax_settings import ppo_from_brax

    ant = ppo_from_brax(settings("ppo", "ant")).keywords
    assert (ant["n_envs"], ant["n_steps"], ant["unroll_length"], ant["n_minibatches"]) == (4096, 80, 5, 32)
    assert (ant["n_epochs"], ant["reward_scaling"], ant["ent_coef"], ant["vf_coef"]) == (4, 10, 1e-2, 0.25)
    humanoid = ppo_from_brax(settings("ppo", "humanoid")).keywords
    # 1,024 segments x 32 minibatches x 10 steps over 2,048 copies
    assert (humanoid["n_envs"], humanoid["n_steps"], humanoid["unroll_length"]) == (2048, 160, 10)
    assert (humanoid["n_epochs"], humanoid["reward_scaling"], humanoid["ent_coef"]) == (8, 0.1, 1e-3)
    for keywords in (ant, humanoid):
        assert keywords["shared_optimizer"] and not keywords["bootstrap_on_truncation"]
        assert (keywords["advantage_estimator"], keywords["policy_distribution"]) == ("vtrace", "tanh_gaussian")
        assert keywords["actor_architecture"] == ("32", "swish") * 4
        assert keywords["critic_architecture"] == ("256", "swish") * 5


def test_sac_takes_braxs_updates_a_step_replay_and_temperature():
    from ajax.agents.brax_settings import sac_from_brax

    humanoid = sac_from_brax(settings("sac", "humanoid"), ACTIONS["humanoid"])
    kw = humanoid.keywords
    assert (kw["n_envs"], kw["batch_size"], kw["train_freq"], kw["gradient_steps"]) == (128, 512, 1, 32)
    assert (kw["buffer_size"], kw["learning_starts"], kw["reward_scaling"]) == (1_048_576, 8192, 100)
    assert kw["target_entropy"] == -8.5 and kw["alpha_learning_rate"] == 3e-4
    assert humanoid.n_timesteps == 2_306_867 and humanoid.num_episode_test == 128
    ant = sac_from_brax(settings("sac", "ant"), ACTIONS["ant"]).keywords
    assert (ant["gradient_steps"], ant["gamma"], ant["target_entropy"]) == (64, 0.997, -4.0)
    assert ant["actor_architecture"] == ant["critic_architecture"] == ("256", "relu") * 2


def test_the_budget_seed_and_overrides_reach_both_trainers_and_each_takes_only_its_own_keys():
    ppo = settings("ppo", "ant", ("--budget", "1000", "--budget-scale", "0.5", "--seed", "3", *TINY[2:]))
    assert (ppo["num_timesteps"], ppo["seed"], ppo["num_envs"], ppo["num_evals"]) == (500, 3, 4, 4)
    assert "grad_updates_per_step" not in ppo and "min_replay_size" not in ppo
    assert ppo["network_factory"] == {"policy_hidden_layer_sizes": (8,), "value_hidden_layer_sizes": (8,)}
    sac = settings("sac", "ant", tuple(TINY))
    assert (sac["num_timesteps"], sac["grad_updates_per_step"], sac["min_replay_size"]) == (480, 2, 64)
    assert "unroll_length" not in sac and sac["network_factory"] == {"hidden_layer_sizes": (8,)}
    assert settings("ppo", "humanoid", ("--budget-scale", "0.1"))["num_timesteps"] == 5_000_000
    keywords, network = race.brax_call("sac", sac)
    assert "network_factory" not in keywords and network == {"hidden_layer_sizes": (8,)}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--set", "num_evals=2"], "num_evals must be at least 3"),
        (["--agents", "sac", "--budget", "5000"], "min_replay_size"),
        (["--set", "no_such_key=1"], "not a keyword"),
        (["--set", "hidden_layer_sizes=(8,)"], "inside network_factory"),
        (["--set", "num_envs"], "key=value"),
    ],
)
def test_settings_that_cannot_race_are_refused_before_anything_runs(argv, message, capsys):
    with pytest.raises(SystemExit):
        race.parse_args(argv)
    assert message in capsys.readouterr().err


def test_the_keys_it_lets_you_set_are_braxs_own_and_its_races_use_no_other():
    ppo_train = pytest.importorskip("brax.training.agents.ppo.train")
    sac_train = pytest.importorskip("brax.training.agents.sac.train")
    for agent, trainer in (("ppo", ppo_train), ("sac", sac_train)):
        parameters = inspect.signature(trainer.train).parameters
        assert race.TRAINER_KEYS[agent] <= set(parameters)
        for env in race.ENVS:
            assert set(race.RACES[agent, env].settings) <= race.TRAINER_KEYS[agent]


def progress(at, step, walltime, eval_s=1.0):
    return race.Progress(at=at, step=step, walltime=walltime, eval_s=eval_s, episode_reward=float(step))


def test_brax_execution_counts_the_epochs_after_the_first_that_compiled_nothing():
    # Before training (step 0), then three epochs of 100 steps: the first took 10 s, the second 2 s
    # with a compile inside it, the third 1 s. Each call comes 1 s (its evaluation) after its epoch.
    calls = [progress(100.0, 0, None), progress(112.0, 100, 10.0), progress(115.0, 200, 12.0)]
    calls.append(progress(117.0, 300, 13.0))
    spans = [(101.0, 109.0), (112.5, 113.5), (116.5, 116.9)]  # epoch 1's compile, epoch 2's, an evaluator's
    epochs = race.brax_epochs(calls, spans)
    assert epochs == [{"steps": 100, "s": 2.0, "compile_s": 1.0}, {"steps": 100, "s": 1.0, "compile_s": 0.0}]
    execution = race.brax_execution(epochs)
    assert (execution["exec_s"], execution["exec_steps"], execution["exec_steps_per_s"]) == (1.0, 100, 100.0)
    assert execution["exec_from"] == "1 of 2 epochs after the first, no compile in them"
    # With every later epoch compiling something, the epochs less their compile.
    fallback = race.brax_execution([{"steps": 100, "s": 2.0, "compile_s": 1.0}] * 2)
    assert (fallback["exec_s"], fallback["exec_steps_per_s"]) == (2.0, 100.0)
    assert fallback["exec_from"].endswith("less the compile inside them")
    assert race.brax_execution([])["exec_steps_per_s"] is None


def test_the_shim_replicates_onto_brax_pmaps_mesh_axis():
    import jax
    import jax.numpy as jnp
    import numpy as np

    race.install_device_put_replicated()
    placed = jax.device_put_replicated({"w": jnp.ones(3), "count": 0}, jax.local_devices()[:1])
    assert placed["w"].shape == (1, 3) and placed["count"].shape == (1,)
    assert placed["w"].sharding.mesh.axis_names == (race.BRAX_PMAP_AXIS,)
    same = jax.pmap(lambda tree: tree, axis_name=race.BRAX_PMAP_AXIS)(placed)
    assert same["w"].sharding == placed["w"].sharding
    np.testing.assert_array_equal(np.asarray(same["w"]), np.ones((1, 3)))


def test_ajax_reset_restart_gives_ajax_braxs_restart_and_nothing_else():
    pytest.importorskip("brax")
    argv = ("--budget", "480", "--set", "num_envs=4", "batch_size=4", "num_minibatches=2", "episode_length=50")
    args = race.parse_args(["--agents", "ppo", "--envs", "ant", *argv, "--ajax-reset", "restart"])
    assert [job["ajax_reset"] for job in race.jobs(args)] == ["restart", "restart"]
    given = settings("ppo", "ant", argv)
    (fresh, run), (restart, _) = (race.ajax_agent("ppo", "ant", given, reset) for reset in ("fresh", "restart"))
    assert (fresh.env_args.env.fresh_reset, restart.env_args.env.fresh_reset) == (True, False)
    assert restart.env_args.max_episode_steps == fresh.env_args.max_episode_steps == 50
    env_keys = ("env_id", "env_params", "episode_length")  # the restart's env carries them
    settings_of = lambda agent: {  # noqa: E731
        key: value for key, value in agent.config.items() if key not in env_keys and not callable(value)
    }
    assert settings_of(restart) == settings_of(fresh) and run.keywords["n_envs"] == 4


def test_the_summary_and_the_ratios_read_a_pair_of_rows():
    common = {"agent": "PPO", "env": "ant", "device_kind": "TPU v5 lite", "exec_from": "x", "whole_s": 9.0}
    common.update(trace_s=1.0, lower_s=1.0, backend_compile_s=8.0, steps=1000)
    brax = {**common, "library": "brax", "exec_steps_per_s": 100.0, "compile_s": 10.0, "final_return": 5.0}
    ajax = {**common, "library": "ajax", "exec_steps_per_s": 150.0, "compile_s": 6.0, "eval_compile_s": 2.0}
    ajax["final_return"] = 4.0
    (ratio,) = race.ratios([brax, ajax, {**ajax, "env": "humanoid", "error": "boom"}])
    assert ratio["execution_ratio"] == 1.5 and (ratio["ajax_compile_s"], ratio["brax_compile_s"]) == (8.0, 10.0)
    assert "exec 150 steps/s" in race.summary(ajax) and "+ evaluation 2.0 s" in race.summary(ajax)
    assert race.summary({**brax, "error": "Traceback\nValueError: no"}).endswith("error: ValueError: no")


@pytest.mark.slow
@pytest.mark.parametrize("agent", ["ppo", "sac"])
def test_a_cpu_sized_race_writes_a_row_for_each_library(agent, tmp_path, capsys):
    """Brax's trainer and Ajax's agent on ant, 480 steps of 4 copies and 8-unit networks (two
    fresh processes, about two minutes on two cores: ant's physics compiles slowly on a CPU)."""
    pytest.importorskip("brax")
    out = tmp_path / "race.jsonl"
    assert race.main(["--agents", agent, "--envs", "ant", *TINY, "--out", str(out)]) == 0
    brax, ajax = (json.loads(line) for line in out.read_text().splitlines())
    assert (brax["library"], ajax["library"]) == ("brax", "ajax")
    for row in (brax, ajax):
        assert (row["agent"], row["env"], row["n_timesteps"], row["device_kind"]) == (agent.upper(), "ant", 480, "cpu")
        assert row["commit"] and row["settings"]["num_envs"] == 4 and row["source"]
        assert row["steps"] >= 480 and row["exec_steps_per_s"] > 0 and row["exec_steps"] > 0
        assert row["compile_s"] > 0 and row["trace_s"] > 0 and row["backend_compile_s"] > 0
        assert isinstance(row["final_return"], float) and row["eval_episodes"] == 2
    assert len(brax["epochs"]) == 2 and brax["exec_from"].startswith("2 of 2 epochs")  # no compile after the first
    assert [step for step, _ in brax["returns"]][0] == 0 and brax["eval_actions"] == "sampled"
    assert ajax["eval_compile_s"] > 0 and ajax["ajax_keywords"]["n_envs"] == 4
    if agent == "ppo":
        assert (ajax["ajax_keywords"]["n_steps"], ajax["ajax_keywords"]["n_minibatches"]) == (10, 2)
    else:
        assert (ajax["ajax_keywords"]["gradient_steps"], ajax["ajax_keywords"]["target_entropy"]) == (2, -4.0)
    assert '"execution_ratio"' in capsys.readouterr().out
