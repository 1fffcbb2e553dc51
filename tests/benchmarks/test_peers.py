"""benchmarks/peers.py: one command builds each peer's own virtual environment at the pinned
versions and hands its Python to the side-by-side benchmark of that peer (run here dry)."""

from __future__ import annotations

from tests.benchmark_scripts import load_benchmark

peers = load_benchmark("peers")


def test_a_dry_run_builds_each_peer_at_its_pins_and_runs_its_benchmark_with_that_python(tmp_path, capsys):
    assert peers.main(["--venvs", str(tmp_path), "--dry-run", "--rejax-runs", "ppo", "--rounds", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rejax, sbx = tmp_path / "rejax" / "bin" / "python", tmp_path / "sbx" / "bin" / "python"
    assert f"-m venv {tmp_path / 'rejax'}" in lines[0] and f"-m venv {tmp_path / 'sbx'}" in lines[2]
    assert lines[1].endswith("pip install --quiet rejax==0.1.3 jax==0.10.2 gymnax==0.0.9")
    assert "sbx-rl==0.28.0" in lines[3]
    assert lines[4].endswith(f"peer_speed.py --rejax-python {rejax} --only ppo --rounds 2")
    assert lines[5].endswith(f"gymnasium_peers.py --sbx-python {sbx} --runs ppo-cartpole sac-pendulum")
    assert lines[6].endswith(f"sbx_speed.py --sbx-python {sbx} --only sac-64 sac-256 --rounds 2")
    assert not (tmp_path / "rejax").exists()  # nothing ran


def test_an_existing_environment_is_reused_and_a_benchmark_without_runs_is_skipped(tmp_path, capsys):
    (tmp_path / "rejax" / "bin").mkdir(parents=True)
    (tmp_path / "rejax" / "bin" / "python").touch()
    peers.main(["--venvs", str(tmp_path), "--dry-run", "--sbx-runs", "--sbx-speed-runs"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and "peer_speed.py" in lines[0]


def test_on_an_accelerator_the_scaling_race_runs_with_rejaxs_python(tmp_path, capsys):
    (tmp_path / "rejax" / "bin").mkdir(parents=True)
    (tmp_path / "rejax" / "bin" / "python").touch()
    argv = ["--venvs", str(tmp_path), "--dry-run", "--rejax-runs", "--sbx-runs", "--sbx-speed-runs"]
    peers.main([*argv, "--accelerator-runs", "ppo", "sac"])
    (line,) = capsys.readouterr().out.splitlines()
    rejax = tmp_path / "rejax" / "bin" / "python"
    assert f"accelerator.py --rejax-python {rejax} --runs ppo sac --out " in line
    assert line.endswith("benchmarks/accelerator.jsonl")


def test_brax_races_with_this_python_and_builds_no_environment(tmp_path, capsys):
    argv = ["--venvs", str(tmp_path), "--dry-run", "--rejax-runs", "--sbx-runs", "--sbx-speed-runs"]
    peers.main([*argv, "--brax-runs", "ppo", "sac"])
    (line,) = capsys.readouterr().out.splitlines()
    assert "brax_race.py --agents ppo sac --out " in line and line.endswith("benchmarks/brax_race.jsonl")
    assert not any(tmp_path.iterdir())
