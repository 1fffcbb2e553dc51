"""Ajax against Rejax on the same work, each run in a fresh process, the libraries taking turns.

Rejax (Liesen et al. 2024) is the closest peer: a JAX library whose whole run is one jitted
program. It is never a dependency of Ajax: install it in a throwaway virtual environment
and hand this script that environment's Python. Rejax 0.1.3 steps gymnax with the 0.0.x
API, so that environment needs gymnax 0.0.9 (the CartPole and Pendulum dynamics are the
same as gymnax 1.x's, which Ajax uses):

    python -m venv /tmp/rejax-venv
    /tmp/rejax-venv/bin/pip install rejax==0.1.3 jax==0.10.2 gymnax==0.0.9
    JAX_PLATFORMS=cpu python benchmarks/peer_speed.py --rejax-python /tmp/rejax-venv/bin/python

Each run is one seed, the same sizes on both sides (below), with one evaluation of 10
episodes at the end (Rejax's own evaluation of 128 episodes is replaced so that both
evaluate alike). A process builds the agent, calls its training once (`first_call_s`:
tracing, compilation and a run), then `--repeats` more times (`exec_s`: their median,
execution only). `compile_s` is the first call minus the median execution. Rounds
alternate the libraries, so a change of load on the machine falls on both; on a loaded
machine only the ratios in the summary mean something. Ajax runs with its compile cache off.

    ppo   CartPole-v1, 4 envs, 128-step rollouts, 4 epochs of 4 minibatches, two 64-unit tanh
          layers, learning rate 2.5e-4, 100,000 steps.
    sac   Pendulum-v1, 4 envs, batches of 256, two 64-unit relu layers, updates from step
          1,000, one update per 4 steps, 20,000 steps.
    dqn   CartPole-v1, 4 envs, batches of 256, two 64-unit relu layers, updates from step
          1,000, one update per 4 steps, 20,000 steps.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the sibling benchmark modules, imported where needed
OUT = HERE / "peer_speed.jsonl"
RUNS = ("ppo", "sac", "dqn")
STEPS = {"ppo": 100_000, "sac": 20_000, "dqn": 20_000}
LEARNING_STARTS = 1_000
EVAL_EPISODES = 10


def ajax_program(run: str) -> Callable[[], Any]:
    """The Ajax agent of `run`, as a call that trains it once and returns its state."""
    from ajax import DQN, PPO, SAC

    tanh, relu = ("64", "tanh", "64", "tanh"), ("64", "relu", "64", "relu")
    if run == "ppo":
        agent = PPO(
            "CartPole-v1",
            n_envs=4,
            n_steps=128,
            n_epochs=4,
            batch_size=128,
            actor_learning_rate=2.5e-4,
            critic_learning_rate=2.5e-4,
            actor_architecture=tanh,
            critic_architecture=tanh,
        )
    elif run == "sac":
        agent = SAC(
            "Pendulum-v1",
            n_envs=4,
            batch_size=256,
            actor_architecture=relu,
            critic_architecture=relu,
            learning_starts=LEARNING_STARTS,
        )
    else:
        agent = DQN("CartPole-v1", n_envs=4, batch_size=256, architecture=relu, learning_starts=LEARNING_STARTS)
    return lambda: agent.train(seed=0, n_timesteps=STEPS[run], num_episode_test=EVAL_EPISODES)[0]


def rejax_program(run: str) -> Callable[[], Any]:
    """Rejax's algorithm of `run` at the same sizes, as one jitted call of its `train`."""
    import jax
    from rejax import DQN, PPO, SAC
    from rejax.evaluate import evaluate

    common = {"num_envs": 4, "total_timesteps": STEPS[run], "eval_freq": STEPS[run], "skip_initial_evaluation": True}
    if run == "ppo":
        algo = PPO.create(
            env="CartPole-v1",
            num_steps=128,
            num_epochs=4,
            num_minibatches=4,
            learning_rate=2.5e-4,
            agent_kwargs={"activation": "tanh", "hidden_layer_sizes": (64, 64)},
            **common,
        )
    else:
        replay = {"batch_size": 256, "fill_buffer": LEARNING_STARTS, "buffer_size": STEPS[run], "num_epochs": 1}
        if run == "sac":
            algo = SAC.create(env="Pendulum-v1", agent_kwargs={"activation": "relu"}, **replay, **common)
        else:  # Rejax's DQN has two 64-unit layers built in; Ajax's DQN is not double by default
            algo = DQN.create(env="CartPole-v1", agent_kwargs={"activation": "relu"}, ddqn=False, **replay, **common)

    def ten_episodes(algo: Any, ts: Any, rng: jax.Array) -> Any:
        return evaluate(
            algo.make_act(ts), rng, algo.env, algo.env_params, EVAL_EPISODES, algo.env_params.max_steps_in_episode
        )

    algo = algo.replace(eval_callback=ten_episodes)
    train = jax.jit(type(algo).train)
    key = jax.random.PRNGKey(0)
    return lambda: train(algo, key)[0]


def measure(library: str, run: str, repeats: int) -> dict[str, Any]:
    """In this process: the first call, then `repeats` execution-only calls (`perf_bench.timed`)."""
    import jax

    from perf_bench import timed

    call = ajax_program(run) if library == "ajax" else rejax_program(run)
    result = timed(call, repeats)
    first_call_s, exec_s = result["first_call_s"], result["exec_s"]
    return {
        "library": library,
        "run": run,
        "steps": STEPS[run],
        "first_call_s": first_call_s,
        "exec_s": exec_s,
        "exec_times_s": result["exec_times_s"],
        "compile_s": round(first_call_s - exec_s, 3),
        "exec_steps_per_s": round(STEPS[run] / exec_s, 1),
        "whole_call_steps_per_s": round(STEPS[run] / first_call_s, 1),
        "jax": jax.__version__,
    }


def in_fresh_process(python: str, library: str, run: str, repeats: int) -> dict[str, Any]:
    """One measurement in a new interpreter, so no compiled program or cache carries over."""
    from workers import SOURCE, worker_env, worker_rows

    command = [python, __file__, "--worker", library, run, "--repeats", str(repeats)]
    env = worker_env([SOURCE] if library == "ajax" else [], JAX_PLATFORMS="cpu")
    return worker_rows(command, env, f"{library} {run}")[-1]


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per run, each library's median over rounds and Ajax's ratio to Rejax (above 1: Ajax ahead)."""
    table = []
    for run in dict.fromkeys(row["run"] for row in rows):
        medians = {}
        for library in ("ajax", "rejax"):
            mine = [row for row in rows if row["run"] == run and row["library"] == library]
            medians[library] = {
                key: statistics.median(row[key] for row in mine) for key in ("exec_s", "compile_s", "first_call_s")
            }
        ajax, rejax = medians["ajax"], medians["rejax"]
        table.append(
            {
                "run": run,
                "ajax": ajax,
                "rejax": rejax,
                "execution_ratio": round(rejax["exec_s"] / ajax["exec_s"], 2),
                "whole_call_ratio": round(rejax["first_call_s"] / ajax["first_call_s"], 2),
                "compile_ratio": round(rejax["compile_s"] / ajax["compile_s"], 2),
            }
        )
    return table


def append_record(out: Path, rows: list[dict[str, Any]], table: list[dict[str, Any]], **settings: Any) -> dict:
    """One JSON line for the run (when, which commit, the machine, the settings, the summary, every
    row) appended to `out`; returned."""
    from agent_bench import cpu_model, git_commit

    record = {
        "timestamp": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "cpu": cpu_model(),
        "n_cpus": os.cpu_count(),
        **settings,
        "summary": table,
        "rows": rows,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as file:
        file.write(json.dumps(record) + "\n")
    return record


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rejax-python", help="the Python of a virtual environment that has Rejax")
    parser.add_argument("--only", nargs="+", choices=RUNS, default=list(RUNS), help="which runs (default: all)")
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per library and run (default: 3)")
    parser.add_argument("--repeats", type=int, default=3, help="execution-only calls per process (default: 3)")
    parser.add_argument("--out", type=Path, default=OUT, help="append the JSON line here (default: %(default)s)")
    parser.add_argument("--worker", nargs=2, metavar=("LIBRARY", "RUN"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is None and args.rejax_python is None:
        parser.error("--rejax-python is required: the Python of a virtual environment with Rejax installed.")
    if args.rounds < 1 or args.repeats < 1:
        parser.error("--rounds and --repeats must be positive.")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.worker is not None:
        library, run = args.worker
        print(json.dumps(measure(library, run, args.repeats)))
        return 0
    rows = []
    for round_index in range(args.rounds):
        for run in args.only:
            # The first library alternates between rounds, so neither always runs on a cooler machine.
            order = ("ajax", "rejax") if round_index % 2 == 0 else ("rejax", "ajax")
            for library in order:
                python = sys.executable if library == "ajax" else args.rejax_python
                row = in_fresh_process(python, library, run, args.repeats)
                rows.append({**row, "round": round_index, "load_avg_1m": round(os.getloadavg()[0], 2)})
                print(json.dumps(rows[-1]), flush=True)
    record = append_record(args.out, rows, summary(rows), rounds=args.rounds, repeats=args.repeats)
    for line in record["summary"]:
        print(
            f"{line['run']}: Ajax executes {line['execution_ratio']}x Rejax's rate; whole call "
            f"{line['whole_call_ratio']}x; compile {line['ajax']['compile_s']:.1f} s against "
            f"{line['rejax']['compile_s']:.1f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
