"""Why the DQN CartPole-v1 Zoo preset is unsteady near the end of its 50k steps (issue 29).

Each variant is the preset (`DQN.from_zoo("CartPole-v1")`) with at most one setting changed,
trained on the same seeds, one compiled program for all of them, in legs of `--every` steps
(a run split in legs follows one call's arithmetic; the epsilon schedule keeps the 50k
horizon up to 50k, and past it epsilon is at its final value whatever the horizon). After each
leg the parameters are measured without touching the run:

- `ret20a`, `ret20b`: two greedy evaluations of 20 episodes each with different keys, on the
  same parameters: their difference is evaluation noise alone;
- `ret100`: 100 episodes, the policy's return to within a few points; its change from one
  leg to the next is the policy's change;
- `bias100`: the evaluation's mean of Q(s, a) minus the realised discounted return;
- `q0`: max_a Q(s0, a) averaged over 256 start states, against the discounted return of a
  500-step episode, (1 - 0.99^500) / (1 - 0.99) = 99.3;
- `term_recent`, `term_all`: the share of stored transitions that ended in failure, among
  those stored during the leg and in the whole buffer.

At the run's end the final parameters are also evaluated ten times with 10 episodes, to put
the learning table's 10-episode evaluation beside the 100-episode one.

`--branch-from N` trains the preset to step N in one call, then continues that state under each
variant's settings (paired with the preset on the same seeds and the same replay); a learning
rate change also swaps the optimiser the train state carries. `--rounds` continues the preset
from N one round (256 steps, 128 updates) at a time and records, per round, the 100-episode
return, the share of 4,096 visited states whose greedy action changed, the mean action gap and
the mean change of Q. The first double_q row was written before `branch_from` existed (a run
from step 0); its last evaluation used other episode keys than the later rows' last one.

    JAX_PLATFORMS=cpu python benchmarks/studies/dqn_stability.py --variant preset
    JAX_PLATFORMS=cpu python benchmarks/studies/dqn_stability.py --variant double_q
    JAX_PLATFORMS=cpu python benchmarks/studies/dqn_stability.py --branch-from 24576 --variant target_1024 lr_half
    JAX_PLATFORMS=cpu python benchmarks/studies/dqn_stability.py --branch-from 50000 --steps 100000 --variant preset
    JAX_PLATFORMS=cpu python benchmarks/studies/dqn_stability.py --rounds --branch-from 40960 --steps 49920
    python benchmarks/studies/dqn_stability.py --summary benchmarks/studies/dqn_stability.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/, for its shared modules

from ajax import DQN, zoo  # noqa: E402
from ajax.networks.actor_critic import DiscreteQNetwork  # noqa: E402
from intervals import final_means, iqm, iqm_interval  # noqa: E402

RETURN = "Eval/episodic mean reward"
BUDGET = zoo.preset("DQN", "CartPole-v1").n_timesteps  # 50,000: the preset's horizon
SOLVED = 475.0
VARIANTS: dict[str, dict[str, Any]] = {
    "preset": {},
    "double_q": {"double_q": True},
    "target_1024": {"target_update_interval": 1024},  # a copy every 4 rounds (512 updates), not every round
    "polyak_0.1": {"tau": 0.1},  # each env step crossed moves the target 10% of the way
    "lr_half": {"learning_rate": 1.15e-3},
    "gradient_steps_64": {"gradient_steps": 64},
    "final_eps_0.1": {"exploration_final_eps": 0.1},
    "final_eps_0.01": {"exploration_final_eps": 0.01},
    "exploration_fraction_0.5": {"exploration_fraction": 0.5},
}


def start_states(n: int = 256) -> jax.Array:
    """CartPole's reset distribution: every coordinate uniform in [-0.05, 0.05]."""
    return jax.random.uniform(jax.random.PRNGKey(12345), (n, 4), minval=-0.05, maxval=0.05)


def replay_failures(state: Any, previous_index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per seed: the share of failures among the transitions stored since `previous_index`,
    and among every stored transition."""
    buffer = state.collector_state.buffer_state
    terminated = np.asarray(buffer.experience.terminated).reshape(len(previous_index), -1)
    index = np.asarray(buffer.current_index).reshape(-1)
    full = np.asarray(buffer.is_full).reshape(-1)
    recent, overall = [], []
    for seed, row in enumerate(terminated):
        capacity = row.shape[0]
        stored = capacity if full[seed] else index[seed]
        overall.append(row[:stored].mean())
        positions = np.arange(
            previous_index[seed], previous_index[seed] + (index[seed] - previous_index[seed]) % capacity
        )
        recent.append(row[positions % capacity].mean() if positions.size else np.nan)
    return np.asarray(recent), np.asarray(overall)


def measure(agent: DQN, q0: Any, state: Any, leg: int, previous_index: np.ndarray) -> dict[str, Any]:
    first = agent.evaluate(state, num_episode_test=20, seed=1_000 + leg)
    second = agent.evaluate(state, num_episode_test=20, seed=2_000 + leg)
    wide = agent.evaluate(state, num_episode_test=100, seed=3_000 + leg)
    recent, overall = replay_failures(state, previous_index)
    return {
        "timestep": int(np.asarray(state.collector_state.timestep).reshape(-1)[0]),
        "ret20a": np.asarray(first[RETURN]),
        "ret20b": np.asarray(second[RETURN]),
        "ret100": np.asarray(wide[RETURN]),
        "bias100": np.asarray(wide["Eval/mean bias"]),
        "q0": np.asarray(q0(state.critic_state.params)),
        "term_recent": recent,
        "term_all": overall,
    }


def with_learning_rate(agent: DQN, state: Any, seeds: list[int]) -> Any:
    """`state` with `agent`'s optimiser: the train state carries its optimiser as a static
    field, so a resumed state would otherwise keep the learning rate it was made with."""
    fresh, _ = agent.train(seed=seeds, n_timesteps=0)
    return state.replace(critic_state=state.critic_state.replace(tx=fresh.critic_state.tx))


def run_variant(
    name: str, seeds: list[int], steps: int, every: int, branch_from: int = 0, base: Any = None
) -> dict[str, Any]:
    """Train variant `name` in legs of `every` steps and measure after each; with `base` (the
    preset's state at `branch_from`), continue that state under the variant's settings."""
    overrides = VARIANTS[name]
    agent = DQN.from_zoo("CartPole-v1", **overrides)
    preset = zoo.preset("DQN", "CartPole-v1").kwargs
    network = DiscreteQNetwork(tuple(preset["architecture"]), 2, fan_in_uniform=True)
    obs = start_states()
    q0 = jax.jit(jax.vmap(lambda params: jnp.mean(jnp.max(network.apply(params, obs), axis=-1))))
    started = time.perf_counter()
    state, timestep, leg, rows = None, 0, 0, []
    index = np.zeros(len(seeds), int)
    if base is not None:
        state = jax.tree.map(jnp.copy, base)  # each leg donates its input state
        if "learning_rate" in overrides:
            state = with_learning_rate(agent, state, seeds)
        timestep = int(np.asarray(state.collector_state.timestep).reshape(-1)[0])
        index = np.asarray(state.collector_state.buffer_state.current_index).reshape(-1)
    ends = list(range(every, BUDGET, every)) + [BUDGET] + list(range(BUDGET - BUDGET % every + every, steps + 1, every))
    for end in [e for e in ends if timestep < e <= steps]:
        horizon = BUDGET if end <= BUDGET else steps
        state, _ = agent.train(
            seed=seeds if state is None else None,
            n_timesteps=end - timestep,
            initial_state=state,
            total_timesteps=horizon,
        )
        timestep = int(np.asarray(state.collector_state.timestep).reshape(-1)[0])
        leg += 1
        rows.append(measure(agent, q0, state, timestep // every, index))
        index = np.asarray(state.collector_state.buffer_state.current_index).reshape(-1)
        print(
            f"{name} t={timestep} ret100={np.round(rows[-1]['ret100'], 0)} q0={np.round(rows[-1]['q0'], 1)}",
            flush=True,
        )
    # The final parameters, evaluated as the learning table does (10 episodes), ten times over.
    tens = np.stack([agent.evaluate(state, num_episode_test=10, seed=s)[RETURN] for s in range(10)], axis=1)
    wall = time.perf_counter() - started
    curves = {key: np.stack([row[key] for row in rows], axis=1) for key in rows[0] if key != "timestep"}
    return {
        "variant": name,
        "overrides": overrides,
        "branch_from": branch_from,
        "seeds": seeds,
        "steps": steps,
        "every": every,
        "timesteps": [row["timestep"] for row in rows],
        **{
            key: [[round(float(x), 4 if key.startswith("term") else 2) for x in seed] for seed in curve]
            for key, curve in curves.items()
        },
        "final_ten_evals_of_10": [[round(float(x), 1) for x in seed] for seed in tens],
        "wall_s": round(wall, 1),
    }


def branch_point(seeds: list[int], branch_from: int) -> Any:
    """The preset's state at `branch_from`, trained in one call (the legs' arithmetic)."""
    state, _ = DQN.from_zoo("CartPole-v1").train(seed=seeds, n_timesteps=branch_from, total_timesteps=BUDGET)
    return state


def churn_run(seeds: list[int], branch_from: int, steps: int, n_states: int = 4_096) -> dict[str, Any]:
    """The preset from `branch_from` one round (256 steps, 128 updates) at a time: after each round,
    its greedy return (100 episodes), the share of states whose greedy action changed since the
    previous round, the mean action gap |Q(s, 0) - Q(s, 1)| and the mean |change of Q(s, a)| over the
    round, on a fixed set of states the agent visited (drawn from its replay at `branch_from`)."""
    agent = DQN.from_zoo("CartPole-v1")
    preset = zoo.preset("DQN", "CartPole-v1").kwargs
    network = DiscreteQNetwork(tuple(preset["architecture"]), 2, fan_in_uniform=True)
    state = branch_point(seeds, branch_from)
    stored = int(np.asarray(state.collector_state.buffer_state.current_index).reshape(-1)[0])
    observations = np.asarray(state.collector_state.buffer_state.experience.obs).reshape(len(seeds), -1, 4)
    # The states of the last 10,000 steps before the branch, per seed.
    picks = np.random.default_rng(0).integers(stored - 10_000, stored, n_states)
    states = jnp.asarray(observations[:, picks])
    q_of = jax.jit(jax.vmap(network.apply))
    previous = np.asarray(q_of(state.critic_state.params, states))
    round_steps = preset["train_freq"]
    timestep, rows = int(np.asarray(state.collector_state.timestep).reshape(-1)[0]), []
    started = time.perf_counter()
    while timestep + round_steps <= steps:
        state, _ = agent.train(n_timesteps=round_steps, initial_state=state, total_timesteps=BUDGET)
        timestep = int(np.asarray(state.collector_state.timestep).reshape(-1)[0])
        q = np.asarray(q_of(state.critic_state.params, states))
        rows.append(
            {
                "timestep": timestep,
                "ret100": np.asarray(agent.evaluate(state, num_episode_test=100, seed=timestep)[RETURN]),
                "flipped": (q.argmax(-1) != previous.argmax(-1)).mean(axis=1),
                "gap": np.abs(q[..., 0] - q[..., 1]).mean(axis=1),
                "dq": np.abs(q - previous).mean(axis=(1, 2)),
            }
        )
        previous = q
        print(f"round t={timestep} ret100={np.round(rows[-1]['ret100'])} flipped={np.round(rows[-1]['flipped'], 3)}")
    curves = {key: np.stack([row[key] for row in rows], axis=1) for key in rows[0] if key != "timestep"}
    return {
        "variant": "preset_rounds",
        "overrides": {},
        "branch_from": branch_from,
        "seeds": seeds,
        "steps": steps,
        "every": round_steps,
        "timesteps": [row["timestep"] for row in rows],
        **{key: [[round(float(x), 4) for x in seed] for seed in curve] for key, curve in curves.items()},
        "wall_s": round(time.perf_counter() - started, 1),
    }


def summarise(row: dict[str, Any], until: int = BUDGET, after: int = 30_000) -> dict[str, Any]:
    """The brief's numbers for one variant, on its evaluations up to `until`."""
    t = np.asarray(row["timesteps"])
    keep = t <= until
    curve = np.asarray(row["ret100"])[:, keep]
    late = curve[:, t[keep] > after]
    finals = final_means(curve)
    interval = iqm_interval(finals)
    a, b = np.asarray(row["ret20a"])[:, keep], np.asarray(row["ret20b"])[:, keep]
    return {
        "variant": row["variant"],
        "until": int(t[keep][-1]),
        "share_late_solved": round(float((late >= SOLVED).mean()), 3),
        "last3_mean": round(float(finals.mean()), 1),
        "last3_per_seed": [round(float(x), 1) for x in finals],
        "iqm": round(iqm(finals), 1),
        "iqm_ci": None if interval is None else [round(x, 1) for x in interval],
        # >200 jumps between consecutive legs, per evaluation: the policy's (100 episodes) and
        # two 20-episode evaluations of the same parameters (noise alone).
        "policy_jumps_late": int((np.abs(np.diff(curve, axis=1))[:, t[keep][1:] > after] > 200).sum()),
        "late_pairs": int(np.abs(np.diff(curve, axis=1))[:, t[keep][1:] > after].size),
        "same_params_gap_mean": round(float(np.abs(a - b).mean()), 1),
        "same_params_gap_max": round(float(np.abs(a - b).max()), 1),
        "same_params_jumps": int((np.abs(a - b) > 200).sum()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", choices=sorted(VARIANTS), nargs="+")
    parser.add_argument("--branch-from", type=int, default=0, help="continue the preset's state from this step")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=BUDGET)
    parser.add_argument("--every", type=int, default=2_048)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_suffix(".jsonl"))
    parser.add_argument("--summary", type=Path)
    parser.add_argument("--rounds", action="store_true", help="the preset round by round from --branch-from")
    args = parser.parse_args()
    if args.summary is not None:
        for line in args.summary.read_text().splitlines():
            row = json.loads(line)
            if row["variant"] == "preset_rounds":
                continue
            if row.get("branch_from", 0) < BUDGET:
                print(json.dumps({"branch_from": row.get("branch_from", 0), **summarise(row)}))
            if row["steps"] > BUDGET:
                print(json.dumps({"branch_from": row.get("branch_from", 0), **summarise(row, row["steps"], BUDGET)}))
        return
    seeds = list(range(args.seeds))
    if args.rounds:
        with args.out.open("a") as handle:
            handle.write(json.dumps(churn_run(seeds, args.branch_from, args.steps)) + "\n")
        return
    base = branch_point(seeds, args.branch_from) if args.branch_from else None
    for name in args.variant:
        row = run_variant(name, seeds, args.steps, args.every, args.branch_from, base)
        with args.out.open("a") as handle:
            handle.write(json.dumps(row) + "\n")
        print(json.dumps(summarise(row)), flush=True)


if __name__ == "__main__":
    main()
