"""benchmarks/world_models/dmc_rows.py: every task is a Playground DM Control task with TD-MPC2's
published points and their source, the points count only at their own budget, and a CPU-sized
run writes its full row and its learning-table row in decisions."""

from __future__ import annotations

import json

import pytest
from tests.benchmark_scripts import load_benchmark

pytest.importorskip("mujoco_playground")
rows = load_benchmark("world_models/dmc_rows")

TINY = [
    "--seeds",
    "2",
    "--env-steps",
    "400",
    "--eval-every",
    "200",
    "--set",
    "model_size=1",
    "num_samples=16",
    "num_elites=4",
    "num_pi_trajs=2",
    "iterations=1",
    "batch_size=8",
    "seed_steps=50",
    "episode_length=100",
]


def test_every_task_is_a_playground_dm_control_task_with_three_published_seeds():
    from mujoco_playground import registry

    assert len(rows.TASKS) >= 3
    for name, task in rows.TASKS.items():
        assert task.name == name and name in registry.dm_control_suite.ALL_ENVS
        assert len(task.published_seeds) == 3 and task.source.startswith("nicklashansen/tdmpc2 results/")
    # The reference's own means at 100,000 env steps (its seeds 1-3).
    assert rows.published(rows.TASKS["PendulumSwingup"], 100_000) == 724.0
    assert rows.published(rows.TASKS["WalkerWalk"], 100_000) == 961.9
    assert rows.published(rows.TASKS["WalkerWalk"], 200_000) is None  # no point at another budget


def test_the_settings_are_the_defaults_at_the_references_action_repeat():
    assert rows.keywords({}) == {"action_repeat": 2}
    args = rows.parse_args(["--set", "model_size=1", "mpc=False"])
    assert rows.keywords(args.overrides) == {"action_repeat": 2, "model_size": 1, "mpc": False}


@pytest.mark.parametrize("argv", [["--seeds", "0"], ["--env-steps", "1"], ["--set", "model_size"]])
def test_bad_arguments_are_refused(argv, capsys):
    with pytest.raises(SystemExit):
        rows.parse_args(argv)


@pytest.mark.slow
def test_a_cpu_sized_run_writes_a_full_row_and_a_learning_table_row(tmp_path, capsys):
    """CartpoleBalance, 400 env steps a seed at the repeat of 2, the 1M model and a small planner,
    100-step episodes, 2 seeds: about 50 s on two cores."""
    out, table = tmp_path / "rows.jsonl", tmp_path / "table.jsonl"
    assert rows.main(["--tasks", "CartpoleBalance", *TINY, "--out", str(out), "--table-out", str(table)]) == 0
    assert "TDMPC2 CartpoleBalance: IQM" in capsys.readouterr().out
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    (learning,) = [json.loads(line) for line in table.read_text().splitlines()]
    assert row["env_steps"] == 400 and row["n_timesteps"] == 200 and row["settings"]["action_repeat"] == 2
    assert row["curve"]["env_steps"] == [200, 400] and learning["curve"]["timestep"] == [100, 200]
    assert row["final_returns"] == [seed[-1] for seed in row["curve"]["per_seed"]]
    assert row["published"] is None and row["compile_s"] > 0 and row["exec_s"] > 0
    assert learning["agent"] == "TDMPC2" and learning["env_id"] == "CartpoleBalance" and learning["n_timesteps"] == 200
