"""Ajax beside its peers in one command: Rejax and SBX, each built in a virtual environment of its own.

Neither library is a dependency of Ajax. This script makes a virtual environment for each
(in a temporary folder, or in `--venvs DIR`, kept and reused), installs the pinned
versions below, and runs the two side-by-side benchmarks with those Pythons, one after the
other, each interleaving the libraries itself:

- `peer_speed.py`: Rejax on gymnax's tasks (PPO, SAC, DQN), one seed a process, execution
  and whole call, the libraries taking turns;
- `gymnasium_peers.py`: SBX on Gymnasium's tasks (PPO CartPole, SAC Pendulum and
  HalfCheetah, TQC and CrossQ Pendulum), 3 seeds, whole call and final returns;
- `sbx_speed.py`: SBX's SAC against Ajax's on Pendulum, 10,000 steps, 64-64 and 256-256
  layers, each library on its own footing (Gymnasium from Python, gymnax in Ajax's
  program), execution, compilation and the whole call, cold and over a warm compile cache;
- `accelerator.py` (only with `--accelerator-runs`, on a machine with an accelerator): Rejax
  beside Ajax at 1, 64 and 1,024 seeds, with Ajax's seed and env-copy sweeps, on whatever
  device JAX sees;
- `brax_race.py` (only with `--brax-runs`, on an accelerator): Brax's own PPO and SAC trainers
  beside Ajax's at Brax's published settings on ant and humanoid. Brax is an extra of Ajax,
  already in its virtual environment, so this one builds nothing and runs with this Python.

Each appends its JSON line(s) to its own file under `benchmarks/` and prints its table.
Record the machine's load beside the table: only ratios measured on a quiet machine mean
anything. `--dry-run` prints the commands without running them.

    JAX_PLATFORMS=cpu python benchmarks/peers.py --venvs /tmp/peers
    JAX_PLATFORMS=cpu python benchmarks/peers.py --rejax-runs ppo sac --sbx-runs sac-pendulum --sbx-speed-runs
    python benchmarks/peers.py --rejax-runs --sbx-runs --sbx-speed-runs --accelerator-runs ppo dqn pqn sac
    python benchmarks/peers.py --rejax-runs --sbx-runs --sbx-speed-runs --brax-runs ppo sac
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent

# What each peer's side installs: the versions the recorded tables were measured with.
# Rejax 0.1.3 steps gymnax with the 0.0.x API (same CartPole and Pendulum dynamics as 1.x).
PEERS = {
    "rejax": ("rejax==0.1.3", "jax==0.10.2", "gymnax==0.0.9"),
    "sbx": ("sbx-rl==0.28.0", "gymnasium[classic-control,mujoco]"),
}


def python_of(venvs: Path, peer: str) -> Path:
    return venvs / peer / "bin" / "python"


def build_commands(venvs: Path, peer: str) -> list[list[str]]:
    """Make `peer`'s virtual environment and install its pinned packages into it."""
    return [
        [sys.executable, "-m", "venv", str(venvs / peer)],
        [str(python_of(venvs, peer)), "-m", "pip", "install", "--quiet", *PEERS[peer]],
    ]


def bench_commands(
    venvs: Path,
    rejax_runs: Sequence[str],
    sbx_runs: Sequence[str],
    sbx_speed_runs: Sequence[str],
    rounds: int,
    accelerator_runs: Sequence[str] = (),
    brax_runs: Sequence[str] = (),
) -> list[list[str]]:
    """The five benchmarks, each handed its peer's Python (a benchmark without runs is skipped;
    Brax's runs with this one, Brax being an extra of Ajax)."""
    commands = []
    if rejax_runs:
        commands.append(
            [sys.executable, str(HERE / "peer_speed.py"), "--rejax-python", str(python_of(venvs, "rejax")),
             "--only", *rejax_runs, "--rounds", str(rounds)]
        )  # fmt: skip
    if sbx_runs:
        commands.append(
            [sys.executable, str(HERE / "gymnasium_peers.py"), "--sbx-python", str(python_of(venvs, "sbx")),
             "--runs", *sbx_runs]
        )  # fmt: skip
    if sbx_speed_runs:
        commands.append(
            [sys.executable, str(HERE / "sbx_speed.py"), "--sbx-python", str(python_of(venvs, "sbx")),
             "--only", *sbx_speed_runs, "--rounds", str(min(rounds, 2))]
        )  # fmt: skip
    if accelerator_runs:
        commands.append(
            [sys.executable, str(HERE / "accelerator.py"), "--rejax-python", str(python_of(venvs, "rejax")),
             "--runs", *accelerator_runs, "--out", str(HERE / "accelerator.jsonl")]
        )  # fmt: skip
    if brax_runs:
        commands.append(
            [sys.executable, str(HERE / "brax_race.py"), "--agents", *brax_runs, "--out", str(HERE / "brax_race.jsonl")]
        )  # fmt: skip
    return commands


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venvs", type=Path, default=None, help="keep the virtual environments here (default: a temp)")
    parser.add_argument("--rejax-runs", nargs="*", default=["ppo", "sac", "dqn"], help="peer_speed.py's runs")
    parser.add_argument(
        "--sbx-runs", nargs="*", default=["ppo-cartpole", "sac-pendulum"], help="gymnasium_peers.py's runs"
    )
    parser.add_argument("--sbx-speed-runs", nargs="*", default=["sac-64", "sac-256"], help="sbx_speed.py's runs")
    parser.add_argument(
        "--accelerator-runs", nargs="*", default=[], help="accelerator.py's runs, on an accelerator (default: none)"
    )
    parser.add_argument(
        "--brax-runs",
        nargs="*",
        choices=("ppo", "sac"),
        default=[],
        help="brax_race.py's agents, on an accelerator (default: none)",
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="fresh processes per library and run (sbx_speed.py: at most 2)"
    )
    parser.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ajax-peers-") as scratch:
        venvs = args.venvs or Path(scratch)
        wanted = (
            ("rejax", args.rejax_runs),
            ("sbx", args.sbx_runs),
            ("sbx", args.sbx_speed_runs),
            ("rejax", args.accelerator_runs),
        )
        peers = list(dict.fromkeys(peer for peer, runs in wanted if runs))
        builds = [c for peer in peers if not python_of(venvs, peer).exists() for c in build_commands(venvs, peer)]
        benches = bench_commands(
            venvs,
            args.rejax_runs,
            args.sbx_runs,
            args.sbx_speed_runs,
            args.rounds,
            args.accelerator_runs,
            args.brax_runs,
        )
        for command in builds + benches:
            print("$", shlex.join(command), flush=True)
            if not args.dry_run:
                subprocess.run(command, check=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
