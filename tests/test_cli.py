"""The `ajax` command line: a tiny real run writes what it promises, a killed run resumes to where one
run ends, and bad names fail cleanly with exit 2."""

from __future__ import annotations

import argparse
import ast
import contextlib
import csv
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from ajax import DQN, cli
from ajax.checkpoint import restore_into
from ajax.cli import main
from ajax.commands import results, train
from ajax.commands.arguments import agent_arguments, parse_value
from ajax.commands.run_folder import chunk_targets
from ajax.nonfinite import LOSSES, OBSERVATIONS, PARAMETERS, NonFinite, NonFiniteError

SEEDS = 2
TIMESTEPS = 4000
LOG_FREQUENCY = 1000  # four chunks: each chunk is a trip out of the compiled program
EVAL = "Eval/episodic mean reward"


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, Path]:
    """One real DQN run shared by the tests that read its output: (exit status, stdout, run folder)."""
    out = tmp_path_factory.mktemp("cli") / "run"
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        status = main(
            [
                "train",
                "DQN",
                "CartPole-v1",
                "--timesteps",
                str(TIMESTEPS),
                "--n-envs",
                "4",
                "--seeds",
                str(SEEDS),
                "--log-frequency",
                str(LOG_FREQUENCY),
                "--param",
                "architecture=32,relu",
                "--out",
                str(out),
            ]
        )
    return status, stdout.getvalue(), out


def _jsonl(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "evaluations.jsonl").read_text().splitlines()]


def test_run_writes_config_evaluations_and_curve(tiny_run):
    status, _, out = tiny_run
    assert status == 0

    config = json.loads((out / "config.json").read_text())
    assert config["algo_name"] == "DQN"
    assert config["env_id"] == "CartPole-v1"
    assert config["n_envs"] == 4 and config["architecture"] == [32, "relu"]
    assert config["cli"]["seeds"] == SEEDS and config["cli"]["log_frequency"] == LOG_FREQUENCY
    assert config["cli"]["params"] == ["architecture=32,relu"] and config["cli"]["zoo"] is False

    rows = _jsonl(out)
    expected_timesteps = list(range(LOG_FREQUENCY, TIMESTEPS + 1, LOG_FREQUENCY))
    for seed in range(SEEDS):
        assert [row["timestep"] for row in rows if row["seed"] == seed] == expected_timesteps
    assert all(isinstance(row[EVAL], float) and row[EVAL] > 0 for row in rows)
    assert {"Eval/mean episodic length", "Train/episodic mean reward"} <= set(rows[0])

    with (out / "evaluations.csv").open(newline="") as file:
        reader = csv.DictReader(file)
        assert reader.fieldnames[:2] == ["seed", "timestep"] and EVAL in reader.fieldnames
        csv_rows = list(reader)
    assert [(int(r["seed"]), int(r["timestep"])) for r in csv_rows] == [(r["seed"], r["timestep"]) for r in rows]
    assert [float(r[EVAL]) for r in csv_rows] == [r[EVAL] for r in rows]

    png = (out / "learning_curve.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 5_000


def test_run_prints_each_seeds_final_return(tiny_run):
    _, stdout, out = tiny_run
    finals = {row["seed"]: row[EVAL] for row in _jsonl(out) if row["timestep"] == TIMESTEPS}
    assert len(finals) == SEEDS
    table = [[cell.strip() for cell in line.split("│")[1:-1]] for line in stdout.splitlines() if "│" in line]
    for seed, value in finals.items():
        assert [str(seed), str(TIMESTEPS), f"{value:.2f}"] in table, stdout
    values = np.array(list(finals.values()))
    assert f"{values.mean():.2f} ± {values.std():.2f}" in stdout
    assert "Wall time" in stdout and "XLA programs: " in stdout


def test_chunked_run_equals_one_call(tiny_run):
    """The CLI trains in chunks for its progress bar; the evaluations must be those of one train() call."""
    from ajax.agents.registry import AGENTS
    from ajax.logging.wandb_logging import LoggingConfig

    _, _, out = tiny_run
    agent = AGENTS["DQN"]("CartPole-v1", n_envs=4, architecture=("32", "relu"))
    _, evaluations = agent.train(
        seed=list(range(SEEDS)),
        n_timesteps=TIMESTEPS,
        logging_config=LoggingConfig(log_frequency=LOG_FREQUENCY),
        total_timesteps=TIMESTEPS,
    )
    rows = _jsonl(out)
    for seed in range(SEEDS):
        filled = np.asarray(evaluations["timestep"][seed]) >= 0
        mine = [row for row in rows if row["seed"] == seed]
        np.testing.assert_array_equal(
            [row["timestep"] for row in mine], np.asarray(evaluations["timestep"][seed])[filled]
        )
        np.testing.assert_array_equal(
            np.array([row[EVAL] for row in mine], np.float32), np.asarray(evaluations[EVAL][seed])[filled]
        )


def test_chunk_targets_end_at_the_budget():
    assert chunk_targets(2000, 100) == list(range(100, 2001, 100))
    assert chunk_targets(2000, 300) == [300, 600, 900, 1200, 1500, 1800, 2000]
    assert chunk_targets(256, 64) == [64, 128, 192, 256]
    assert chunk_targets(100_000, 8192) == [8192 * k for k in range(1, 13)] + [100_000]
    assert chunk_targets(10, 64) == [10]


def test_unknown_agent_lists_the_agents(tmp_path, capsys):
    assert main(["train", "DQNN", "CartPole-v1", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "DQNN" in err and all(name in err for name in ("DQN", "PPO", "SAC"))
    assert not (tmp_path / "run").exists()


def test_unknown_env_names_a_close_match(tmp_path, capsys):
    assert main(["train", "DQN", "CartPole-v2", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "CartPole-v2" in err and "Closest ids: CartPole-v1" in err
    assert "Traceback" not in err
    assert not (tmp_path / "run").exists()


def test_discrete_env_for_sac_is_refused(tmp_path, capsys):
    assert main(["train", "SAC", "CartPole-v1", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "continuous" in err and "discrete" in err and "Pendulum-v1" in err


def test_bad_numbers_are_usage_errors(capsys):
    assert main(["train", "DQN", "CartPole-v1", "--seeds", "0"]) == 2
    assert "positive integer" in capsys.readouterr().err
    assert main(["train", "DQN", "CartPole-v1", "--timesteps", "10", "--log-frequency", "20"]) == 2
    assert "never evaluate" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["train", "DQN", "CartPole-v1", "--seed", "3"],
            "ajax train: error: unknown option --seed; did you mean --seeds?",
        ),
        (
            ["train", "DQN", "CartPole-v1", "--tim=10"],
            "ajax train: error: unknown option --tim; did you mean --timesteps?",
        ),
        (["eval", "runs/x", "--episode", "5"], "ajax eval: error: unknown option --episode; did you mean --episodes?"),
        (["sweep", "PPO", "CartPole-v1", "--gri", "gamma=0.9,0.99"], "unknown option --gri; did you mean --grid?"),
        (["train", "DQN", "CartPole-v1", "--zzz"], "ajax train: error: unknown option --zzz; did you mean --zoo?"),
    ],
)
def test_an_abbreviated_or_unknown_option_is_refused_naming_the_option_meant(argv, message, tmp_path, capsys):
    """`--seed 3` once trained seeds 0, 1 and 2 (argparse read it as `--seeds 3`): no abbreviation is taken."""
    assert main([*argv, "--out", str(tmp_path / "run")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_every_parser_refuses_abbreviations_and_full_options_still_parse():
    parser = cli.build_parser()
    (commands,) = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    assert not parser.allow_abbrev and not any(sub.allow_abbrev for sub in commands.choices.values())
    args = parser.parse_args(["train", "DQN", "CartPole-v1", "--seeds", "3", "--n-envs=2"])
    assert (args.seeds, args.n_envs) == (3, 2)


def test_out_naming_a_file_is_refused_in_one_line(tmp_path, capsys):
    taken = tmp_path / "notes.txt"
    taken.write_text("not a run folder")
    for out, file in ((taken, taken), (taken / "run", taken)):
        assert main(["train", "DQN", "CartPole-v1", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err == f"--out {out}: {file} is a file, not a folder. --out names the run folder (made if missing).\n"
    assert taken.read_text() == "not a run folder"


def test_param_values_read_as_python_would_write_them():
    assert parse_value("1e-3") == 0.001 and parse_value("64") == 64 and parse_value("-1") == -1
    assert parse_value("true") is True and parse_value("False") is False and parse_value("none") is None
    assert parse_value("64,relu,64,relu") == (64, "relu", 64, "relu") and parse_value("(64, 64)") == (64, 64)
    assert parse_value("relu") == "relu"


def test_params_go_over_the_zoo_preset_and_n_envs():
    from ajax import DQN, zoo

    kwargs = agent_arguments(DQN, "CartPole-v1", zoo=True, n_envs=2, params=["learning_rate=1e-3", "double-q=true"])
    assert kwargs == {**zoo.preset("DQN", "CartPole-v1").kwargs, "n_envs": 2, "learning_rate": 1e-3, "double_q": True}


def test_the_world_models_keywords_parse_from_params():
    from ajax import TDMPC2

    params = ["model_size=1", "enc_dim=16", "episodic=false", "seed_steps=none", "temperature=0.25"]
    kwargs = agent_arguments(TDMPC2, "Pendulum-v1", zoo=False, n_envs=2, params=params)
    assert kwargs == {
        "n_envs": 2,
        "model_size": 1,
        "enc_dim": 16,
        "episodic": False,
        "seed_steps": None,
        "temperature": 0.25,
    }
    assert TDMPC2("Pendulum-v1", **kwargs).config["resolved"]["seed_steps"] == 1000


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--param", "lr=1e-3"], "DQN takes no argument 'lr'; it takes learning_rate, architecture, max_grad_norm"),
        (["--param", "gamma"], "--param takes NAME=VALUE, got 'gamma'"),
        (["--param", "gamma=1.5"], r"gamma must lie in \(0, 1\], got 1.5"),
        (["--param", "architecture=64,swish,64"], "odd number of entries"),
    ],
)
def test_a_bad_param_is_one_line_and_exit_2(argv, message, capsys):
    assert main(["train", "DQN", "CartPole-v1", *argv]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and len(err.strip().splitlines()) == 1, err


def test_zoo_without_a_preset_names_the_agents_that_have_them(capsys):
    assert main(["train", "AVG", "Pendulum-v1", "--zoo"]) == 2
    assert "no presets for AVG; presets exist for CrossQ, DQN, PPO, SAC, TD3, TQC" in capsys.readouterr().err


def test_no_subcommand_prints_help(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "usage: ajax" in out and "train" in out


def test_help_and_the_cli_page_name_the_parsers_subcommands(capsys):
    """`ajax --help` and docs/cli.md give the number and names of the subcommands the parser has."""
    parser = cli.build_parser()
    (commands,) = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    names = list(commands.choices)
    number = {2: "two", 3: "three", 4: "four", 5: "five"}[len(names)]
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert re.findall(r"^    (\w+)\s", out, re.M) == names  # the COMMAND listing
    said = re.search(r"The command has (\w+) subcommands, (.*?)\.", " ".join(out.split()))
    assert said and said.group(1) == number and re.split(r",\s*|\s+and\s+", said.group(2)) == names, out
    page = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()
    said = re.search(r"It has (\w+) subcommands: (.*?)\.", " ".join(page.split()))
    assert said and said.group(1) == number, "docs/cli.md's count of subcommands"
    assert [name.strip("`") for name in re.split(r",\s*|\s+and\s+", said.group(2))] == names
    for name in names:
        assert re.search(rf"^## `ajax {name}\b", page, re.M), f"docs/cli.md has no section for ajax {name}"


def test_a_run_killed_mid_checkpointing_resumes_to_the_uninterrupted_state(tmp_path):
    """SIGKILL at the first checkpoint, `--resume`, and the run ends byte for byte where one run ends."""
    run = ["train", "DQN", "CartPole-v1", "--timesteps", "20000", "--n-envs", "4", "--log-frequency", "1000"]
    run += ["--param", "architecture=32,relu"]
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*run, "--out", str(whole)]) == 0
    process = subprocess.Popen(
        [sys.executable, "-m", "ajax.cli", *run, "--out", str(killed)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )
    deadline = time.monotonic() + 300
    while not (killed / "checkpoint.ckpt").exists():
        assert process.poll() is None and time.monotonic() < deadline, "the run ended without a checkpoint"
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    process.wait()
    skeleton, _ = DQN("CartPole-v1", n_envs=4, architecture=("32", "relu")).train(
        seed=[0], n_timesteps=0, total_timesteps=20_000
    )
    reached = int(restore_into(skeleton, killed / "checkpoint.ckpt").collector_state.timestep[0])
    assert reached < 20_000  # the kill interrupted the run

    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["train", "--resume", str(killed)]) == 0
    assert (killed / "checkpoint.ckpt").read_bytes() == (whole / "checkpoint.ckpt").read_bytes()
    assert (killed / "evaluations.jsonl").read_text() == (whole / "evaluations.jsonl").read_text()


def run_cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ajax.cli", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )


def test_a_damaged_run_folder_fails_in_one_line_with_exit_2(tiny_run, tmp_path):
    _, _, out = tiny_run
    truncated, broken = tmp_path / "truncated", tmp_path / "broken"
    for copy in (truncated, broken):
        copy.mkdir()
        for name in ("config.json", "checkpoint.ckpt"):
            (copy / name).write_bytes((out / name).read_bytes())
    (truncated / "checkpoint.ckpt").write_bytes((out / "checkpoint.ckpt").read_bytes()[:-10])
    (broken / "config.json").write_text('{"cli": {"agent": "DQN"')
    for argv, reason in (
        (["eval", str(truncated)], f"Cannot restore {truncated / 'checkpoint.ckpt'}: it is truncated"),
        (["train", "--resume", str(broken)], f"{broken / 'config.json'} is damaged: no run settings"),
    ):
        result = run_cli(*argv)
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith(reason) and result.stderr.count("\n") == 1, result.stderr


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        ({"timesteps": "lots"}, "run settings hold timesteps='lots' (a count of steps)"),
        ({"seeds": 0}, "run settings hold seeds=0 (a count of seeds)"),
        ({"params": "gamma=0.9"}, "run settings hold params='gamma=0.9' (a list of NAME=VALUE strings)"),
        ({"seeds": 3}, "it holds the runs of 2 seeds, the skeleton 3 seeds"),
    ],
    ids=["timesteps", "seeds-zero", "params", "seeds-more"],
)
def test_an_edited_run_folder_fails_in_one_line_naming_the_setting(tiny_run, tmp_path, edit, reason, capsys):
    _, _, out = tiny_run
    for name in ("config.json", "checkpoint.ckpt"):
        (tmp_path / name).write_bytes((out / name).read_bytes())
    config = json.loads((tmp_path / "config.json").read_text())
    config["cli"].update(edit)
    (tmp_path / "config.json").write_text(json.dumps(config))
    for argv in (["train", "--resume", str(tmp_path)], ["eval", str(tmp_path)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert reason in err and err.count("\n") == 1, err


def test_a_seed_gone_non_finite_shows_in_the_table_and_raise_exits_1(tmp_path, capsys, monkeypatch):
    record = NonFinite(timestep=np.array([-1, 3204]), kinds=np.array([0, OBSERVATIONS | LOSSES | PARAMETERS]))
    state = type("State", (), {"nonfinite": record})()
    gone = results.gone(state, [0, 1])
    assert gone == {1: "from 3,204: observations from the env, a loss, the network parameters"}
    console = Console(record=True, width=200)
    console.print(results.summary_table({0: (4000, 20.0), 1: (4000, 9.0)}, "DQN", gone))
    printed = console.export_text()
    assert "Non-finite" in printed and "from 3,204" in printed

    def diverging(*args, **kwargs):
        raise NonFiniteError("The run went non-finite. seed 1: a loss non-finite from timestep 8.")
        yield

    monkeypatch.setattr(train, "train_in_chunks", diverging)
    argv = ["train", "DQN", "CartPole-v1", "--timesteps", "100", "--on-nonfinite", "raise", "--out", str(tmp_path)]
    assert main(argv) == 1
    assert "seed 1: a loss non-finite from timestep 8" in capsys.readouterr().err
    assert json.loads((tmp_path / "config.json").read_text())["cli"]["on_nonfinite"] == "raise"


def test_a_non_finite_stop_after_a_finished_chunk_reads_no_donated_state(tmp_path, capsys, monkeypatch):
    """The chunk that raises was handed the last chunk's state, which the program donated: the
    summary must not read it (it did, and failed with JAX's 'Array has been deleted')."""

    class Donated:
        collector_state = None

        @property
        def nonfinite(self):
            raise RuntimeError("Array has been deleted")

    def one_chunk_then_diverging(*args, **kwargs):
        yield 50, {}, Donated()
        raise NonFiniteError("The run went non-finite. seed 0: a loss non-finite from timestep 60.")

    monkeypatch.setattr(train, "train_in_chunks", one_chunk_then_diverging)
    monkeypatch.setattr("ajax.checkpoint.save_checkpoint", lambda *args, **kwargs: None)
    argv = ["train", "DQN", "CartPole-v1", "--timesteps", "100", "--on-nonfinite", "raise", "--out", str(tmp_path)]
    assert main(argv) == 1
    assert "seed 0: a loss non-finite from timestep 60" in capsys.readouterr().err


def test_a_run_stopped_before_its_first_checkpoint_resumes_from_the_start(tiny_run, tmp_path, capsys):
    """A kill between config.json and the first checkpoint (found by benchmarks/studies/fault_injection.py):
    `--resume` runs it over with the saved settings, to the uninterrupted run's evaluations."""
    _, _, out = tiny_run
    folder = tmp_path / "stopped"
    folder.mkdir()
    (folder / "config.json").write_bytes((out / "config.json").read_bytes())
    assert main(["eval", str(folder)]) == 2  # nothing trained yet: nothing to evaluate
    assert "holds no saved run" in capsys.readouterr().err
    with contextlib.redirect_stdout(io.StringIO()) as stdout:
        assert main(["train", "--resume", str(folder)]) == 0
    assert "no checkpoint yet: starting its run over" in " ".join(stdout.getvalue().split())
    assert (folder / "evaluations.jsonl").read_text() == (out / "evaluations.jsonl").read_text()


def test_resume_needs_a_run_folder(tmp_path, capsys):
    assert main(["train", "--resume", str(tmp_path)]) == 2
    assert "holds no saved run" in capsys.readouterr().err
    assert main(["train"]) == 2
    assert "needs AGENT and ENV_ID, or --resume RUN_DIR" in capsys.readouterr().err


def test_eval_reports_the_checkpointed_agents_return_per_seed(tiny_run, capsys):
    _, _, out = tiny_run
    assert main(["eval", str(out), "--episodes", "3"]) == 0
    printed = capsys.readouterr().out
    assert "return over 3 episodes" in printed
    lines = [line for line in printed.splitlines() if line.strip("│ ").split(" ")[0] in {"0", "1"}]
    assert len(lines) == SEEDS and all(f"{TIMESTEPS}" in line for line in lines)
    assert main(["eval", str(out.parent / "missing")]) == 2


COMMAND_LAYERS = [
    {"ajax.commands.arguments", "ajax.commands.run_folder"},
    {"ajax.commands.results"},
    {"ajax.commands.train", "ajax.commands.eval", "ajax.commands.sweep"},
    {"ajax.cli"},
]
"""The command line's modules, each importing only from layers above its own: no circle can form among them."""


def _command_imports(module: str) -> dict[str, set[str]]:
    """The command line's modules `module` imports from (read with ast, nothing run), and the names it takes."""
    source = Path(cli.__file__).parent.joinpath(*module.split(".")[1:]).with_suffix(".py")
    imported: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                imported.setdefault(alias.name, set())
        elif isinstance(node, ast.ImportFrom) and node.module == "ajax.commands":  # from ajax.commands import train
            for alias in node.names:
                imported.setdefault(f"{node.module}.{alias.name}", set())
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                imported.setdefault(node.module, set()).add(alias.name)
    layered = set().union(*COMMAND_LAYERS)
    return {name: names for name, names in imported.items() if name in layered or name.startswith("ajax.commands")}


def test_the_command_modules_import_in_one_direction_and_cli_only_dispatches():
    """`ajax.cli` takes from each subcommand's module only its parser and its command; the subcommands take
    from the shared modules, which take from no subcommand: the circle cli.py and sweep_command.py made is gone."""
    package = Path(cli.__file__).parent / "commands"
    on_disk = {f"ajax.commands.{path.stem}" for path in package.glob("*.py") if path.stem != "__init__"}
    assert on_disk | {"ajax.cli"} == set().union(*COMMAND_LAYERS), "a command module missing from COMMAND_LAYERS"
    for depth, layer in enumerate(COMMAND_LAYERS):
        above = set().union(*COMMAND_LAYERS[:depth])
        for module in layer:
            for imported in _command_imports(module):
                assert imported in above, f"{module} imports {imported}, which is not above it"
    for command in ("train", "eval", "sweep"):
        taken = _command_imports("ajax.cli")[f"ajax.commands.{command}"]
        assert taken == {"add_parser", f"{command}_command"}, f"ajax.cli takes {taken} from ajax.commands.{command}"


def test_a_full_disk_mid_run_keeps_the_last_checkpoint_and_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    """The second chunk's checkpoint write fails as on a full disk: the first stays whole, and resumes."""
    import errno

    import ajax.checkpoint

    out = tmp_path / "run"
    run = ["train", "DQN", "CartPole-v1", "--timesteps", "2000", "--n-envs", "4", "--log-frequency", "1000"]
    run += ["--param", "architecture=32,relu", "--param", "learning_starts=500", "--out", str(out)]
    real_fsync, calls = ajax.checkpoint.os.fsync, []

    def fsync_until_full(fd: int) -> None:
        calls.append(fd)
        if len(calls) > 2:  # the first save's file and directory, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(ajax.checkpoint.os, "fsync", fsync_until_full)
    assert main(run) == 1
    monkeypatch.setattr(ajax.checkpoint.os, "fsync", real_fsync)
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and "No space left on device" in said[0] and "--resume" in said[0]
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".checkpoint")) == []  # no temporary left
    skeleton, _ = DQN("CartPole-v1", n_envs=4, architecture=("32", "relu"), learning_starts=500).train(
        seed=[0], n_timesteps=0, total_timesteps=2000
    )
    assert int(restore_into(skeleton, out / "checkpoint.ckpt").collector_state.timestep[0]) == 1000
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["train", "--resume", str(out)]) == 0


DAMAGES = {
    "deleted": lambda path: path.unlink(),
    "truncated": lambda path: path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2]),
    "garbage": lambda path: path.write_bytes(b"\x00\xffnot what ajax wrote\n"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_no_damage_to_a_run_folder_file_gets_a_traceback_from_resume_or_eval(tiny_run, tmp_path, damage, capsys):
    """Each file of a finished run folder deleted, cut in half or overwritten: `--resume` and `eval`
    either work (the file is rewritten from the others) or say what is wrong in one line."""
    _, _, out = tiny_run
    for file in sorted(p.name for p in out.iterdir() if p.is_file()):
        folder = tmp_path / f"{damage}-{file}"
        folder.mkdir()
        for name in (p.name for p in out.iterdir() if p.is_file()):
            (folder / name).write_bytes((out / name).read_bytes())
        DAMAGES[damage](folder / file)
        for argv in (["train", "--resume", str(folder)], ["eval", str(folder)]):
            with contextlib.redirect_stdout(io.StringIO()):
                status = main(argv)
            err = capsys.readouterr().err.strip()
            assert status in (0, 2), (file, argv, status, err)
            if status:
                assert err.count("\n") == 0 and str(folder) in err, (file, argv, err)
