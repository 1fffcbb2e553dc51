"""TensorBoard and W&B logging: what the worker writes equals what `train` returns, per seed and step; the
worker lives exactly as long as a `train` call, also one that raises; only a logged program holds a host
callback; `ajax train --tensorboard --wandb` records the run folder's evaluations.

The TensorBoard files are read with TensorBoard's own reader, the W&B offline run with W&B's own record
protobufs (wandb 0.31 writes offline runs only as a `.wandb` log: a LevelDB-style log of `Record`s).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import multiprocessing
import struct
from collections.abc import Iterator
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.util import tensor_util

from ajax import DQN
from ajax.agents.base import ActorCritic
from ajax.cli import main
from ajax.log import to_host
from ajax.logging import worker as logging_worker
from ajax.logging.wandb_logging import LoggingConfig

SEEDS = [3, 5]
TIMESTEPS = 600
LOG_FREQUENCY = 100
WORKER_NAME = "ajax-logging-worker"
# The logged and the plain program are fused apart and their evaluations compared bit for bit.
pytestmark = pytest.mark.exact


def tiny_dqn() -> DQN:
    # learning_starts past the first evaluation: its update metrics are NaN, which no backend draws.
    return DQN("CartPole-v1", architecture=("8", "relu"), learning_starts=150, batch_size=8, buffer_size=200)


def logged(folder: Path, **backends: bool | str) -> LoggingConfig:
    return LoggingConfig(
        config={"note": "tiny"}, log_frequency=LOG_FREQUENCY, folder=str(folder), run_name="run", **backends
    )


def workers() -> list[multiprocessing.Process]:
    return [child for child in multiprocessing.active_children() if child.name == WORKER_NAME]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One agent trained twice, unlogged and then with both backends, recording each program's text and
    the worker seen from inside the callback path."""
    folder = tmp_path_factory.mktemp("logs")
    agent = tiny_dqn()
    texts, seen = [], []
    program, send = ActorCritic._program, logging_worker.LoggingWorker.send

    def spy_program(self: ActorCritic, *args: object):
        jitted = program(self, *args)

        def call(*args: object):
            texts.append(jitted.lower(*args).as_text())
            return jitted(*args)

        return call

    def spy_send(self: logging_worker.LoggingWorker, timestep: int, metrics: dict) -> None:
        seen.append((self.process, self.process.is_alive(), [child.pid for child in workers()]))
        send(self, timestep, metrics)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ActorCritic, "_program", spy_program)
        patch.setattr(logging_worker.LoggingWorker, "send", spy_send)
        _, plain = agent.train(seed=SEEDS, n_timesteps=TIMESTEPS, num_episode_test=2, logging_config=logged(folder))
        config = logged(folder, use_tensorboard=True, use_wandb=True, mode="offline")
        _, evaluations = agent.train(seed=SEEDS, n_timesteps=TIMESTEPS, num_episode_test=2, logging_config=config)
    return {
        "agent": agent,
        "plain": {name: np.asarray(values) for name, values in plain.items()},
        "evaluations": {name: np.asarray(values) for name, values in evaluations.items()},
        "texts": texts,
        "seen": seen,
        "run": folder / "run",
    }


def expected_points(evaluations: dict[str, np.ndarray], seed_index: int) -> dict[str, list[tuple[int, float]]]:
    """Each metric's (timestep, value) for one seed, its NaNs (metrics not defined yet) left out."""
    timesteps = evaluations["timestep"][seed_index]
    points = {}
    for name, values in evaluations.items():
        if name == "timestep":
            continue
        defined = [(int(t), float(v)) for t, v in zip(timesteps, values[seed_index], strict=True) if not math.isnan(v)]
        if defined:
            points[name] = defined
    return points


# TensorBoard ---------------------------------------------------------------------------------------------
def tensorboard_points(directory: Path) -> tuple[dict[str, list[tuple[int, float]]], str]:
    accumulator = EventAccumulator(str(directory), size_guidance={"scalars": 0, "tensors": 0})
    accumulator.Reload()
    points = {tag: [(e.step, e.value) for e in accumulator.Scalars(tag)] for tag in accumulator.Tags()["scalars"]}
    (text,) = accumulator.Tensors("config/text_summary")
    return points, tensor_util.make_ndarray(text.tensor_proto).item().decode()


def test_tensorboard_holds_every_seeds_evaluations_at_their_steps(runs):
    evaluations = runs["evaluations"]
    assert np.all(evaluations["timestep"] == np.arange(LOG_FREQUENCY, TIMESTEPS + 1, LOG_FREQUENCY))
    for index, seed in enumerate(SEEDS):
        points, _ = tensorboard_points(runs["run"] / f"seed_{seed}")
        expected = {name.replace(" ", "_"): values for name, values in expected_points(evaluations, index).items()}
        assert points.keys() == expected.keys()
        assert "Eval/episodic_mean_reward" in points and "value/critic_loss" in points
        for name, values in expected.items():
            # Stored as float32, as the rows hold them: equal, not close.
            assert points[name] == [(t, float(np.float32(v))) for t, v in values], (seed, name)
        assert points["value/critic_loss"][0][0] == 2 * LOG_FREQUENCY  # undefined before learning_starts


def test_tensorboard_records_the_run_config_with_the_agents(runs):
    _, text = tensorboard_points(runs["run"] / f"seed_{SEEDS[1]}")
    config = json.loads("\n".join(line.removeprefix("    ") for line in text.splitlines()))
    assert config["algo_name"] == "DQN" and config["learning_starts"] == 150  # the agent's config, merged
    assert config["note"] == "tiny" and config["seed"] == SEEDS[1]


# W&B -------------------------------------------------------------------------------------------------------
def wandb_records(path: Path) -> Iterator:
    """The `Record`s of a `.wandb` file: a 7-byte header, then 32 KiB blocks of framed, maybe split, records."""
    from wandb.proto import wandb_internal_pb2

    data, block, position, pending = path.read_bytes(), 32 * 1024, 7, b""
    assert data[:4] == b":W&B"
    while position + 7 <= len(data):
        if block - position % block < 7:  # a block's tail too short for a frame header is padding
            position += block - position % block
            continue
        _, length, kind = struct.unpack("<IHB", data[position : position + 7])
        payload, position = data[position + 7 : position + 7 + length], position + 7 + length
        pending = payload if kind in (1, 2) else pending + payload  # full or first; middle or last
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            yield record


def wandb_run(directory: Path) -> tuple[dict[str, list[tuple[int, float]]], dict, str]:
    (path,) = directory.glob("wandb/offline-run-*/run-*.wandb")
    points: dict[str, list[tuple[int, float]]] = {}
    config, name = {}, ""
    for record in wandb_records(path):
        if record.HasField("run"):
            name = record.run.display_name
            config.update({item.key: json.loads(item.value_json) for item in record.run.config.update})
        if record.HasField("history"):
            for item in record.history.item:
                key = "/".join(item.nested_key) or item.key
                if not key.startswith("_"):
                    points.setdefault(key, []).append((record.history.step.num, json.loads(item.value_json)))
    return points, config, name


def test_wandb_offline_run_holds_every_seeds_evaluations(runs):
    for index, seed in enumerate(SEEDS):
        points, config, name = wandb_run(runs["run"] / f"seed_{seed}")
        expected = expected_points(runs["evaluations"], index)
        assert points.keys() == expected.keys()
        for key, values in expected.items():
            assert [(t, np.float32(v)) for t, v in points[key]] == [(t, np.float32(v)) for t, v in values], key
        assert name == f"run/seed_{seed}"
        assert config["algo_name"] == "DQN" and config["note"] == "tiny" and config["seed"] == seed


# The worker's life -----------------------------------------------------------------------------------------
def test_the_worker_runs_during_train_and_is_gone_after(runs):
    seen = runs["seen"]
    assert len(seen) == TIMESTEPS // LOG_FREQUENCY  # one host call per evaluation, all seeds in it
    process = seen[0][0]
    assert all(alive and pids == [process.pid] for _, alive, pids in seen)
    assert process.exitcode == 0 and not process.is_alive()
    assert workers() == []


def test_the_worker_is_stopped_when_train_raises(runs, monkeypatch):
    started = []

    def failing_send(self: logging_worker.LoggingWorker, timestep: int, metrics: dict) -> None:
        started.append(self.process)
        raise ValueError("a writer could not keep up")

    monkeypatch.setattr(logging_worker.LoggingWorker, "send", failing_send)
    config = logged(runs["run"].parent / "raising", use_tensorboard=True)
    with pytest.raises(Exception, match="a writer could not keep up"):
        runs["agent"].train(seed=SEEDS, n_timesteps=TIMESTEPS, num_episode_test=2, logging_config=config)
    assert started and started[0].exitcode == 0  # it was running, and was told to stop
    assert workers() == []
    assert logging_worker._RELAY.worker is None  # the next logged call can start its own


# The program -----------------------------------------------------------------------------------------------
def test_only_a_logged_program_calls_back_and_both_return_the_same_evaluations(runs):
    plain_text, logged_text = runs["texts"]
    assert "callback" not in plain_text
    assert logged_text.count("callback") == 1  # inside the evaluation branch, once for every seed
    for name, values in runs["plain"].items():
        np.testing.assert_array_equal(runs["evaluations"][name], values, err_msg=name)


def test_the_callback_carries_every_seed_in_one_call(monkeypatch):
    class Catcher:
        def __init__(self) -> None:
            self.sent: list[tuple[int, dict]] = []

        def send(self, timestep: int, metrics: dict) -> None:
            self.sent.append((timestep, metrics))

    catcher = Catcher()
    monkeypatch.setattr(logging_worker._RELAY, "worker", catcher)
    metrics = {"per seed": jnp.arange(3.0), "shared": jnp.float32(5.0)}
    jax.jit(jax.vmap(to_host, in_axes=(None, {"per seed": 0, "shared": None})))(jnp.int32(7), metrics)
    jax.jit(to_host)(jnp.int32(8), {"alone": jnp.float32(2.0)})  # unbatched: a batch of one
    jax.effects_barrier()
    assert catcher.sent == [(7, {"per seed": [0.0, 1.0, 2.0], "shared": [5.0, 5.0, 5.0]}), (8, {"alone": [2.0]})]
    with pytest.raises(ValueError, match="timestep must be shared by every seed"):
        jax.vmap(to_host)(jnp.arange(3), {"x": jnp.zeros(3)})


def test_a_logged_program_run_outside_train_is_refused():
    with pytest.raises(RuntimeError, match="outside train"):
        logging_worker.forward(np.int32(1), {"x": np.zeros(2)})


# The command line ------------------------------------------------------------------------------------------
def test_cli_records_the_run_folders_evaluations(tmp_path):
    out = tmp_path / "cli-run"
    with contextlib.redirect_stdout(io.StringIO()):
        status = main(
            ["train", "DQN", "CartPole-v1", "--timesteps", "400", "--log-frequency", "100", "--seeds", "2"]
            + ["--out", str(out), "--tensorboard", "--wandb", "--wandb-mode", "offline"]
        )
    assert status == 0
    rows = [json.loads(line) for line in (out / "evaluations.jsonl").read_text().splitlines()]
    assert len(rows) == 2 * 4
    for seed in (0, 1):
        board, _ = tensorboard_points(out / f"seed_{seed}")
        wandb_points, config, _ = wandb_run(out / f"seed_{seed}")
        assert config["cli"]["tensorboard"] and config["algo_name"] == "DQN"
        expected: dict[str, list[tuple[int, np.float32]]] = {}
        for row in (row for row in rows if row["seed"] == seed):
            for name, value in row.items():
                if name not in ("seed", "timestep") and value is not None:
                    expected.setdefault(name, []).append((row["timestep"], np.float32(value)))
        assert expected.keys() == wandb_points.keys()
        assert {name.replace(" ", "_") for name in expected} == board.keys()
        for name, values in expected.items():
            assert [(t, np.float32(v)) for t, v in board[name.replace(" ", "_")]] == values, name
            assert [(t, np.float32(v)) for t, v in wandb_points[name]] == values, name
    assert json.loads((out / "config.json").read_text())["cli"]["wandb_mode"] == "offline"
    assert workers() == []
