"""The agent benchmark script itself: a tiny capture, the required --out, --compare's verdicts.

The capture runs DQN (the smallest program) for 1,200 steps after its 400-step warm-up:
DQN learns from step 1,000, so the trial makes 50 updates. Two compilations, about 20 s
on 2 cores; everything else reads hand-written JSONL files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.benchmark_scripts import load_benchmark

bench = load_benchmark("agent_bench")

ROW_FIELDS = {
    "commit",
    "backend",
    "tag",
    "agent",
    "scenario",
    "env_id",
    "n_envs",
    "n_timesteps",
    "n_seeds",
    "trial",
    "timestamp",
    "platform",
    "cpu",
    "compile_s",
    "measured_s",
    "exec_s",
    "steps_per_s",
    "exec_steps_per_s",
    "n_updates",
}


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _rows(agent: str, values: list[float], metric: str = "exec_steps_per_s") -> list[dict]:
    rows = []
    for trial, value in enumerate(values):
        row = {"agent": agent, "trial": trial, "steps_per_s": value / 2}
        row[metric] = value
        rows.append(row)
    return rows


def test_capture_writes_one_row_per_trial_with_updates(tmp_path):
    out = tmp_path / "bench.jsonl"
    code = bench.main(["--only", "DQN", "--timesteps", "1200", "--trials", "1", "--tag", "ci", "--out", str(out)])
    assert code == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 1
    row = rows[0]
    assert ROW_FIELDS <= set(row), ROW_FIELDS - set(row)
    assert (row["agent"], row["env_id"], row["tag"], row["n_envs"], row["n_seeds"]) == (
        "DQN",
        "CartPole-v1",
        "ci",
        4,
        1,
    )
    assert row["n_timesteps"] == 1200 and row["steps"] == 1200
    # Updates from step 1,000 to 1,200 at 4 envs a tick: 50 or 51 of them.
    assert row["n_updates"] > 0
    # The trial compiles its own program, and the spans JAX reports for it are set apart.
    assert 0 < row["exec_s"] < row["measured_s"]
    assert row["compile_spans_s"] > 0 and row["compile_s"] > 0
    assert row["exec_steps_per_s"] > row["steps_per_s"] > 0
    assert row["steps_per_s"] == pytest.approx(row["steps"] / row["measured_s"])


def test_capture_without_out_stops_with_an_error(capsys):
    with pytest.raises(SystemExit) as stopped:
        bench.main(["--only", "DQN"])
    assert stopped.value.code != 0
    assert "--out" in capsys.readouterr().err


def test_capture_rejects_an_unknown_agent(tmp_path):
    with pytest.raises(ValueError, match="Unknown agent"):
        bench.capture(["NoSuchAgent"], out=tmp_path / "x.jsonl")


def test_union_counts_overlapping_spans_once():
    assert bench.union_length([(0.0, 2.0), (1.0, 3.0), (5.0, 6.0), (5.5, 5.7)]) == pytest.approx(4.0)
    assert bench.union_length([]) == 0.0


def test_every_registered_agent_updates_within_the_run():
    from ajax.agents.registry import AGENTS

    for name in ("SAC", "TD3", "REDQ", "ASAC"):
        assert bench.PINNED_KWARGS[name]["learning_starts"] < bench.N_TIMESTEPS
    for name in set(AGENTS) - set(bench.NOT_BENCHMARKED):
        agent, _ = bench.build_agent(name)
        assert getattr(agent.agent_config, "learning_starts", 0) < bench.N_TIMESTEPS, name


def test_compare_flags_an_agent_20_percent_slower(tmp_path, capsys):
    base = _write(tmp_path / "base.jsonl", _rows("DQN", [1000, 1010, 990]) + _rows("SAC", [500, 500, 500]))
    new = _write(tmp_path / "new.jsonl", _rows("DQN", [800, 810, 790]) + _rows("SAC", [495, 505, 500]))
    assert bench.main(["--compare", str(base), str(new), "--tol", "0.10"]) == 1
    out = capsys.readouterr().out
    dqn = next(line for line in out.splitlines() if line.startswith("DQN"))
    sac = next(line for line in out.splitlines() if line.startswith("SAC"))
    assert "SLOWER" in dqn and "-20.0%" in dqn
    assert "SLOWER" not in sac
    assert "FAIL" in out


def test_compare_within_tolerance_passes(tmp_path, capsys):
    base = _write(tmp_path / "base.jsonl", _rows("DQN", [1000, 1000, 1000]))
    new = _write(tmp_path / "new.jsonl", _rows("DQN", [950, 960, 940]))
    assert bench.main(["--compare", str(base), str(new)]) == 0
    assert "SLOWER" not in capsys.readouterr().out
    # The same 5% slowdown fails a 3% tolerance.
    assert bench.main(["--compare", str(base), str(new), "--tol", "0.03"]) == 1


def test_compare_shows_missing_and_new_agents_without_failing(tmp_path, capsys):
    base = _write(tmp_path / "base.jsonl", _rows("DQN", [1000]) + _rows("PPO", [9000]))
    new = _write(tmp_path / "new.jsonl", _rows("DQN", [1000]) + _rows("TD3", [300]))
    assert bench.main(["--compare", str(base), str(new)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "MISSING" in next(line for line in lines if line.startswith("PPO"))
    assert "NEW" in next(line for line in lines if line.startswith("TD3"))


def test_compare_reads_exec_rate_when_both_files_have_it(tmp_path, capsys):
    # exec rates equal, whole-call rates halved: judged on execution, no slowdown.
    base = _write(tmp_path / "base.jsonl", _rows("DQN", [1000]))
    new_rows = _rows("DQN", [1000])
    new_rows[0]["steps_per_s"] = 250
    new = _write(tmp_path / "new.jsonl", new_rows)
    assert bench.main(["--compare", str(base), str(new)]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("metric: exec_steps_per_s")


def test_compare_falls_back_to_whole_call_rate_when_one_file_lacks_exec(tmp_path, capsys):
    base = _write(tmp_path / "base.jsonl", [{"agent": "DQN", "steps_per_s": 1000.0}])
    new = _write(tmp_path / "new.jsonl", _rows("DQN", [5000]))  # steps_per_s 2500 there
    assert bench.main(["--compare", str(base), str(new)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("metric: steps_per_s")
    assert "+150.0%" in out
