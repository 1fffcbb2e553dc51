"""benchmarks/world_models/throughput.py: the resumed call reuses the compiled program and counts its updates."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest
from tests.benchmark_scripts import BENCHMARKS, load_benchmark

throughput = load_benchmark("world_models/throughput")


def world_model_checks():
    """benchmarks/world_models/learning_checks.py under a name of its own: its stem is the
    top-level learning_checks.py's, which other tests import by that name."""
    name = "world_models_learning_checks"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / "world_models" / "learning_checks.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_dreamerv3_1m_is_the_cartpole_gate_of_the_learning_checks():
    agent, env_id, settings = throughput.RUNS["dreamerv3-1m"]
    assert (agent, env_id) == ("DreamerV3", "CartPole-v1")
    gate = world_model_checks().CHECKS["cartpole"].settings
    assert {key: settings[key] for key in gate} == gate
    assert throughput.RUNS["dreamerv3-12m"][2] == {**settings, "model_size": "12m"}


def test_a_measurement_times_the_resumed_call_alone_and_counts_its_updates(monkeypatch):
    # A DreamerV3 small enough to compile in seconds: its first update at tick 8 + 4 of 2 copies.
    tiny = {"model_size": "1m", "n_envs": 2, "train_ratio": 8.0, "batch_size": 2, "batch_length": 4}
    monkeypatch.setitem(throughput.RUNS, "tiny", ("DreamerV3", "CartPole-v1", tiny))
    row = throughput.measure("tiny", n_seeds=2, warmup=32, steps=16)
    assert row["resumed_backend_compile_s"] == 0.0  # the resumed call ran the first call's program
    assert row["backend_compile_s"] > 0 and row["compile_spans_s"] <= row["first_call_s"]
    assert row["updates"] == 2 * 16  # two seeds, one update a row: 8 replayed rows per collected row of 2 x 4
    assert row["updates_per_s"] == pytest.approx(row["updates"] / row["resumed_call_s"], rel=1e-2)
    assert row["env_steps_per_s"] == pytest.approx(2 * 16 / row["resumed_call_s"], rel=1e-2)


def test_a_checks_table_row_names_an_accelerator_and_leaves_the_cpu_unnamed():
    checks = world_model_checks()
    rows = (BENCHMARKS / "world_models" / "learning_checks.jsonl").read_text().splitlines()
    tpu = next(json.loads(line) for line in rows if json.loads(line)["machine"]["backend"] == "tpu")
    cpu = next(json.loads(line) for line in rows if json.loads(line)["machine"]["backend"] == "cpu")
    assert checks.table_row(tpu)["machine"] == "TPU"  # a row from before the device kind was kept
    tpu["machine"]["device"] = "TPU v5 lite"
    assert checks.table_row(tpu)["machine"] == "TPU v5e"
    assert "machine" not in checks.table_row(cpu)  # the learning table's own machine kind


def test_a_checks_table_row_names_its_departures_a_flag_as_a_flag_and_held_out_seeds():
    checks = world_model_checks()
    rows = (BENCHMARKS / "world_models" / "learning_checks.jsonl").read_text().splitlines()
    gate = next(json.loads(line) for line in rows if json.loads(line)["name"] == "cartpole")
    sampled = {**gate, "settings": {**gate["settings"], "sampled_evaluation": True}, "seeds": [5, 6, 7, 8, 9]}
    assert checks.table_row(sampled)["settings"] == "check cartpole (sampled_evaluation=True, seeds 5-9)"
    args = checks.parse_args(["--check", "cartpole", "--sampled-evaluation"])
    assert args.sampled_evaluation and not checks.parse_args(["--check", "cartpole"]).sampled_evaluation


@pytest.mark.slow
def test_a_check_trained_in_chunks_over_two_commands_equals_one_call(tmp_path):
    checks = world_model_checks()
    # 2 envs a seed: a call runs whole steps of 2 rows, so the run ends at row 98 of 99 and
    # the first call at 32 of 33; the calls must still step as the one call does, and stop.
    tiny = ["--check", "catch", "--seeds", "2", "--timesteps", "99", "--eval-every", "33", "--window", "32", "96"]
    tiny += ["--n-envs", "2", "--train-ratio", "8", "--batch-size", "2", "--batch-length", "4"]
    one_call = checks.run(checks.parse_args(tiny))
    chunked = [*tiny, "--checkpoint-dir", str(tmp_path)]
    assert checks.run(checks.parse_args([*chunked, "--minutes", "0"])) is None  # stops after its first call
    progress = json.loads((tmp_path / "catch.json").read_text())
    assert progress["timestep"] == 32 and (tmp_path / "catch.ckpt").is_file()
    resumed = checks.run(checks.parse_args(chunked))
    for key in ("curve", "diagnostics_per_seed", "seed_window_means", "n_updates"):
        assert resumed[key] == one_call[key], key
    with pytest.raises(SystemExit, match="other settings"):
        checks.run(checks.parse_args([*chunked[:3], "3", *chunked[4:]]))  # three seeds, not two
    with pytest.raises(SystemExit):
        checks.parse_args([*tiny, "--minutes", "5"])  # --minutes needs --checkpoint-dir
