"""`ajax sweep`: the grid refused before anything compiles, the run folder, the ranking, and --resume."""

from __future__ import annotations

import contextlib
import io
import json
from unittest import mock

import pytest

from ajax.cli import main
from ajax.commands import sweep as sweep_command
from ajax.commands.sweep import final_returns, parse_grid

TINY = [
    "--seeds", "2", "--timesteps", "96", "--n-envs", "2", "--log-frequency", "32",
    "--param", "n_steps=16", "--param", "batch_size=16", "--param", "n_epochs=1",
    "--param", "actor_architecture=16,relu", "--param", "critic_architecture=16,relu",
]  # fmt: skip
GRID = ["--grid", "actor_learning_rate=1e-3,3e-3", "--grid", "gamma=0.9"]


def test_a_grid_option_is_a_name_and_its_values():
    assert parse_grid(["actor_learning_rate=1e-4,3e-4", "gamma=0.99"]) == {
        "actor_learning_rate": [1e-4, 3e-4],
        "gamma": [0.99],
    }
    with pytest.raises(ValueError, match="NAME=V1,V2"):
        parse_grid(["gamma"])
    with pytest.raises(ValueError, match="twice"):
        parse_grid(["gamma=0.9", "gamma=0.99"])


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["PPO", "CartPole-v1", "--grid", "n_steps=16,32"], "cannot sweep 'n_steps'"),
        (["PPO", "CartPole-v1", "--grid", "gama=0.9,0.99"], "Did you mean gamma"),
        (["PPO", "CartPole-v1"], "at least one --grid"),
        (["PPOO", "CartPole-v1", "--grid", "gamma=0.9"], "cannot sweep 'PPOO'"),
        (["TDMPC2MultiTask", "data.npz", "--grid", "tau=0.1"], "cannot sweep 'TDMPC2MultiTask'"),
    ],
)
def test_a_sweep_it_cannot_run_exits_2_naming_why(arguments, message, tmp_path, capsys):
    assert main(["sweep", *arguments, "--out", str(tmp_path / "run")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "run"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["sweep", "PPO", "CartPole-v1", *GRID, *TINY, "--out", str(out)]) == 0
    assert "XLA programs: " in printed.getvalue()  # what it compiled and what the compile cache served
    return out


def test_the_run_folder_holds_every_configuration_seed_and_evaluation(swept):
    rows = [json.loads(line) for line in (swept / "evaluations.jsonl").read_text().splitlines()]
    assert {(row["configuration"], row["seed"]) for row in rows} == {(k, s) for k in (0, 1) for s in (0, 1)}
    assert {row["actor_learning_rate"] for row in rows} == {1e-3, 3e-3}
    assert sorted({row["timestep"] for row in rows}) == [32, 64, 96]
    config = json.loads((swept / "config.json").read_text())
    assert config["configurations"] == [
        {"actor_learning_rate": 1e-3, "gamma": 0.9},
        {"actor_learning_rate": 3e-3, "gamma": 0.9},
    ]
    assert (swept / "learning_curves.png").stat().st_size > 0 and (swept / "evaluations.csv").exists()
    assert all(len(finals) == 2 for finals in final_returns(rows, 2).values())


def test_a_stopped_sweep_resumes_to_the_uninterrupted_results(swept, tmp_path):
    out = tmp_path / "run"
    targets = sweep_command.chunk_targets

    def first_chunk_only(total: int, quantum: int) -> list[int]:  # a sweep stopped after its first checkpoint
        return targets(total, quantum)[:1]

    with mock.patch.object(sweep_command, "chunk_targets", first_chunk_only):
        assert main(["sweep", "PPO", "CartPole-v1", *GRID, *TINY, "--out", str(out)]) == 0
    assert main(["sweep", "--resume", str(out)]) == 0
    assert (out / "evaluations.jsonl").read_text() == (swept / "evaluations.jsonl").read_text()


def test_a_sweep_stopped_before_its_first_checkpoint_resumes_from_the_start(swept, tmp_path):
    folder = tmp_path / "stopped"
    folder.mkdir()
    (folder / "config.json").write_bytes((swept / "config.json").read_bytes())
    assert main(["sweep", "--resume", str(folder)]) == 0
    assert (folder / "evaluations.jsonl").read_text() == (swept / "evaluations.jsonl").read_text()
