"""benchmarks/workers.py: a worker's environment and the rows it prints."""

from __future__ import annotations

import os
import sys

import pytest
from tests.benchmark_scripts import load_benchmark

workers = load_benchmark("workers")


def test_a_workers_environment_turns_the_cache_off_and_puts_its_paths_first(monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    monkeypatch.delenv("AJAX_NO_COMPILE_CACHE", raising=False)
    env = workers.worker_env([tmp_path, workers.SOURCE], JAX_PLATFORMS="cpu")
    assert env["AJAX_NO_COMPILE_CACHE"] == "1" and env["JAX_PLATFORMS"] == "cpu"
    assert env["PYTHONPATH"].split(os.pathsep) == [str(tmp_path), str(workers.SOURCE), "/elsewhere"]
    monkeypatch.delenv("PYTHONPATH")
    assert workers.worker_env(AJAX_NO_COMPILE_CACHE="")["AJAX_NO_COMPILE_CACHE"] == ""
    assert workers.worker_env()["PYTHONPATH"] == ""


def test_only_the_lines_that_open_an_object_are_rows():
    text = 'WARNING: platform\n{"run": "ppo", "s": 1}\nnot json {\n{"run": "sac"}\n'
    assert workers.json_rows(text) == [{"run": "ppo", "s": 1}, {"run": "sac"}]


def test_a_worker_that_fails_or_prints_no_row_raises_with_its_error_output():
    code = 'import sys; print("{\\"a\\": 1}"); print("{\\"a\\": 2}")'
    assert workers.worker_rows([sys.executable, "-c", code], dict(os.environ), "two rows") == [{"a": 1}, {"a": 2}]
    failing = [sys.executable, "-c", 'import sys; print("{}"); sys.exit("broke here")']
    with pytest.raises(RuntimeError, match=r"crashing failed \(exit code 1\):\nbroke here"):
        workers.worker_rows(failing, dict(os.environ), "crashing")
    with pytest.raises(RuntimeError, match=r"silent failed \(exit code 0\)"):
        workers.worker_rows([sys.executable, "-c", "print('no rows')"], dict(os.environ), "silent")


def test_a_worker_past_its_time_is_stopped_and_says_so():
    with pytest.raises(TimeoutError, match="sleeper ran past 0.5 s"):
        workers.worker_rows([sys.executable, "-c", "import time; time.sleep(30)"], dict(os.environ), "sleeper", 0.5)
