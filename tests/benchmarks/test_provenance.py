"""benchmarks/provenance.py: a row names the commit its code came from, in a checkout or an archive."""

from __future__ import annotations

import subprocess

from tests.benchmark_scripts import BENCHMARKS, load_benchmark

provenance = load_benchmark("provenance")


def test_a_checkout_reads_git_and_an_archive_its_own_commit(tmp_path, monkeypatch):
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=BENCHMARKS, capture_output=True, text=True)
    assert provenance.ARCHIVE_COMMIT.read_text().startswith("$Format")  # a checkout holds the placeholder
    assert provenance.git_commit() == head.stdout.strip()
    archived = tmp_path / "archive_commit"
    archived.write_text("abc1234\n")  # what `git archive` writes there (export-subst)
    monkeypatch.setattr(provenance, "ARCHIVE_COMMIT", archived)
    assert provenance.git_commit() == "abc1234"  # not the commit of a repository enclosing the archive


def test_a_reported_row_is_printed_and_appended_only_where_asked(tmp_path, capsys):
    out = tmp_path / "rows" / "study.jsonl"
    provenance.report_row({"run": "ppo", "s": 1.5}, out)
    provenance.report_row({"run": "sac"}, None)
    assert capsys.readouterr().out.splitlines() == ['{"run": "ppo", "s": 1.5}', '{"run": "sac"}']
    assert out.read_text().splitlines() == ['{"run": "ppo", "s": 1.5}']
