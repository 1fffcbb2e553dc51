"""benchmarks/playground_rows.py: every task is a Playground DM Control task whose published PPO
configuration Ajax maps, every published return names its source, and a CPU-sized run of one
task writes its full row and its learning-table row."""

from __future__ import annotations

import json

import pytest
from tests.benchmark_scripts import load_benchmark

pytest.importorskip("mujoco_playground")
rows = load_benchmark("playground_rows")

TINY = [
    "--seeds",
    "2",
    "--set",
    "num_timesteps=160",
    "num_envs=4",
    "batch_size=4",
    "num_minibatches=2",
    "num_updates_per_batch=1",
    "unroll_length=5",
    "num_evals=3",
    "episode_length=20",
    "num_eval_envs=2",
    "network_factory={'policy_hidden_layer_sizes': (8,), 'value_hidden_layer_sizes': (8,)}",
]


def test_every_task_is_a_playground_dm_control_task_whose_ppo_config_ajax_maps():
    from mujoco_playground import registry

    from ajax.agents.brax_settings import ppo_from_brax

    assert len(rows.TASKS) >= 6
    for name, task in rows.TASKS.items():
        assert task.name == name and name in registry.dm_control_suite.ALL_ENVS
        run = ppo_from_brax(rows.playground_config(name))
        assert run.n_timesteps >= 60_000_000 and run.keywords["n_envs"] == 2048
        assert run.log_frequency == run.n_timesteps // 9  # 10 evaluations, Brax's first before training


def test_every_published_return_is_a_number_with_a_source_or_none_said_not_found():
    for task in rows.TASKS.values():
        assert isinstance(task.source, str) and task.source.strip()
        if task.published is None:
            assert task.source.startswith("not found")
        else:
            assert isinstance(task.published, int | float) and "not found" not in task.source


def test_pendulum_swingup_runs_playgrounds_defaults_as_its_config_returns_them():
    # brax_ppo_config sets action_repeat=4 only for "PendulumSwingUp", not the task's id (the docstring says so).
    config = rows.playground_config("PendulumSwingup")
    assert (config["action_repeat"], config["num_updates_per_batch"]) == (1, 16)
    assert rows.playground_config("FingerSpin")["discounting"] == 0.95


def test_overrides_and_the_budget_scale_reach_the_config_and_the_table_says_what_changed():
    args = rows.parse_args(["--tasks", "CheetahRun", "--budget-scale", "0.1", "--set", "num_envs=1024"])
    settings = args.settings["CheetahRun"]
    assert (settings["num_timesteps"], settings["num_envs"], settings["batch_size"]) == (6_000_000, 1024, 1024)
    differs = rows.changed("CheetahRun", settings)
    assert differs == {"num_timesteps": 6_000_000, "num_envs": 1024}
    assert rows.settings_label(differs) == "Playground brax_ppo_config (num_envs=1024, num_timesteps=6e+06)"
    assert rows.settings_label({}) == "Playground brax_ppo_config"
    assert rows.machine({"backend": "tpu", "device_kind": "TPU v5 lite"}) == {"machine": "TPU v5e"}
    assert rows.machine({"backend": "cpu", "device_kind": "cpu"}) == {}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--set", "clipping_epsilon_value=0.2"], "no Ajax counterpart"),
        (["--set", "not_a_key=1"], "not a keyword"),
        (["--set", "network_factory={'hidden_layer_sizes': (8,)}"], "network_factory"),
        (["--set", "num_envs=7"], "does not split"),
        (["--seeds", "0"], "positive"),
    ],
)
def test_settings_ajax_cannot_run_are_refused_before_anything_runs(argv, message, capsys):
    with pytest.raises(SystemExit):
        rows.parse_args(["--tasks", "CartpoleBalance", *argv])
    assert message in capsys.readouterr().err


def test_a_cpu_sized_run_writes_a_full_row_and_a_learning_table_row(tmp_path, capsys):
    """CartpoleBalance at 160 steps a seed, 4 copies, 8-unit networks, 20-step episodes, 2 seeds:
    about 25 s on two cores (MJX's physics compiles slowly on a CPU)."""
    out, table = tmp_path / "rows.jsonl", tmp_path / "table.jsonl"
    argv = ["--tasks", "CartpoleBalance", *TINY, "--out", str(out), "--table-out", str(table)]
    assert rows.main(argv) == 0
    assert "PPO CartpoleBalance: IQM" in capsys.readouterr().out
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    (learning,) = [json.loads(line) for line in table.read_text().splitlines()]
    assert row["task"] == "CartpoleBalance" and row["seeds"] == [0, 1] and row["n_timesteps"] == 160
    assert row["settings"]["num_envs"] == 4 and row["overrides"]["num_timesteps"] == 160
    assert row["ajax_keywords"]["n_steps"] == 10 and row["ajax_keywords"]["actor_architecture"] == ["8", "swish"]
    # evaluations at 80 and 160 steps (num_evals=3), then the state the run ends in (whole rollouts: 200 steps)
    assert row["curve"]["timestep"] == [80, 160, 200]
    assert len(row["curve"]["per_seed"]) == 2 and all(len(seed) == 3 for seed in row["curve"]["per_seed"])
    assert row["final_returns"] == [seed[-1] for seed in row["curve"]["per_seed"]]
    assert len(row["final3"]) == 2 and row["iqm_ci"] is None  # below three seeds, no interval
    assert row["published"] is None and row["published_source"].startswith("not found")
    assert row["compile_s"] > 0 and row["exec_s"] > 0 and row["steps"] == 400
    assert row["backend"] == "cpu" and "machine" not in row and row["commit"] and row["timestamp"]
    for key in ("agent", "env_id", "settings", "n_timesteps", "seeds", "curve", "iqm", "iqm_ci", "wall_s"):
        assert key in learning
    assert learning["env_id"] == "CartpoleBalance" and learning["settings"].startswith("Playground brax_ppo_config (")
    assert "machine" not in learning and learning["curve"] == row["curve"]


@pytest.mark.slow
def test_a_chunked_run_stopped_between_calls_resumes_to_the_one_call_run(tmp_path, capsys):
    """The same CPU-sized run in one call, and with --checkpoint-dir stopped after its first
    evaluation period (--minutes 0) and resumed by the same command: one run, the same row."""

    def run(*extra: str, name: str) -> int:
        out, table = tmp_path / f"{name}.jsonl", tmp_path / f"{name}_table.jsonl"
        return rows.main(["--tasks", "CartpoleBalance", *TINY, "--out", str(out), "--table-out", str(table), *extra])

    assert run(name="one") == 0
    chunked = ["--checkpoint-dir", str(tmp_path / "ckpt")]
    assert run(*chunked, "--minutes", "0", name="chunked") == 1  # stopped after its first call, no row
    assert "stopped at 80 of 160 steps" in capsys.readouterr().out
    assert not (tmp_path / "chunked.jsonl").exists()
    progress = json.loads((tmp_path / "ckpt" / "CartpoleBalance.json").read_text())
    assert progress["timestep"] == 80 and progress["timings"]["calls"] == 1
    assert run(*chunked, name="chunked") == 0
    assert "resumed at 80 steps" in capsys.readouterr().out
    (one,) = [json.loads(line) for line in (tmp_path / "one.jsonl").read_text().splitlines()]
    (resumed,) = [json.loads(line) for line in (tmp_path / "chunked.jsonl").read_text().splitlines()]
    assert resumed["curve"] == one["curve"] and resumed["final_returns"] == one["final_returns"]
    assert (resumed["train_calls"], one["train_calls"]) == (2, 1) and resumed["steps"] == one["steps"]


@pytest.mark.slow
def test_brax_seeds_run_braxs_own_trainer_on_the_playground_task_at_the_same_config(tmp_path, capsys):
    """Brax's ppo.train on the wrapped Playground task, one fresh process a seed: about 50 s."""
    import math

    out = tmp_path / "brax.jsonl"
    assert rows.main(["--tasks", "CartpoleBalance", *TINY, "--brax-seeds", "3", "--out", str(out)]) == 0
    assert "brax  PPO CartpoleBalance:" in capsys.readouterr().out
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert (row["library"], row["task"], row["settings"]["seed"], row["settings"]["num_envs"]) == (
        "brax",
        "CartpoleBalance",
        3,
        4,
    )
    assert row["source"].startswith("Playground brax_ppo_config('CartpoleBalance')")
    assert row["steps"] >= 160 and row["compile_s"] > 0 and math.isfinite(row["final_return"])
    assert row["eval_episodes"] == 2 and row["eval_actions"] == "sampled"


def test_brax_seeds_keep_the_parent_process_off_the_accelerator():
    """A TPU admits one process: the workers must find it free, so the parent that parses the
    arguments (and imports gymnax, which builds arrays as it loads) stays on the CPU."""
    import jax

    before = jax.config.jax_platforms
    try:
        rows.parse_args(["--tasks", "CartpoleBalance", "--brax-seeds", "0"])
        assert jax.config.jax_platforms == "cpu"
    finally:
        jax.config.update("jax_platforms", before)
