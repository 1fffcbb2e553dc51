"""The agent benchmark: how fast each agent trains, execution apart from compilation.

The run: every agent in `ajax.agents.registry.AGENTS` with its default hyperparameters,
discrete agents (and PPO, which does both) on CartPole-v1, continuous ones on Pendulum-v1,
4 envs, 8,000 steps, logging off. `PINNED_KWARGS` pins what the defaults would make
meaningless at this budget: SAC-like agents learn from step 10,000 by default, so they are
pinned to learning_starts=1000 and update within the run; DAgger is given a CartPole
teacher; APG, which differentiates through its env, trains on a Pendulum tracking task
(`pendulum_tracking`) with episodes of its horizon, 100. DreamerV3 runs its smallest
model, "1m", on CartPole with sequences of 4 x 16 rows and train ratio 8: every code path
of an update (the posterior over replayed rows,
imagination, the actor, critic and replayed-value losses, the latents written back) runs,
on a sixteenth of the default batch of 16 x 64. Updates start at 128 rows, then one per 8
rows: 985 in the 8,000 steps (the defaults would make 187, from row 2,048; a ratio of 32
made 3,937 and a trial about 6 minutes). Its buffer
holds 4,000 rows, 1,000 per env copy, so the rings wrap within the run; at the default
size the replay would be allocated for the run's rows alone (16,384, the floor) and never
wrap. TDMPC2 runs model size 1 narrowed to 64-unit layers and a 64-unit latent, and a
planner of 64 sequences (4 from the policy prior, 8 elites) at the reference's horizon (3)
and iterations (6), on Pendulum: 1,000 uniform steps, a burst of 1,000 updates on the seed
data, then it plans at every step of every copy and makes one update (256 windows) per env
step, 8,000 in all; its buffer holds the run. IQL and TDMPC2MultiTask, offline, are not
benchmarked (`NOT_BENCHMARKED`). `SCENARIOS` adds entries run elsewhere than the defaults:
SAC/inverted_pendulum trains SAC on Brax's inverted pendulum, whose episodes terminate, so
the run exercises the auto-reset that computes a reset only on steps where an episode
ended, and the terminal targets. PPO/gru and PPO/transformer are
PPO's defaults with a memory of hidden size 64 (the transformer's window 32, 4 heads),
trained by BPTT over whole rollouts; SAC/gru and SAC/transformer are SAC's with the same
memories, trained on replayed windows (16 steps after a burn-in of 8, 16 windows per batch
of 256). APG/contextual is the contextual controller's network at one layer of width 64 (4
heads, the paper's context of 100, a PID head) on APG's tracking task: every update
back-propagates through 100 acting steps of the transformer. PQN/minatar_cnn and
PPO/minatar_cnn are those agents' defaults on Breakout-MinAtar's 10x10x4 boards, kept as
uint8 and read through MinAtar's network (`encoder="minatar_cnn"`).

For each agent: one 400-step warm-up call (its whole time, compilation included, is
`compile_s`), then `--trials` measured calls, each on a freshly built agent, so each one
traces and compiles its program again. A trial's row holds `measured_s` (the whole
`train()` call), `exec_s` (that less the spans JAX reports for tracing, lowering and
backend compilation, overlaps counted once) and the steps per second over each, counting
every seed's steps. Steps are the timesteps the run reached: PPO runs whole rollouts, one
more than the budget holds (8,192 steps for 8,000 at its 2,048-step default).

    JAX_PLATFORMS=cpu AJAX_NO_COMPILE_CACHE=1 python benchmarks/agent_bench.py --tag baseline \
        --out benchmarks/agent_baseline.jsonl
    python benchmarks/agent_bench.py --only DQN SAC --tag mine --out runs/mine.jsonl
    python benchmarks/agent_bench.py --compare benchmarks/agent_baseline.jsonl runs/mine.jsonl --tol 0.10

`--compare` exits 1 when an agent's median is slower than the baseline's by more than
`--tol`; it reads `exec_steps_per_s` when both files have it, else `steps_per_s`. Compare
captures taken on an idle machine only (each row records `load_avg_1m`), and rerun a DQN
flag before believing it: DQN executes 8,000 steps in about 0.2 s, and two idle captures
of the same code differed by 17% (PERFORMANCE_REPORT.md). Rows record the commit and
whether src/ differed from it (`worktree_dirty`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from ajax._compile_cache import cpu_model
from ajax.environments.controllers import cartpole_push

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compile_spans import CompileSpans, union_length  # noqa: E402, F401  (union_length: the tests read it here)
from provenance import git_commit  # noqa: E402  (peer_speed.py and comparison_runs.py read it here)

METRICS = ("exec_steps_per_s", "steps_per_s")

ROOT = Path(__file__).resolve().parents[1]

ENV_IDS = {"discrete": "CartPole-v1", "continuous": "Pendulum-v1"}
N_ENVS = 4
N_TIMESTEPS = 8_000
WARMUP_TIMESTEPS = 400
N_TRIALS = 3
SCENARIO = "defaults"
# Every other hyperparameter is the agent's default; these would leave no update within 8,000 steps.
# Registered agents the benchmark leaves out, and why.
NOT_BENCHMARKED = {
    "IQL": "offline: it learns from a dataset and steps no env while it trains",
    "TDMPC2MultiTask": "offline: it learns from a multi-task dataset and steps no env while it trains",
}
# Entries beyond the defaults: name -> (agent, env id, pinned keywords).
SCENARIOS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "SAC/inverted_pendulum": ("SAC", "inverted_pendulum", {"learning_starts": 1000}),
    "PPO/gru": ("PPO", "CartPole-v1", {"memory": {"kind": "gru", "hidden_size": 64}}),
    "PPO/transformer": ("PPO", "CartPole-v1", {"memory": {"kind": "transformer", "hidden_size": 64}}),
    "SAC/gru": ("SAC", "Pendulum-v1", {"learning_starts": 1000, "memory": {"kind": "gru", "hidden_size": 64}}),
    "SAC/transformer": (
        "SAC",
        "Pendulum-v1",
        {"learning_starts": 1000, "memory": {"kind": "transformer", "hidden_size": 64}},
    ),
    "PQN/minatar_cnn": ("PQN", "Breakout-MinAtar", {"encoder": "minatar_cnn"}),
    "PPO/minatar_cnn": ("PPO", "Breakout-MinAtar", {"encoder": "minatar_cnn"}),
    "APG/contextual": (
        "APG",
        "pendulum_tracking",
        {
            "horizon": 100,
            "actor_architecture": (),
            "memory": {"kind": "transformer", "hidden_size": 64, "num_heads": 4, "window": 100},
            "pid_head": True,
        },
    ),
}


def pendulum_tracking() -> Any:
    """APG's task: Pendulum from rest hanging down, its angle from there following steps of up to
    0.5 rad through a first-order reference model, episodes of 100 steps (tests/agents/test_apg.py's)."""
    import gymnax
    import jax.numpy as jnp

    from ajax.environments.model_reference import LinearReferenceModel, ModelReferenceWrapper, StepReference
    from ajax.wrappers import InitialStateWrapper

    plant, _ = gymnax.make("Pendulum-v1")
    plant = InitialStateWrapper(
        plant, lambda key, state, _: state.replace(theta=jnp.asarray(jnp.pi), theta_dot=jnp.asarray(0.0))
    )
    reference = StepReference(horizon=100, min_value=-0.5, max_value=0.5, min_duration=20, max_duration=50)
    model = LinearReferenceModel.first_order(a=0.9, b=0.1, c=1.0, d=0.0)
    return ModelReferenceWrapper(plant, reference, model, output_fn=lambda obs: jnp.arctan2(-obs[1], -obs[0]))


# Tasks that are no env id: the name the rows record, and how to build the env.
TASKS = {"pendulum_tracking": pendulum_tracking}
AGENT_TASKS = {"APG": "pendulum_tracking"}  # APG differentiates through its env: a tracking task, as its users'

PINNED_KWARGS: dict[str, dict[str, Any]] = {
    "APG": {"horizon": 100},
    "DAgger": {"expert_policy": cartpole_push},
    "SAC": {"learning_starts": 1000},
    "TD3": {"learning_starts": 1000},
    "REDQ": {"learning_starts": 1000},
    "TQC": {"learning_starts": 1000},
    "CrossQ": {"learning_starts": 1000},
    "SimbaV2": {"learning_starts": 1000},
    "ASAC": {"learning_starts": 1000},
    "DreamerV3": {"model_size": "1m", "batch_size": 4, "batch_length": 16, "train_ratio": 8, "buffer_size": 4_000},
    "TDMPC2": {
        "model_size": 1,
        "enc_dim": 64,
        "mlp_dim": 64,
        "latent_dim": 64,
        "num_samples": 64,
        "num_elites": 8,
        "num_pi_trajs": 4,
        "seed_steps": 1_000,
        "buffer_size": 8_000,
    },
}


# Capture --------------------------------------------------------------------------------
def worktree_dirty() -> bool | None:
    """Whether tracked files under src/ differ from the commit (None where git cannot tell)."""
    try:
        out = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "src"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return bool(out.stdout.strip()) if out.returncode == 0 else None


def env_id_for(name: str) -> str:
    """A scenario's env; else CartPole for discrete agents and for PPO (both), Pendulum for continuous ones."""
    from ajax.agents.registry import AGENTS

    if name in SCENARIOS:
        return SCENARIOS[name][1]
    if name in AGENT_TASKS:
        return AGENT_TASKS[name]
    return ENV_IDS["continuous" if AGENTS[name].continuous is True else "discrete"]


def build_agent(name: str, n_envs: int = N_ENVS, overrides: dict[str, Any] | None = None):
    from ajax.agents.registry import AGENTS

    agent_name, _, pinned = SCENARIOS.get(name, (name, None, PINNED_KWARGS.get(name, {})))
    kwargs = {**pinned, **(overrides or {})}
    env_id = env_id_for(name)
    env = TASKS[env_id]() if env_id in TASKS else env_id
    return AGENTS[agent_name](env, n_envs=n_envs, **kwargs), kwargs


def timed_train(agent: Any, seeds: list[int], n_timesteps: int) -> dict[str, Any]:
    """One `train()` call: its whole time, its compilation spans, the steps and updates it made."""
    with CompileSpans() as spans, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a warm-up shorter than learning_starts warns that it will not update
        start = time.perf_counter()
        state, _ = agent.train(seed=seeds if len(seeds) > 1 else seeds[0], n_timesteps=n_timesteps)
        measured = time.perf_counter() - start
    timesteps = np.atleast_1d(np.asarray(state.collector_state.timestep))
    n_updates = np.atleast_1d(np.asarray(state.n_updates))
    return {
        "measured_s": measured,
        "compile_spans_s": min(spans.total(), measured),
        "steps": int(timesteps.sum()),
        "n_updates": float(np.median(n_updates)),
    }


def capture(
    agents: Sequence[str] | None = None,
    *,
    out: str | os.PathLike,
    tag: str = "",
    n_seeds: int = 1,
    n_timesteps: int = N_TIMESTEPS,
    trials: int = N_TRIALS,
    warmup_timesteps: int = WARMUP_TIMESTEPS,
    n_envs: int = N_ENVS,
    overrides: dict[str, dict[str, Any]] | None = None,
    echo: bool = True,
) -> list[dict[str, Any]]:
    """Benchmark `agents` (all by default) and write one JSON line per trial to `out` (overwritten)."""
    from ajax.agents.registry import AGENTS

    names = list(agents) if agents else [*(name for name in AGENTS if name not in NOT_BENCHMARKED), *SCENARIOS]
    skipped = [f"{name} ({NOT_BENCHMARKED[name]})" for name in names if name in NOT_BENCHMARKED]
    if skipped:
        raise ValueError(f"Not benchmarked: {', '.join(skipped)}.")
    unknown = [name for name in names if name not in AGENTS and name not in SCENARIOS]
    if unknown:
        raise ValueError(f"Unknown agent(s) {unknown}; known: {sorted(AGENTS)} and scenarios {sorted(SCENARIOS)}.")
    if n_seeds < 1 or trials < 1 or n_timesteps < 1:
        raise ValueError("n_seeds, trials and n_timesteps must be positive.")
    seeds = list(range(n_seeds))
    common = {
        "commit": git_commit(),
        "worktree_dirty": worktree_dirty(),
        "backend": jax.default_backend(),
        "tag": tag,
        "n_envs": n_envs,
        "n_timesteps": n_timesteps,
        "n_seeds": n_seeds,
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "n_cpus": os.cpu_count(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "compile_cache": os.environ.get("AJAX_NO_COMPILE_CACHE", "") in ("", "0"),
    }
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    with path.open("w") as handle:
        for name in names:
            agent_overrides = (overrides or {}).get(name)
            warmup_agent, kwargs = build_agent(name, n_envs, agent_overrides)
            warmup = timed_train(warmup_agent, seeds, warmup_timesteps)
            del warmup_agent
            for trial in range(trials):
                agent, _ = build_agent(name, n_envs, agent_overrides)
                result = timed_train(agent, seeds, n_timesteps)
                del agent
                exec_s = max(result["measured_s"] - result["compile_spans_s"], 1e-9)
                row = {
                    **common,
                    "agent": name,
                    "scenario": name.split("/", 1)[1] if name in SCENARIOS else SCENARIO,
                    "env_id": env_id_for(name),
                    "pinned_kwargs": {key: getattr(value, "__name__", value) for key, value in kwargs.items()},
                    "trial": trial,
                    "timestamp": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                    "load_avg_1m": os.getloadavg()[0],
                    "compile_s": warmup["measured_s"],
                    "warmup_compile_spans_s": warmup["compile_spans_s"],
                    "measured_s": result["measured_s"],
                    "compile_spans_s": result["compile_spans_s"],
                    "exec_s": exec_s,
                    "steps": result["steps"],
                    "steps_per_s": result["steps"] / result["measured_s"],
                    "exec_steps_per_s": result["steps"] / exec_s,
                    "n_updates": result["n_updates"],
                }
                handle.write(json.dumps(row) + "\n")
                handle.flush()
                rows.append(row)
                if echo:
                    print(
                        f"{name:6s} trial {trial}: {row['exec_steps_per_s']:10.0f} exec steps/s "
                        f"{row['steps_per_s']:10.0f} steps/s  measured {row['measured_s']:.2f}s "
                        f"(compile spans {row['compile_spans_s']:.2f}s)  compile_s {row['compile_s']:.2f}  "
                        f"n_updates {row['n_updates']:.0f}",
                        flush=True,
                    )
    return rows


# Compare --------------------------------------------------------------------------------
def read_rows(path: str | os.PathLike) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number} is not a JSON line: {error}") from None
    return rows


def pick_metric(baseline: list[dict[str, Any]], candidate: list[dict[str, Any]]) -> str:
    """`exec_steps_per_s` when every row of both files has it, else `steps_per_s`."""
    rows = baseline + candidate
    return METRICS[0] if rows and all(METRICS[0] in row for row in rows) else METRICS[1]


def medians(rows: list[dict[str, Any]], metric: str) -> dict[str, float]:
    by_agent: dict[str, list[float]] = {}
    for row in rows:
        by_agent.setdefault(row["agent"], []).append(float(row[metric]))
    return {agent: statistics.median(values) for agent, values in by_agent.items()}


def compare(
    baseline_path: str | os.PathLike, candidate_path: str | os.PathLike, tol: float = 0.10
) -> tuple[list[str], int]:
    """The report's lines and the exit code: 1 when an agent in both files is slower by more than `tol`."""
    baseline, candidate = read_rows(baseline_path), read_rows(candidate_path)
    metric = pick_metric(baseline, candidate)
    what = "execution only, compilation excluded" if metric == METRICS[0] else "whole train() call"
    lines = [
        f"metric: {metric} ({what}); median per agent; tolerance {tol:.0%}",
        f"{'agent':8s} {'baseline':>12s} {'candidate':>12s} {'change':>8s}  verdict",
    ]
    base, cand = medians(baseline, metric), medians(candidate, metric)
    slower = []
    for agent in sorted(set(base) | set(cand)):
        if agent not in cand:
            lines.append(f"{agent:8s} {base[agent]:12.0f} {'-':>12s} {'-':>8s}  MISSING (not in candidate)")
            continue
        if agent not in base:
            lines.append(f"{agent:8s} {'-':>12s} {cand[agent]:12.0f} {'-':>8s}  NEW (no baseline)")
            continue
        change = cand[agent] / base[agent] - 1.0
        verdict = "ok"
        if change < -tol:
            verdict = f"SLOWER by {-change:.1%} (> {tol:.0%})"
            slower.append(agent)
        lines.append(f"{agent:8s} {base[agent]:12.0f} {cand[agent]:12.0f} {change:+8.1%}  {verdict}")
    lines.append(
        f"FAIL: slower than tolerance: {', '.join(slower)}" if slower else "OK: no agent slower than tolerance"
    )
    return lines, 1 if slower else 0


# Command line ---------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--only", nargs="+", metavar="AGENT", help="benchmark these agents only")
    parser.add_argument("--tag", default="", help="a label stored in every row")
    parser.add_argument("--out", help="the JSONL file to write (overwritten); required for a capture")
    parser.add_argument("--n-seeds", type=int, default=1, help="train N seeds at once (vmapped)")
    parser.add_argument("--timesteps", type=int, default=N_TIMESTEPS, help="steps per seed of a measured call")
    parser.add_argument("--trials", type=int, default=N_TRIALS, help="measured calls per agent")
    parser.add_argument("--compare", nargs=2, metavar=("BASELINE", "CANDIDATE"), help="compare two captures")
    parser.add_argument("--tol", type=float, default=0.10, help="the slowdown --compare tolerates (0.10: 10%%)")
    args = parser.parse_args(argv)
    if args.compare is None and not args.out:
        parser.error(
            "--out PATH is required for a capture (e.g. --out runs/bench.jsonl); "
            "nothing is written by default, so a quick check never overwrites the baseline."
        )
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.compare is not None:
        lines, code = compare(*args.compare, tol=args.tol)
        print("\n".join(lines))
        return code
    capture(
        args.only,
        out=args.out,
        tag=args.tag,
        n_seeds=args.n_seeds,
        n_timesteps=args.timesteps,
        trials=args.trials,
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    sys.exit(main())
