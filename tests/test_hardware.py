"""Installing for an accelerator, and the line saying which backend and devices a run uses.

The accelerators' extras and bootstrap.sh's AJAX_ACCELERATOR can only be checked here as text and
metadata: CI has no GPU or TPU. The device report is checked on the CPU and on a fake TPU device.
"""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path
from types import SimpleNamespace

import jax
import pytest

import ajax
from ajax import hardware
from ajax.cli import main
from ajax.commands import train

ROOT = Path(__file__).resolve().parent.parent
ACCELERATORS = ("cuda12", "cuda13", "tpu")


def test_each_accelerator_extra_installs_jaxs_own_build_and_all_leaves_them_out():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for name in ACCELERATORS:
        assert extras[name] == [f"jax[{name}]>=0.10"]
    (everything,) = extras["all"]
    included = everything.removeprefix("ajax[").removesuffix("]").split(",")
    assert not set(included) & set(ACCELERATORS), "`all` must stay installable on a machine without an accelerator"


def test_bootstrap_refuses_an_unknown_accelerator_before_building_anything(tmp_path):
    """A copy of the script in an empty repository: refused, it leaves no .venv and runs no Python."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "bootstrap.sh", tmp_path / "scripts" / "bootstrap.sh")
    done = subprocess.run(
        ["bash", str(tmp_path / "scripts" / "bootstrap.sh")],
        env={"PATH": "/usr/bin:/bin", "AJAX_ACCELERATOR": "rocm", "PYTHON": "false"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "AJAX_ACCELERATOR=rocm is not one of cuda12, cuda13 or tpu" in done.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["scripts"]


def test_the_report_on_the_cpu_names_the_backend_the_version_and_the_devices(monkeypatch):
    monkeypatch.delenv("JAX_PLATFORMS", raising=False)
    line = ajax.device_report()
    n = len(jax.devices())
    assert line.startswith(f"JAX {jax.__version__}, backend cpu: {n} device")
    assert "GiB" not in line and "JAX_PLATFORMS" not in line  # the CPU reports no memory
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    assert ajax.device_report().endswith(" (JAX_PLATFORMS=cpu)")
    assert hardware.device_info()["memory_bytes"] is None


def _fake_tpus(monkeypatch: pytest.MonkeyPatch, n: int, stats: dict | None) -> None:
    """`n` TPU v5 lite devices whose runtime reports `stats` as their memory statistics."""
    device = SimpleNamespace(platform="tpu", device_kind="TPU v5 lite", memory_stats=lambda: stats)
    monkeypatch.setattr(jax, "devices", lambda: [device] * n)
    monkeypatch.setattr(jax, "default_backend", lambda: "tpu")
    monkeypatch.delenv("JAX_PLATFORMS", raising=False)


def test_the_report_on_a_tpu_names_its_kind_and_memory(monkeypatch):
    _fake_tpus(monkeypatch, 1, {"bytes_limit": 16 * 2**30, "bytes_in_use": 0})
    info = hardware.device_info()
    assert info == {
        "jax": jax.__version__,
        "backend": "tpu",
        "n_devices": 1,
        "device_kind": "TPU v5 lite",
        "memory_bytes": 16 * 2**30,
        "process_count": 1,
        "jax_platforms": None,
    }
    assert hardware.device_report() == f"JAX {jax.__version__}, backend tpu: 1 device, TPU v5 lite, 16.0 GiB"


@pytest.mark.parametrize(("stats", "memory"), [({"bytes_limit": 16 * 2**30}, ", 16.0 GiB on the first"), ({}, "")])
def test_the_report_on_several_tpus_gives_the_first_ones_memory_where_reported(monkeypatch, stats, memory):
    _fake_tpus(monkeypatch, 4, stats)
    assert hardware.device_report() == f"JAX {jax.__version__}, backend tpu: 4 devices, TPU v5 lite{memory}"


def test_train_prints_the_report_before_it_trains(monkeypatch, tmp_path, capsys):
    """The line comes out once the agent is built and before the first chunk compiles."""

    class TrainingStartedError(Exception):
        pass

    def refuse_to_train(*args: object, **kwargs: object) -> None:
        raise TrainingStartedError

    monkeypatch.setattr(train, "_train_with_progress", refuse_to_train)
    with pytest.raises(TrainingStartedError):
        main(["train", "DQN", "CartPole-v1", "--timesteps", "1000", "--out", str(tmp_path / "run")])
    assert ajax.device_report() in capsys.readouterr().out.splitlines()
