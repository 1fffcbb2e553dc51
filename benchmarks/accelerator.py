"""Ajax on whatever device JAX sees: seed scaling, env-copy scaling, compilation by stage, and Rejax beside it.

One command measures, for PPO, DQN, PQN and SAC at published settings, how throughput
grows with the number of seeds (one vmapped program) and with the number of env copies
inside each seed, and how long each program takes to trace, lower and compile. Each (run,
sweep) is one process, its sizes in ascending order, so the device's peak memory (a
high-water mark over the process's life) belongs to the largest size measured so far; a
size that does not fit is recorded with its error and ends that sweep. Ajax's compile cache
is off. Rows go to `benchmarks/accelerator.jsonl` with the device kind. `--prng rbg` runs every
worker, Ajax's and Rejax's, under JAX's `rbg` generator (one instruction a draw on a TPU,
where threefry is arithmetic); its rows race apart from threefry's.

A row's execution is the first call less the union of its compile spans (`--repeats 0`,
the default: a long budget runs once), or the median of `--repeats` further calls. Its
`matmul_flops` counts the run's matrix products from the program's jaxpr (2 x M x N x K for
each `dot_general` and convolution, each loop body times its trip count, the larger branch
of each `cond`), so `utilisation` is the achieved matrix FLOP/s against the chip's peak
(`PEAK_FLOPS`, bf16): the physical limit these small-network runs are raced against.

    ppo          PPO on CartPole-v1 at PureJaxRL's settings: 4 envs x 128 steps, 4 epochs of 4
                 minibatches, 64-64 tanh, learning rate 2.5e-4 (constant), 131,072 steps a seed
    dqn          DQN on CartPole-v1: 4 envs, batches of 256, 64-64 relu, updates from step 1,000,
                 one update per iteration of the 4 envs, 50,000 steps a seed, a replay of
                 the run's steps (Rejax's buffer_size)
    pqn          PQN on CartPole-v1 at its defaults (8 envs x 128 steps, 4 epochs of 4
                 minibatches, lambda 0.65) with Rejax's 64-64 LayerNorm network, 131,072 steps
    pqn-minatar  PQN on Breakout-MinAtar at purejaxql's settings (128 envs x 32 steps, 2 epochs
                 of 32 minibatches, MinAtar's network), 1,048,576 steps a seed
    sac          SAC on Pendulum-v1: 4 envs, batches of 256, 64-64 relu, updates from step
                 1,000, one update per iteration of the 4 envs, 20,000 steps a seed, a replay
                 of the run's steps as DQN's

The env-copy sweep keeps a run's iterations: its budget grows with `n_envs` (PPO's minibatch
count stays 4, so `batch_size` grows too). With `--rejax-python`, Rejax runs the same four
runs that it can express (not `pqn-minatar`: its PQN network is an MLP) at `--race-seeds`,
each seed of a program vmapped over `train`, as Rejax's README does, its evaluations
replaced by a no-op as Ajax runs none without a LoggingConfig.

    python benchmarks/accelerator.py --out benchmarks/accelerator.jsonl
    python benchmarks/accelerator.py --runs ppo --seeds 1 8 --envs 4 16 --out runs/acc.jsonl
    python benchmarks/accelerator.py --report benchmarks/accelerator.jsonl --plot docs/accelerator_scaling.png
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the sibling benchmark modules, imported where needed
OUT = HERE / "accelerator.jsonl"
SEEDS = (1, 8, 64, 256, 1024)
ENVS = (4, 16, 64, 256, 1024, 4096)
RACE_SEEDS = (1, 64, 1024)
# A chip's peak dense matrix throughput (bf16, FLOP/s), by JAX's device_kind: the v5e's is 197
# TFLOP/s (Google Cloud's TPU v5e page); a matrix product measured here ran at 165-167.
PEAK_FLOPS = {"TPU v5 lite": 197e12, "TPU v5e": 197e12}
TANH64 = ("64", "tanh", "64", "tanh")
RELU64 = ("64", "relu", "64", "relu")


@dataclass(frozen=True)
class Run:
    """An agent on a task at fixed settings: `kwargs(n_envs)` builds its keywords for a number of copies."""

    agent: str
    env_id: str
    n_envs: int
    n_timesteps: int
    kwargs: Callable[[int], dict[str, Any]]
    rejax: bool = True


def ppo_kwargs(n_envs: int) -> dict[str, Any]:
    return {
        "n_steps": 128,
        "n_epochs": 4,
        "batch_size": n_envs * 128 // 4,
        "actor_learning_rate": 2.5e-4,
        "critic_learning_rate": 2.5e-4,
        "gamma": 0.99,
        "gae_lambda": 0.95,
        "clip_range": 0.2,
        "ent_coef": 0.01,
        "vf_coef": 0.5,
        "max_grad_norm": 0.5,
        "actor_architecture": TANH64,
        "critic_architecture": TANH64,
    }


def replay_kwargs(architecture: dict[str, Any]) -> Callable[[int], dict[str, Any]]:
    return lambda n_envs: {"batch_size": 256, "learning_starts": 1_000, **architecture}


def pqn_minatar_kwargs(n_envs: int) -> dict[str, Any]:
    from learning_checks import minatar_pqn

    return {key: value for key, value in minatar_pqn(RUNS["pqn-minatar"].n_timesteps).items() if key != "n_envs"}


RUNS = {
    "ppo": Run("PPO", "CartPole-v1", 4, 131_072, ppo_kwargs),
    "dqn": Run("DQN", "CartPole-v1", 4, 50_000, replay_kwargs({"architecture": RELU64})),
    "pqn": Run("PQN", "CartPole-v1", 8, 131_072, lambda n_envs: {"architecture": RELU64}),
    "pqn-minatar": Run("PQN", "Breakout-MinAtar", 128, 1_048_576, pqn_minatar_kwargs, rejax=False),
    "sac": Run(
        "SAC", "Pendulum-v1", 4, 20_000, replay_kwargs({"actor_architecture": RELU64, "critic_architecture": RELU64})
    ),
}


# FLOPs from the jaxpr ---------------------------------------------------------------------------
def matmul_flops(jaxpr: Any, outer_trips: int = 1) -> float:
    """The matrix products' FLOPs in `jaxpr`: each loop body counted as often as it runs.

    XLA's cost analysis counts a loop body once, which for a run of thousands of iterations
    is off by that factor; here a `scan` multiplies its body by its length, the first
    `while` met outside any loop (the run's own loop over iterations) by `outer_trips`, any
    other `while` by one (a lower bound: the replay agents' gradient steps loop, once an
    iteration at these settings), and a `cond` takes its larger branch (an upper bound: an
    update gated until learning starts is counted from the first iteration).
    """
    return _flops(getattr(jaxpr, "jaxpr", jaxpr), [outer_trips])


def _flops(jaxpr: Any, outer: list[int]) -> float:
    total = 0.0
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == "dot_general":
            total += _dot_flops(eqn)
        elif name == "conv_general_dilated":
            total += _conv_flops(eqn)
        elif name == "scan":
            # Inside a scan, no while is the run's own loop any more.
            total += eqn.params["length"] * _flops(eqn.params["jaxpr"].jaxpr, [1])
        elif name == "while":
            trips, outer[0] = outer[0], 1
            body = _flops(eqn.params["body_jaxpr"].jaxpr, [1]) + _flops(eqn.params["cond_jaxpr"].jaxpr, [1])
            total += trips * body
        elif name == "cond":
            total += max(_flops(branch.jaxpr, [1]) for branch in eqn.params["branches"])
        else:
            for inner in _sub_jaxprs(eqn.params):
                total += _flops(inner, outer)
    return total


def _sub_jaxprs(params: dict[str, Any]) -> list[Any]:
    """The jaxprs a call-like primitive (pjit, custom_jvp, custom_vjp, remat, shard_map) holds."""
    found = []
    for value in params.values():
        for item in value if isinstance(value, tuple | list) else (value,):
            inner = getattr(item, "jaxpr", item)
            if hasattr(inner, "eqns"):
                found.append(inner)
    return found


def _dot_flops(eqn: Any) -> float:
    (contract, _), (batch, _) = eqn.params["dimension_numbers"]
    lhs, rhs = (var.aval.shape for var in eqn.invars)
    contracted = math.prod(lhs[d] for d in contract)
    return 2.0 * math.prod(eqn.outvars[0].aval.shape) * contracted if lhs and rhs else 0.0


def _conv_flops(eqn: Any) -> float:
    rhs = eqn.invars[1].aval.shape  # the kernel: its output features and the rest it sums over
    numbers = eqn.params["dimension_numbers"]
    out_feature_dim = numbers.rhs_spec[0]
    per_output = math.prod(rhs) // rhs[out_feature_dim] // eqn.params["feature_group_count"]
    return 2.0 * math.prod(eqn.outvars[0].aval.shape) * per_output


def traced_run(agent: Any, n_seeds: int, n_timesteps: int) -> tuple[Any, Any]:
    """`agent`'s run program for `n_seeds` seeds and `n_timesteps`, traced at its state's shapes
    rather than run, and the one seed's train it vmaps.

    The program is the one `train` compiles (the agent keeps it); a benchmark may read those
    internals, Ajax promises nothing about them.
    """
    import jax
    import jax.numpy as jnp

    run, _ = agent.run_settings(0, n_timesteps, 1, None, None)
    one_seed = agent.get_make_train()(run=run)
    keys = jax.ShapeDtypeStruct((n_seeds, 2), jnp.uint32)
    iterations = jax.ShapeDtypeStruct((n_seeds,), jnp.int32)
    return agent._program(one_seed).trace(keys, iterations, agent._skeleton(one_seed, run, n_seeds)), one_seed


def run_flops(agent: Any, n_seeds: int, n_timesteps: int) -> float:
    """The matrix FLOPs of `agent`'s run of `n_timesteps` for `n_seeds` seeds, every iteration counted."""
    traced, one_seed = traced_run(agent, n_seeds, n_timesteps)
    return matmul_flops(traced.jaxpr, outer_trips=one_seed.n_iterations)


# Measuring ---------------------------------------------------------------------------------------
def sweep_point(run: Run, sweep: str, size: int, scale: float = 1.0) -> tuple[int, int, int]:
    """(seeds, env copies, steps a seed) of one point of a sweep, the run's budget times `scale`:
    the env sweep keeps the iterations, so its budget grows with the copies."""
    budget = max(1, round(run.n_timesteps * scale))
    if sweep == "seeds":
        return size, run.n_envs, budget
    return 1, size, budget * size // run.n_envs


def build(run: Run, n_envs: int, n_timesteps: int) -> Any:
    """Ajax's agent of `run` with `n_envs` copies for a run of `n_timesteps`.

    A replay agent's buffer_size is the run's steps, Rejax's setting: left at its default,
    Ajax would allocate at least `REPLAY_FLOOR` rows, three times Rejax's ring at a
    quarter budget, and a write or sample that streams the ring would pay for that.
    """
    from ajax.agents.registry import AGENTS

    kwargs = run.kwargs(n_envs)
    if "learning_starts" in kwargs:
        kwargs["buffer_size"] = n_timesteps
    return AGENTS[run.agent](run.env_id, n_envs=n_envs, **kwargs)


def ajax_point(name: str, sweep: str, size: int, repeats: int, scale: float) -> dict[str, Any]:
    """One point measured with Ajax in this process."""
    from perf_bench import steps_run, timed

    run = RUNS[name]
    n_seeds, n_envs, n_timesteps = sweep_point(run, sweep, size, scale)
    agent = build(run, n_envs, n_timesteps)
    seeds = list(range(n_seeds))
    result = timed(lambda: agent.train(seed=seeds, n_timesteps=n_timesteps)[0], repeats)
    state = result.pop("out")
    steps = steps_run(state)
    del state
    flops = run_flops(agent, n_seeds, n_timesteps)
    return {"steps": steps, "matmul_flops": flops, **result}


def rejax_program(name: str, n_seeds: int, n_timesteps: int) -> Callable[[], Any]:
    """Rejax's algorithm of `name` at the same settings, its seeds one vmapped, jitted `train`."""
    import jax
    from rejax import DQN, PPO, PQN, SAC

    run = RUNS[name]
    common = {
        "env": run.env_id,
        "num_envs": run.n_envs,
        "total_timesteps": n_timesteps,
        "eval_freq": n_timesteps,
        "skip_initial_evaluation": True,
    }
    if name == "ppo":
        algo = PPO.create(
            num_steps=128,
            num_epochs=4,
            num_minibatches=4,
            learning_rate=2.5e-4,
            max_grad_norm=0.5,
            gamma=0.99,
            gae_lambda=0.95,
            clip_eps=0.2,
            ent_coef=0.01,
            vf_coef=0.5,
            agent_kwargs={"activation": "tanh", "hidden_layer_sizes": (64, 64)},
            **common,
        )
    elif name == "pqn":  # Rejax's PQN network is two 64-unit layers with LayerNorm, built in
        algo = PQN.create(
            num_steps=128,
            num_epochs=4,
            num_minibatches=4,
            learning_rate=2.5e-4,
            td_lambda=0.65,
            max_grad_norm=10.0,
            eps_start=1.0,
            eps_end=0.05,
            exploration_fraction=0.5,
            **common,
        )
    else:
        replay = {"batch_size": 256, "fill_buffer": 1_000, "buffer_size": n_timesteps, "num_epochs": 1}
        if name == "sac":
            algo = SAC.create(agent_kwargs={"activation": "relu"}, **replay, **common)
        else:  # Rejax's DQN has two 64-unit layers built in; Ajax's DQN is not double by default
            algo = DQN.create(agent_kwargs={"activation": "relu"}, ddqn=False, **replay, **common)
    algo = algo.replace(eval_callback=lambda algo, ts, rng: ())
    train = jax.jit(jax.vmap(type(algo).train, in_axes=(None, 0)))
    keys = jax.random.split(jax.random.PRNGKey(0), n_seeds)
    return lambda: train(algo, keys)[0]


def rejax_point(name: str, sweep: str, size: int, repeats: int, scale: float) -> dict[str, Any]:
    """One point measured with Rejax in this process (a Python that has Rejax, not Ajax)."""
    from perf_bench import timed

    n_seeds, _, n_timesteps = sweep_point(RUNS[name], sweep, size, scale)
    result = timed(rejax_program(name, n_seeds, n_timesteps), repeats)
    result.pop("out")
    return {"steps": n_timesteps * n_seeds, "matmul_flops": None, **result}


def worker(library: str, name: str, sweep: str, sizes: Sequence[int], repeats: int, scale: float, until: float) -> None:
    """Each size in turn, a JSON line apiece; a size that fails (out of memory), or the clock passing
    `until` (seconds since the epoch), ends the sweep."""
    import jax

    from perf_bench import device_fields, peak_bytes

    measure = ajax_point if library == "ajax" else rejax_point
    for size in sizes:
        if time.time() > until:
            return
        n_seeds, n_envs, n_timesteps = sweep_point(RUNS[name], sweep, size, scale)
        row = {"library": library, "run": name, "sweep": sweep, "n_seeds": n_seeds, "n_envs": n_envs}
        row["prng"] = jax.config.jax_default_prng_impl
        row.update(n_timesteps=n_timesteps, **device_fields())
        try:
            row.update(measure(name, sweep, size, repeats, scale))
        except Exception as error:  # noqa: BLE001 -- recorded: the sweep stops where the device does
            row["error"] = f"{type(error).__name__}: {str(error)[:400]}"
            print(json.dumps(row), flush=True)
            return
        row["exec_steps_per_s"] = round(row["steps"] / row["exec_s"], 1)
        row["whole_call_steps_per_s"] = round(row["steps"] / row["first_call_s"], 1)
        row["peak_bytes"] = peak_bytes()
        if row["matmul_flops"] is not None:
            row["achieved_flops_per_s"] = row["matmul_flops"] / row["exec_s"]
            peak = PEAK_FLOPS.get(row["device_kind"])
            row["utilisation"] = None if peak is None else row["achieved_flops_per_s"] / peak
        print(json.dumps(row), flush=True)


# Orchestration -----------------------------------------------------------------------------------
def in_fresh_process(
    python: str,
    library: str,
    name: str,
    sweep: str,
    sizes: Sequence[int],
    repeats: int,
    scale: float,
    until: float,
    prng: str = "threefry2x32",
) -> Iterator[dict[str, Any]]:
    """One worker process's rows as it prints them, so a run stopped at a time limit keeps what it measured.
    `prng` is JAX's random-number generator for the worker (`JAX_DEFAULT_PRNG_IMPL`), for either library."""
    from workers import SOURCE, worker_env

    command = [python, __file__, "--worker", library, name, sweep, *map(str, sizes)]
    command += ["--repeats", str(repeats), "--budget-scale", str(scale), "--until", str(until)]
    env = worker_env([HERE, SOURCE] if library == "ajax" else [HERE], JAX_DEFAULT_PRNG_IMPL=prng)
    with tempfile.TemporaryFile("w+") as errors:
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors, text=True, env=env) as worker_process:
            rows = 0
            for line in worker_process.stdout:
                if line.startswith("{"):
                    rows += 1
                    yield json.loads(line)
        if worker_process.returncode != 0 and rows == 0:
            errors.seek(0)
            raise RuntimeError(f"{library} {name} {sweep} failed:\n{errors.read()[-3000:]}")


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_label(row: dict[str, Any]) -> str:
    """The run's name, with the random-number generator beside it when it is not JAX's default."""
    prng = row.get("prng", "threefry2x32")
    return row["run"] if prng == "threefry2x32" else f"{row['run']} ({prng})"


def latest(rows: Sequence[dict[str, Any]]) -> dict[tuple, dict[str, Any]]:
    """The last row of each (device, library, run and its generator, sweep, seeds, envs)."""
    keyed = {}
    for row in rows:
        key = (row["device_kind"], row["library"], run_label(row), row["sweep"], row["n_seeds"], row["n_envs"])
        keyed[key] = row
    return keyed


def report(rows: Sequence[dict[str, Any]]) -> str:
    """A Markdown table: each point's steps per second, compile stages, memory and utilisation."""
    columns = ("device", "library", "run", "seeds", "envs", "exec steps/s", "compile s (trace / lower / backend)")
    lines = ["| " + " | ".join((*columns, "peak MiB", "util.")) + " |", "|" + "---|" * 9]
    for (device, library, run, _, n_seeds, n_envs), row in sorted(latest(rows).items()):
        if "error" in row:
            lines.append(f"| {device} | {library} | {run} | {n_seeds} | {n_envs} | {row['error'][:60]} | | | |")
            continue
        stages = f"{row['compile_spans_s']:.1f} ({row['trace_s']:.1f} / {row['lower_s']:.1f} / "
        stages += f"{row['backend_compile_s']:.1f})"
        memory = "-" if row.get("peak_bytes") is None else f"{row['peak_bytes'] / 2**20:,.0f}"
        util = "-" if row.get("utilisation") is None else f"{100 * row['utilisation']:.2f}%"
        lines.append(
            f"| {device} | {library} | {run} | {n_seeds} | {n_envs} | {row['exec_steps_per_s']:,.0f} | {stages} "
            f"| {memory} | {util} |"
        )
    return "\n".join(lines)


def race(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ajax's execution and compile against Rejax's at each seed count both measured (above 1: Ajax ahead)."""
    keyed = latest(rows)
    table = []
    for (device, library, run, sweep, n_seeds, n_envs), row in sorted(keyed.items()):
        peer = keyed.get((device, "rejax", run, sweep, n_seeds, n_envs))
        if library != "ajax" or peer is None or "error" in row or "error" in peer:
            continue
        table.append(
            {
                "device_kind": device,
                "run": run,
                "n_seeds": n_seeds,
                "execution_ratio": round(row["exec_steps_per_s"] / peer["exec_steps_per_s"], 2),
                "ajax_compile_s": row["compile_spans_s"],
                "rejax_compile_s": peer["compile_spans_s"],
            }
        )
    return table


def plot(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """Steps per second against seeds and against env copies, one line per run and library, log-log."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    keyed = latest(rows)
    for axis, sweep, size_of in ((axes[0], "seeds", 4), (axes[1], "envs", 5)):
        series: dict[tuple[str, str, str], list[tuple[int, float]]] = {}
        for key, row in keyed.items():
            if key[3] == sweep and "error" not in row and key[2] in RUNS:  # JAX's default generator only
                series.setdefault((key[0], key[1], key[2]), []).append((key[size_of], row["exec_steps_per_s"]))
        for (_, library, run), points in sorted(series.items()):
            xs, ys = zip(*sorted(points), strict=True)
            style = "-o" if library == "ajax" else "--x"  # one colour a run, Ajax solid, Rejax dashed
            axis.plot(xs, ys, style, color=f"C{list(RUNS).index(run)}", label=f"{library} {run}")
        axis.set(xlabel="seeds" if sweep == "seeds" else "env copies (1 seed)", ylabel="execution steps/s (all seeds)")
        if not series:
            axis.text(0.5, 0.5, "not measured", ha="center", va="center", transform=axis.transAxes)
            continue
        axis.set(xscale="log", yscale="log")
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=7)
    devices = sorted({row["device_kind"] for row in rows})
    figure.suptitle(f"benchmarks/accelerator.py on {', '.join(devices)}")
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", nargs="+", choices=list(RUNS), default=list(RUNS), help="which runs (default: all)")
    parser.add_argument("--seeds", type=int, nargs="*", default=list(SEEDS), help="seed counts (none: no seed sweep)")
    parser.add_argument("--envs", type=int, nargs="*", default=list(ENVS), help="env copies (none: no env sweep)")
    parser.add_argument("--repeats", type=int, default=0, help="execution-only calls after the first (default: 0)")
    parser.add_argument("--rejax-python", help="a Python with Rejax: run it beside Ajax at --race-seeds")
    parser.add_argument("--race-seeds", type=int, nargs="+", default=list(RACE_SEEDS), help="Rejax's seed counts")
    parser.add_argument("--out", type=Path, help="append the rows here")
    parser.add_argument("--report", type=Path, help="print the table of a file of rows instead of measuring")
    parser.add_argument("--plot", type=Path, help="with --report: draw the scaling plot here")
    parser.add_argument("--budget-scale", type=float, default=1.0, help="each run's steps a seed times this")
    parser.add_argument(
        "--prng",
        choices=("threefry2x32", "rbg", "unsafe_rbg"),
        default="threefry2x32",
        help="JAX's random-number generator in every worker, Ajax's and Rejax's (default: JAX's threefry)",
    )
    parser.add_argument("--minutes", type=float, help="start no measurement after this many minutes")
    parser.add_argument("--until", type=float, default=math.inf, help=argparse.SUPPRESS)
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is None and args.report is None and args.out is None:
        parser.error("--out is required: name the file the rows are appended to (or --report FILE to read one).")
    counts = [*args.seeds, *args.envs, *args.race_seeds]
    if any(size < 1 for size in counts) or args.repeats < 0 or args.budget_scale <= 0:
        parser.error("seed and env counts and --budget-scale must be positive, --repeats at least 0.")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker is not None:
        library, name, sweep, *sizes = args.worker
        worker(library, name, sweep, [int(size) for size in sizes], args.repeats, args.budget_scale, args.until)
        return 0
    if args.report is not None:
        rows = read_rows(args.report)
        print(report(rows))
        for line in race(rows):
            print(json.dumps(line))
        if args.plot is not None:
            plot(rows, args.plot)
        return 0
    from perf_bench import stamp
    from provenance import append_row

    # Each run's seed sweep beside Rejax's first, the env sweeps after: a time limit cuts the latter.
    jobs = []
    for name in args.runs:
        jobs += [("ajax", name, "seeds", sorted(args.seeds))] if args.seeds else []
        jobs += [("rejax", name, "seeds", sorted(args.race_seeds))] if args.rejax_python and RUNS[name].rejax else []
    jobs += [("ajax", name, "envs", sorted(args.envs)) for name in args.runs if args.envs]
    until = math.inf if args.minutes is None else time.time() + 60 * args.minutes
    rows = []
    for library, name, sweep, sizes in jobs:
        if time.time() > until:
            print(f"--minutes {args.minutes} passed: {library} {name} {sweep} not measured", flush=True)
            continue
        python = sys.executable if library == "ajax" else args.rejax_python
        measured = in_fresh_process(
            python, library, name, sweep, sizes, args.repeats, args.budget_scale, until, args.prng
        )
        for row in measured:
            rows.append(stamp(row))
            append_row(args.out, rows[-1])
            shown = row.get("error") or f"{row['exec_steps_per_s']:,.0f} steps/s, compile {row['compile_spans_s']} s"
            print(f"{library} {name} {sweep}: {row['n_seeds']} seeds x {row['n_envs']} envs: {shown}", flush=True)
    print(report(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
