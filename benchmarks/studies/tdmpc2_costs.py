"""What one TD-MPC2 update and one planning decision cost, apart, at agent_bench.py's preset.

The bench times whole runs; this times the two things a TD-MPC2 step is made of, each as its
own jitted program called repeatedly on a fresh state (one seed): an update on `batch_size`
windows of the preset's replay (filled by uniform steps), and a decision of every env copy by
the planner. Compile time is reported apart from the per-call time.

    JAX_PLATFORMS=cpu python benchmarks/studies/tdmpc2_costs.py
    python benchmarks/studies/tdmpc2_costs.py --model-size 5 --calls 20   # the reference's defaults
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import jax

from ajax import TDMPC2
from ajax.agents.TDMPC2.core import window_valid
from ajax.agents.TDMPC2.networks import WorldModel
from ajax.agents.TDMPC2.planner import plan
from ajax.agents.TDMPC2.train_TDMPC2 import Networks, update
from ajax.buffers.sequence import SequenceReplay

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # agent_bench.py, for its preset
from agent_bench import PINNED_KWARGS  # noqa: E402


def timed(fn, *args, calls: int) -> tuple[float, float]:
    """(compile and first call, mean seconds per later call)."""
    started = time.perf_counter()
    jax.block_until_ready(fn(*args))
    first = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(calls):
        jax.block_until_ready(fn(*args))
    return first, (time.perf_counter() - started) / calls


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-size", type=int, default=None, help="the reference's size instead of the preset")
    parser.add_argument("--n-envs", type=int, default=4)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args(argv)
    kwargs = dict(PINNED_KWARGS["TDMPC2"]) if args.model_size is None else {"model_size": args.model_size}
    kwargs["seed_steps"] = kwargs.get("seed_steps", 1000)
    agent = TDMPC2("Pendulum-v1", n_envs=args.n_envs, **kwargs)
    config = agent.agent_config
    state, _ = agent.train(seed=0, n_timesteps=config.seed_steps - config.seed_steps % args.n_envs - args.n_envs)
    state = jax.tree.map(lambda x: x[0], state)
    networks = Networks(WorldModel(config.arch), config)
    params = {**state.critic_state.params, **state.actor_state.params}
    replay = state.collector_state.buffer_state
    sampler = SequenceReplay(config.capacity, args.n_envs, config.batch_size, config.planner.horizon)

    @jax.jit
    def one_update(state, key):
        window = sampler.sample(replay, key).transition
        valid = window_valid(window.terminated, window.truncated)
        return update(
            networks, config, state.critic_state, state.actor_state, state.q_scale, window, valid, config.discount, key
        )

    @jax.jit
    def decide(key):
        obs = state.collector_state.last_obs
        z = networks.encode(params, obs)
        model = networks.latent_model(params, config.discount)
        keys = jax.random.split(key, obs.shape[0])
        means = state.collector_state.memory.mean
        first = state.collector_state.memory.episode_start
        return jax.vmap(lambda z, m, f, k: plan(model, z, m, f, k, config.planner))(z, means, first, keys)

    key = jax.random.key(0)
    update_compile, update_s = timed(one_update, state, key, calls=args.calls)
    plan_compile, plan_s = timed(decide, key, calls=args.calls)
    row = {
        "settings": {**kwargs, "n_envs": args.n_envs, "batch_size": config.batch_size},
        "backend": jax.default_backend(),
        "update_ms": round(1e3 * update_s, 2),
        "updates_per_s": round(1 / update_s, 1),
        "update_compile_s": round(update_compile, 2),
        "decision_ms": round(1e3 * plan_s, 2),
        "decisions_per_s": round(args.n_envs / plan_s, 1),  # one decision per env copy
        "plan_compile_s": round(plan_compile, 2),
    }
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
