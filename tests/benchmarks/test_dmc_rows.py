"""benchmarks/world_models/dmc_rows.py: every task is a Playground DM Control task with TD-MPC2's
and DreamerV3's published points and their sources, the points count only at their own budget,
a CPU-sized run writes its full row and its learning-table row in decisions, and a run trained
in chunks through checkpoints, over several commands, is the one call's run."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tests.benchmark_scripts import load_benchmark

pytest.importorskip("mujoco_playground")
rows = load_benchmark("world_models/dmc_rows")

# Two seeds, 400 env steps, an evaluation every 200: each agent's keywords follow --set.
SHORT = ["--seeds", "2", "--env-steps", "400", "--eval-every", "200", "--set"]
TINY = SHORT + [
    "model_size=1",
    "num_samples=16",
    "num_elites=4",
    "num_pi_trajs=2",
    "iterations=1",
    "batch_size=8",
    "seed_steps=50",
    "episode_length=100",
]
# DreamerV3 at the 1m model on 3 env copies: 100 decisions a chunk are not a whole number of
# ticks of 3 rows, so a chunk ends short of its multiple of --eval-every and the next one makes up for it.
TINY_DREAMER = (
    ["--agent", "DreamerV3"]
    + SHORT
    + [
        "model_size=1m",
        "n_envs=3",
        "batch_size=2",
        "batch_length=4",
        "train_ratio=8",
        "episode_length=50",
        "buffer_size=999",
    ]
)


def outputs(tmp_path, name):
    out, table = tmp_path / f"{name}.jsonl", tmp_path / f"{name}_table.jsonl"
    return out, table, ["--out", str(out), "--table-out", str(table)]


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_every_task_is_a_playground_dm_control_task_with_three_published_seeds_for_each_agent():
    from mujoco_playground import registry

    assert len(rows.TASKS) >= 3
    for name, task in rows.TASKS.items():
        assert task.name == name and name in registry.dm_control_suite.ALL_ENVS
        assert set(task.published) == set(rows.AGENTS)
        for agent, points in task.published.items():
            assert len(points.seeds) == 3 and points.source.startswith("nicklashansen/tdmpc2 results/")
            assert ("results/dreamerv3/" in points.source) == (agent == "DreamerV3")
    # The reference's own means at 100,000 env steps (its seeds 1-3).
    assert rows.published(rows.TASKS["PendulumSwingup"], 100_000) == 724.0
    assert rows.published(rows.TASKS["WalkerWalk"], 100_000) == 961.9
    assert rows.published(rows.TASKS["WalkerWalk"], 200_000) is None  # no point at another budget


def test_dreamerv3s_published_returns_are_the_score_files_at_100k_env_steps():
    """nicklashansen/tdmpc2 results/dreamerv3/<task>.csv, each seed's reward at step 100000."""
    expected = {
        "CartpoleBalance": ((839.7, 951.2, 946.9), 912.6, "cartpole-balance.csv at add30b5"),
        "CartpoleSwingup": ((637.2, 718.6, 674.4), 676.7, "cartpole-swingup.csv at add30b5"),
        "PendulumSwingup": ((457.1, 811.7, 829.1), 699.3, "pendulum-swingup.csv at 88095e7"),
        "WalkerWalk": ((669.2, 651.8, 569.4), 630.1, "walker-walk.csv at 88095e7"),
    }
    for name, (seeds, mean, source) in expected.items():
        task = rows.TASKS[name]
        assert task.published["DreamerV3"].seeds == seeds
        assert f"results/dreamerv3/{source}, step 100000, seeds 1-3" in task.published["DreamerV3"].source
        assert rows.published(task, 100_000, "DreamerV3") == mean
        assert rows.published_seeds(task, 100_000, "DreamerV3") == list(seeds)
        assert rows.published(task, 50_000, "DreamerV3") is None
    # A file without a point at the budget publishes none, rather than one made up.
    missing = rows.Task("CartpoleBalance", {"DreamerV3": rows.Published(None, "no point at 100000")})
    assert rows.published(missing, 100_000, "DreamerV3") is None
    assert rows.published_seeds(missing, 100_000, "DreamerV3") is None


def test_the_settings_are_each_references_dmc_settings():
    assert rows.keywords({}) == {"action_repeat": 2}
    args = rows.parse_args(["--set", "model_size=1", "mpc=False"])
    assert args.agent == "TDMPC2" and args.checkpoint_dir is None
    assert rows.keywords(args.overrides, args.agent) == {"action_repeat": 2, "model_size": 1, "mpc": False}
    # The April 2024 reference's dmc_proprio: 12m, ratio 512, 16 envs, 16 x 65 rows (64 after the context), repeat 2.
    args = rows.parse_args(["--agent", "DreamerV3", "--set", "train_ratio=1024"])
    assert rows.keywords(args.overrides, args.agent) == {
        "action_repeat": 2,
        "model_size": "12m",
        "train_ratio": 1024,
        "n_envs": 16,
        "batch_size": 16,
        "batch_length": 64,
    }


@pytest.mark.parametrize(
    "argv",
    [
        ["--seeds", "0"],
        ["--env-steps", "1"],
        ["--set", "model_size"],
        ["--agent", "SAC"],
        ["--minutes", "-1"],
        ["--save-minutes", "-1", "--checkpoint-dir", "/tmp/never-written"],
        ["--save-minutes", "2"],  # spaces a chunked run's checkpoints: no --checkpoint-dir, no chunks
    ],
)
def test_bad_arguments_are_refused(argv, capsys):
    with pytest.raises(SystemExit):
        rows.parse_args(argv)


def test_the_clock_stops_only_between_chunks_and_never_before_a_commands_first():
    assert rows.Clock(None).may_start_chunk()
    clock = rows.Clock(0)
    assert clock.may_start_chunk()  # --minutes 0: one chunk a command
    clock.chunk_done(exec_s=1.0)
    assert not clock.may_start_chunk()
    clock = rows.Clock(1)
    clock.chunk_done(exec_s=10.0, compile_s=55.0)
    assert clock.may_start_chunk()
    assert not clock.may_start_chunk(new_program=True)  # another task compiles its program first
    clock.chunk_done(exec_s=120.0)  # the next chunk would end past the minute
    assert not clock.may_start_chunk()


def test_a_calls_evaluations_extend_the_curve_at_the_runs_timesteps():
    progress = rows.fresh_progress(rows.run_identity("TDMPC2", "CartpoleBalance", {}, 2, 400, 200))
    first = {"timestep": np.array([[100, -1]] * 2), rows.RETURN: np.array([[1.0, np.nan], [2.0, np.nan]])}
    rows.add_evaluations(progress, first)
    rows.add_evaluations(progress, {"timestep": np.array([[-1]] * 2), rows.RETURN: np.full((2, 1), np.nan)})
    rows.add_evaluations(progress, {"timestep": np.array([[200]] * 2), rows.RETURN: np.array([[3.0], [4.0]])})
    assert progress["curve"] == {"timestep": [100, 200], "per_seed": [[1.0, 3.0], [2.0, 4.0]]}
    with pytest.raises(RuntimeError, match="not past the curve's last"):
        rows.add_evaluations(progress, {"timestep": np.array([[200]] * 2), rows.RETURN: np.ones((2, 1))})


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--seeds", "3"], "--seeds"),
        (["--env-steps", "800"], "--env-steps"),
        (["--eval-every", "100"], "--eval-every"),
        (["--set", "model_size=5"], "--set"),
    ],
)
def test_a_checkpoint_made_with_other_settings_is_refused_naming_the_flag(tmp_path, argv, flag):
    """Refused before anything trains: the progress file beside the checkpoint holds the settings."""
    checkpoints = tmp_path / "checkpoints"
    base = rows.parse_args(["--tasks", "CartpoleBalance", *TINY])
    identity = rows.run_identity(
        "TDMPC2", "CartpoleBalance", rows.keywords(base.overrides), base.seeds, base.env_steps, base.eval_every
    )
    progress = {**rows.fresh_progress(identity), "target": 100, "timestep": 100, "chunks": 1}
    rows.write_json(rows.checkpoint_paths(checkpoints, "TDMPC2", "CartpoleBalance")[1], progress)
    out, table, files = outputs(tmp_path, "rows")
    changed = [*TINY]
    for key, value in zip(argv[::2], argv[1::2], strict=True):
        if key == "--set":
            changed[changed.index(value.split("=")[0] + "=1")] = value
        else:
            changed[changed.index(key) + 1] = value
    with pytest.raises(SystemExit, match=flag) as refused:
        rows.main(["--tasks", "CartpoleBalance", *changed, *files, "--checkpoint-dir", str(checkpoints)])
    assert "other settings" in str(refused.value) and "--checkpoint-dir" in str(refused.value)
    assert not out.exists() and not table.exists()


def test_a_task_whose_checkpoint_is_done_writes_no_rows_again(tmp_path, capsys):
    checkpoints = tmp_path / "checkpoints"
    args = rows.parse_args(["--tasks", "CartpoleBalance", *TINY])
    identity = rows.run_identity(
        "TDMPC2", "CartpoleBalance", rows.keywords(args.overrides), args.seeds, args.env_steps, args.eval_every
    )
    done = {**rows.fresh_progress(identity), "target": 200, "timestep": 200, "chunks": 2, "done": True}
    rows.write_json(rows.checkpoint_paths(checkpoints, "TDMPC2", "CartpoleBalance")[1], done)
    out, table, files = outputs(tmp_path, "rows")
    assert rows.main(["--tasks", "CartpoleBalance", *TINY, *files, "--checkpoint-dir", str(checkpoints)]) == 0
    assert "done, its rows written" in capsys.readouterr().out
    assert not out.exists() and not table.exists()


@pytest.fixture(scope="module")
def one_call(tmp_path_factory):
    """The TINY run of CartpoleBalance in one call: its full row and its learning-table row. Compiled
    as users compile, as the slow tests that use it are (conftest's switch is function-scoped)."""
    import jax

    tmp_path = tmp_path_factory.mktemp("one_call")
    out, table, files = outputs(tmp_path, "rows")
    before = jax.config.values["jax_disable_most_optimizations"]
    jax.config.update("jax_disable_most_optimizations", False)
    try:
        assert rows.main(["--tasks", "CartpoleBalance", *TINY, *files]) == 0
    finally:
        jax.config.update("jax_disable_most_optimizations", before)
    ((row,), (learning,)) = lines(out), lines(table)
    return row, learning


@pytest.mark.slow
def test_a_cpu_sized_run_writes_a_full_row_and_a_learning_table_row(one_call):
    """CartpoleBalance, 400 env steps a seed at the repeat of 2, the 1M model and a small planner,
    100-step episodes, 2 seeds: 20-60 s on one core, as Ajax's compile cache holds its programs or not."""
    row, learning = one_call
    assert row["agent"] == "TDMPC2" and row["chunks"] == 1
    assert row["env_steps"] == 400 and row["n_timesteps"] == 200 and row["settings"]["action_repeat"] == 2
    assert row["curve"]["env_steps"] == [200, 400] and learning["curve"]["timestep"] == [100, 200]
    assert row["final_returns"] == [seed[-1] for seed in row["curve"]["per_seed"]]
    assert row["published"] is None and row["compile_s"] > 0 and row["exec_s"] > 0
    assert learning["agent"] == "TDMPC2" and learning["env_id"] == "CartpoleBalance" and learning["n_timesteps"] == 200
    assert learning["settings"].startswith("the paper's (5M, planner, action repeat 2) (model_size=1, ")


def same_run(chunked, whole):
    """The two rows' curves and returns, equal to float tolerance (resuming is exact: they are equal)."""
    assert chunked["curve"]["env_steps"] == whole["curve"]["env_steps"]
    np.testing.assert_allclose(chunked["curve"]["per_seed"], whole["curve"]["per_seed"], rtol=0, atol=1e-6)
    np.testing.assert_allclose(chunked["final_returns"], whole["final_returns"], rtol=0, atol=1e-6)
    for key in ("mean", "std", "final3", "iqm", "seeds", "n_timesteps", "settings", "published"):
        assert chunked[key] == whole[key], key


@pytest.mark.slow
def test_a_run_in_chunks_over_two_commands_is_the_one_calls_run(one_call, tmp_path, capsys):
    """The first command stops after its first chunk (--minutes 0), leaving the checkpoint; the second
    resumes it and writes the rows; a third writes nothing. About 30 s on one core."""
    whole, whole_learning = one_call
    checkpoints = tmp_path / "checkpoints"
    out, table, files = outputs(tmp_path, "rows")
    argv = ["--tasks", "CartpoleBalance", *TINY, *files, "--checkpoint-dir", str(checkpoints)]
    state_path, progress_path = rows.checkpoint_paths(checkpoints, "TDMPC2", "CartpoleBalance")

    assert rows.main([*argv, "--minutes", "0"]) == 0
    assert "stopped at 200 of 400 env steps" in capsys.readouterr().out
    assert not out.exists() and state_path.is_file()
    progress = json.loads(progress_path.read_text())
    assert progress["timestep"] == 100 and progress["chunks"] == 1 and not progress["done"]
    assert progress["curve"]["timestep"] == [100] and progress["timing"]["compile_s"] > 0

    assert rows.main(argv) == 0
    printed = capsys.readouterr().out
    assert "resumed at 200 env steps" in printed and "in 2 calls" in printed
    ((chunked,), (learning,)) = lines(out), lines(table)
    same_run(chunked, whole)
    assert chunked["chunks"] == 2 and chunked["compile_s"] > 0 and chunked["exec_s"] > 0
    assert learning["curve"] == whole_learning["curve"] and learning["settings"] == whole_learning["settings"]
    assert json.loads(progress_path.read_text())["done"]

    assert rows.main(argv) == 0
    assert "done, its rows written" in capsys.readouterr().out
    assert len(lines(out)) == 1 and len(lines(table)) == 1


@pytest.mark.slow
def test_dreamerv3_in_chunks_is_its_one_calls_run_and_its_row_names_the_agent(tmp_path, capsys):
    """DreamerV3 at the 1m model on PendulumSwingup, 3 env copies, 2 seeds: one call, then two
    commands of one chunk each. 30-80 s on one core, as Ajax's compile cache holds its programs or not."""
    out, table, files = outputs(tmp_path, "whole")
    assert rows.main(["--tasks", "PendulumSwingup", *TINY_DREAMER, *files]) == 0
    ((whole,), (whole_learning,)) = lines(out), lines(table)
    assert whole["agent"] == "DreamerV3" and whole["settings"]["model_size"] == "1m"
    assert whole["published_source"].startswith("nicklashansen/tdmpc2 results/dreamerv3/pendulum-swingup.csv")
    assert whole_learning["agent"] == "DreamerV3" and whole_learning["settings"].startswith(
        "the April 2024 reference's DMC proprio (12m, train ratio 512"
    )
    assert "model_size=1m" in whole_learning["settings"] and "DreamerV3 PendulumSwingup: IQM" in capsys.readouterr().out

    checkpoints = tmp_path / "checkpoints"
    out, table, files = outputs(tmp_path, "chunked")
    argv = ["--tasks", "PendulumSwingup", *TINY_DREAMER, *files, "--checkpoint-dir", str(checkpoints)]
    assert rows.main([*argv, "--minutes", "0"]) == 0 and not out.exists()
    assert rows.main([*argv, "--minutes", "0"]) == 0
    ((chunked,), (learning,)) = lines(out), lines(table)
    same_run(chunked, whole)
    assert chunked["chunks"] == 2 and learning["curve"] == whole_learning["curve"]
