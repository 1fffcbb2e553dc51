"""benchmarks/studies/ring_pace.py: a configuration's row, and the row of one that ran too long."""

from __future__ import annotations

import json

from tests.benchmark_scripts import load_benchmark

ring_pace = load_benchmark("studies/ring_pace")

# Small enough for the CPU: training starts at row 16 (2 envs, sequences of 4 rows after a context row).
TINY = {"model_size": "1m", "n_envs": 2, "train_ratio": 8.0, "batch_size": 2, "batch_length": 4}


def test_a_configuration_past_its_limit_gives_a_row_that_says_so(capsys):
    assert ring_pace.main(["--seeds", "2", "--buffer-sizes", "64", "--limit", "0.01"]) == 0
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert row["timed_out"] is True and row["limit_s"] == 0.01
    assert (row["n_seeds"], row["buffer_size"]) == (2, 64)


def test_the_timed_call_counts_the_updates_the_train_ratio_owes_on_the_ring_it_allocated(tmp_path):
    args = ["--seeds", "2", "--buffer-sizes", "64", "--warmup", "32", "--rows", "32", "--eval-every", "48"]
    assert ring_pace.main([*args, "--settings", json.dumps(TINY), "--out", str(tmp_path / "rows.jsonl")]) == 0
    (row,) = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    # 32 rows at 8 replayed rows per collected row, in sequences of 2 x 4 rows: one update per row.
    assert row["updates"] == 32 and row["ring_rows_per_env"] == 32
    assert row["n_seeds"] == 2 and row["eval_every"] == 48 and row["updates_per_s"] > 0 and "timed_out" not in row


def test_another_checkouts_commit_is_read_from_its_archive_stamp(tmp_path):
    (tmp_path / "src").mkdir()
    assert ring_pace.archived_commit(tmp_path / "src") == f"source at {tmp_path / 'src'}"
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "archive_commit").write_text("$Format:%h$\n")  # a checkout's placeholder
    assert ring_pace.archived_commit(tmp_path / "src").startswith("source at")
    (tmp_path / "benchmarks" / "archive_commit").write_text("d618dde\n")
    assert ring_pace.archived_commit(tmp_path / "src") == "d618dde"
