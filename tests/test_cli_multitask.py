"""`ajax train TDMPC2MultiTask DATASET_FILE`: the command line's dataset agent. A tiny run on a saved
dataset writes its folder and reports the normalised score, a stopped run resumes to where one run ends,
`ajax eval` reads the folder, and a missing or damaged file, --zoo and --n-envs fail cleanly with exit 2.

One task (random rows shaped as Pendulum, evaluated there by the policy prior), model size 1 narrowed
to 16 units, 4 updates in 2 chunks: the run is plumbing, compiled once and shared by the module.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

import ajax.checkpoint
from ajax import TDMPC2MultiTask
from ajax.cli import main
from ajax.commands.arguments import agent_arguments
from tests.conftest import TDMPC2_MULTITASK_SMALL, pendulum_multitask_dataset

SEEDS = 2
UPDATES = 4
LOG_FREQUENCY = 2
SCORE = "Eval/normalized score"
TASK_RETURN = "Eval/Pendulum-v1/episodic mean reward"
# The policy prior evaluates (mpc=False): the planner's evaluation is test_tdmpc2_multitask.py's.
PARAMS = [f"{name}={value}" for name, value in {**TDMPC2_MULTITASK_SMALL, "mpc": False}.items()]


def train_argv(dataset: Path, out: Path) -> list[str]:
    argv = ["train", "TDMPC2MultiTask", str(dataset), "--timesteps", str(UPDATES), "--seeds", str(SEEDS)]
    argv += ["--log-frequency", str(LOG_FREQUENCY), "--num-episode-test", "1", "--out", str(out)]
    return argv + [argument for pair in PARAMS for argument in ("--param", pair)]


@pytest.fixture(scope="module")
def dataset_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pendulum_multitask_dataset().save(tmp_path_factory.mktemp("data") / "tiny.npz")


@pytest.fixture(scope="module")
def run(dataset_file: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, Path]:
    """One whole run shared by the tests that read it: (exit status, stdout, run folder).

    Its first chunk's checkpoint is kept beside the folder as `first.ckpt`, for the resume test.
    """
    out = tmp_path_factory.mktemp("cli") / "run"
    save = ajax.checkpoint.save_checkpoint

    def keeping_the_first(state, path, agent=None):
        written = save(state, path, agent=agent)
        if not (out.parent / "first.ckpt").exists():
            shutil.copyfile(written, out.parent / "first.ckpt")
        return written

    stdout = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(stdout):
        patch.setattr(ajax.checkpoint, "save_checkpoint", keeping_the_first)
        status = main(train_argv(dataset_file, out))
    return status, stdout.getvalue(), out


def _jsonl(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "evaluations.jsonl").read_text().splitlines()]


def test_a_run_on_a_dataset_file_writes_its_folder_and_reports_the_score(run, dataset_file):
    status, stdout, out = run
    assert status == 0, stdout
    assert sorted(path.name for path in out.iterdir()) == [
        "checkpoint.ckpt",
        "config.json",
        "evaluations.csv",
        "evaluations.jsonl",
        "learning_curve.png",
    ]
    config = json.loads((out / "config.json").read_text())
    assert config["algo_name"] == "TDMPC2MultiTask" and config["resolved"]["tasks"] == ["Pendulum-v1"]
    assert config["cli"]["env_id"] == str(dataset_file.resolve()) and config["cli"]["timesteps"] == UPDATES
    rows = _jsonl(out)
    assert [(row["seed"], row["timestep"]) for row in rows] == [(s, t) for s in range(SEEDS) for t in (2, 4)]
    assert all(isinstance(row[SCORE], float) and isinstance(row[TASK_RETURN], float) for row in rows)
    # The table reports each seed's last normalised score: the one task's return on its score range.
    assert "Final eval normalized score" in stdout and "TDMPC2MultiTask on tiny.npz" in stdout
    table = [[cell.strip() for cell in line.split("│")[1:-1]] for line in stdout.splitlines() if "│" in line]
    for row in rows:
        if row["timestep"] == UPDATES:
            assert row[SCORE] == pytest.approx(100 * (row[TASK_RETURN] + 1500) / 1350, rel=1e-5)
            assert [str(row["seed"]), str(UPDATES), f"{row[SCORE]:.2f}"] in table, stdout


def test_a_stopped_run_resumes_to_where_the_whole_run_ends(run, tmp_path):
    """The run folder as a kill leaves it after the second chunk wrote its rows, before its checkpoint."""
    _, _, whole = run
    stopped = shutil.copytree(whole, tmp_path / "stopped")
    shutil.copyfile(whole.parent / "first.ckpt", stopped / "checkpoint.ckpt")
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        assert main(["train", "--resume", str(stopped)]) == 0
    assert f"Resuming {stopped} at timestep {LOG_FREQUENCY} of {UPDATES}" in " ".join(stdout.getvalue().split())
    assert (stopped / "checkpoint.ckpt").read_bytes() == (whole / "checkpoint.ckpt").read_bytes()
    assert (stopped / "evaluations.jsonl").read_text() == (whole / "evaluations.jsonl").read_text()


def test_eval_reports_each_seeds_normalized_score(run, capsys):
    _, _, out = run
    assert main(["eval", str(out), "--episodes", "1"]) == 0
    printed = capsys.readouterr().out
    assert "TDMPC2MultiTask on tiny.npz: normalized score over 1 episodes" in " ".join(printed.split())
    assert len([line for line in printed.splitlines() if line.strip("│ ").split(" ")[0] in {"0", "1"}]) == SEEDS


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "no dataset file {path} "), (b"not an npz", "{path} is not a readable .npz written by")],
    ids=["missing", "damaged"],
)
def test_a_missing_or_damaged_dataset_file_is_one_line_and_exit_2(content, message, tmp_path, capsys):
    path = tmp_path / "data.npz"
    if content is not None:
        path.write_bytes(content)
    assert main(["train", "TDMPC2MultiTask", str(path), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert message.format(path=path) in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--zoo"], "--zoo does not apply to TDMPC2MultiTask: it trains offline on a dataset file"),
        (["--n-envs", "4"], "--n-envs does not apply to TDMPC2MultiTask: it steps no env while it trains"),
    ],
)
def test_zoo_and_n_envs_are_refused(option, message, dataset_file, tmp_path, capsys):
    assert main(["train", "tdmpc2multitask", str(dataset_file), *option, "--out", str(tmp_path / "run")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_params_set_the_constructors_arguments_but_not_the_dataset_the_file_gives():
    params = ["eval_envs={'Pendulum-v1': 'Pendulum-v1'}", "task_dim=8"]
    kwargs = agent_arguments(TDMPC2MultiTask, "tiny.npz", zoo=False, n_envs=None, params=params)
    assert kwargs == {"eval_envs": {"Pendulum-v1": "Pendulum-v1"}, "task_dim": 8}
    with pytest.raises(ValueError, match="TDMPC2MultiTask takes no argument 'dataset'; it takes eval_envs, model_size"):
        agent_arguments(TDMPC2MultiTask, "tiny.npz", zoo=False, n_envs=None, params=["dataset=other.npz"])
