"""The comparison settings of the performance issue, measured against their references.

Each run builds its agent, calls `train()` once (compilation and a run), then calls it
again with the same arguments `--repeats` times: the agent keeps its compiled program per
call shape, so those calls are execution only, and their median is the run's `exec_s`
(the fastest call is kept too, as `exec_min_s`). Steps per second count every seed's
steps (the timesteps the runs reached). Every run goes in a fresh process, stopped and
tried again if it deadlocks (see PERFORMANCE_REPORT.md: batched QR on 2 cores).

    ppo     CartPole-v1: 4 envs, 128-step rollouts, 4 epochs of 4 minibatches of 128,
            lr 2.5e-4, two 64-unit tanh layers, 100,000 steps a seed.
            reference ~150,000 steps/s, target 225,000.
    ppo_reference   the same settings in a PureJaxRL-style single-file PPO, on this machine.
    sac     Pendulum-v1: 4 envs, batch 256, two 64-unit relu layers, learning_starts=1000,
            8,000 steps.  reference ~2,300 steps/s, target 3,500.
    sac_buffer      `sac` with buffer_size 1e6 against 8,000, calls taking turns (within 10%?).
    sac_mlp         SAC's updates per second within the agent against a hand-written jitted
            SAC update of the same sizes (batch 256, in a lax.scan), calls taking turns:
            256-unit layers (SAC's default) and 64-unit ones.
    dqn     CartPole-v1: 4 envs, batch 256, two 64-unit relu layers, 8,000 steps.
            reference ~3,100 steps/s, target 4,600.
    env     CartPole-v1 and Pendulum-v1 alone at 4 envs: a jitted lax.scan of vmapped gymnax
            steps (auto-reset included) under random actions.  reference ~670,000 steps/s.

ppo, ppo_reference, sac and dqn go at 1, 8 and 32 vmapped seeds (`--seeds`).

    JAX_PLATFORMS=cpu AJAX_NO_COMPILE_CACHE=1 python benchmarks/comparison_runs.py \
        --out benchmarks/comparison_runs.jsonl
    python benchmarks/comparison_runs.py --only env sac_mlp --seeds 1 --out runs/scratch.jsonl
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing
import os
import queue
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_bench import CompileSpans, cpu_model, git_commit, worktree_dirty  # noqa: E402

SMALL_RELU = ("64", "relu", "64", "relu")
SMALL_TANH = ("64", "tanh", "64", "tanh")

# name -> (agent, env id, constructor kwargs, steps per seed, reference steps/s, target steps/s)
RUNS: dict[str, tuple[str, str, dict[str, Any], int, float | None, float | None]] = {
    "ppo": (
        "PPO",
        "CartPole-v1",
        {
            "n_envs": 4,
            "n_steps": 128,
            "n_epochs": 4,
            "batch_size": 128,
            "actor_learning_rate": 2.5e-4,
            "critic_learning_rate": 2.5e-4,
            "actor_architecture": SMALL_TANH,
            "critic_architecture": SMALL_TANH,
        },
        100_000,
        150_000.0,
        225_000.0,
    ),
    "sac": (
        "SAC",
        "Pendulum-v1",
        {
            "n_envs": 4,
            "batch_size": 256,
            "actor_architecture": SMALL_RELU,
            "critic_architecture": SMALL_RELU,
            "learning_starts": 1000,
        },
        8_000,
        2_300.0,
        3_500.0,
    ),
    "sac_buffer8k": (
        "SAC",
        "Pendulum-v1",
        {
            "n_envs": 4,
            "batch_size": 256,
            "actor_architecture": SMALL_RELU,
            "critic_architecture": SMALL_RELU,
            "learning_starts": 1000,
            "buffer_size": 8_000,
        },
        8_000,
        None,
        None,
    ),
    "sac_default": ("SAC", "Pendulum-v1", {"n_envs": 4, "learning_starts": 1000}, 8_000, None, None),
    "dqn": (
        "DQN",
        "CartPole-v1",
        {"n_envs": 4, "batch_size": 256, "architecture": SMALL_RELU},
        8_000,
        3_100.0,
        4_600.0,
    ),
}
# Runs measured at every seed count; the others at one seed only.
SEED_SWEPT = ("ppo", "sac", "dqn")
SEEDS = (1, 8, 32)


def _timed_calls(call: Callable[[], Any], repeats: int) -> tuple[list[float], Any]:
    """The wall times of `repeats` calls, and the last call's result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = jax.block_until_ready(call())
        times.append(time.perf_counter() - start)
    return times, result


def _exec_fields(times: list[float], steps: int | None) -> dict[str, Any]:
    """The median call is the run's `exec_s`; the fastest is kept too, the least disturbed by other load."""
    fields: dict[str, Any] = {"exec_s": statistics.median(times), "exec_min_s": min(times), "exec_times_s": times}
    if steps is not None:
        fields["exec_steps_per_s"] = steps / fields["exec_s"]
        fields["best_exec_steps_per_s"] = steps / fields["exec_min_s"]
    return fields


# Agents -------------------------------------------------------------------------------------
def _prepared_agent(name: str, n_seeds: int) -> tuple[Callable[[], Any], dict[str, Any]]:
    """The `RUNS[name]` agent, compiled by a first call; returns the execution-only call and its facts."""
    from ajax.agents.registry import AGENTS

    agent_name, env_id, kwargs, n_timesteps, _, _ = RUNS[name]
    agent = AGENTS[agent_name](env_id, **kwargs)
    seed = list(range(n_seeds)) if n_seeds > 1 else 0

    def call() -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return agent.train(seed=seed, n_timesteps=n_timesteps)[0]

    with CompileSpans() as spans:
        start = time.perf_counter()
        state = call()
        first_call_s = time.perf_counter() - start
    n_programs = len(agent._programs)

    def execute() -> Any:
        state = call()
        if len(agent._programs) != n_programs:
            raise RuntimeError("train() compiled again on the repeated call: exec_s would include compilation.")
        return state

    facts = {
        "agent": agent_name,
        "env_id": env_id,
        "settings": {key: list(value) if isinstance(value, tuple) else value for key, value in kwargs.items()},
        "n_seeds": n_seeds,
        "n_timesteps": n_timesteps,
        "steps": int(np.sum(np.asarray(state.collector_state.timestep))),
        "n_updates": float(np.median(np.asarray(state.n_updates))),
        "first_call_s": first_call_s,
        "compile_spans_s": spans.total(),
    }
    return execute, facts


def measure_agent(name: str, n_seeds: int, repeats: int) -> dict[str, Any]:
    execute, facts = _prepared_agent(name, n_seeds)
    times, _ = _timed_calls(execute, repeats)
    _, _, _, _, reference, target = RUNS[name]
    return {
        "run": name,
        **facts,
        **_exec_fields(times, facts["steps"]),
        "updates_per_s": facts["n_updates"] * n_seeds / statistics.median(times),
        "reference_steps_per_s": reference,
        "target_steps_per_s": target,
    }


def _interleaved(calls: dict[str, Callable[[], Any]], repeats: int) -> dict[str, list[float]]:
    """Each call timed `repeats` times, taking turns, so a change of load falls on all of them alike."""
    times: dict[str, list[float]] = {label: [] for label in calls}
    for _ in range(repeats):
        for label, call in calls.items():
            times[label] += _timed_calls(call, 1)[0]
    return times


def measure_buffer_check(repeats: int = 5) -> dict[str, Any]:
    """The `sac` run with its 1e6 buffer against the same with an 8,000 one, calls taking turns."""
    big, big_facts = _prepared_agent("sac", 1)
    small, small_facts = _prepared_agent("sac_buffer8k", 1)
    times = _interleaved({"1e6": big, "8e3": small}, repeats)
    rate_big = big_facts["steps"] / statistics.median(times["1e6"])
    rate_small = small_facts["steps"] / statistics.median(times["8e3"])
    return {
        "run": "sac_buffer_check",
        "agent": "SAC",
        "env_id": "Pendulum-v1",
        "settings": big_facts["settings"],
        "n_seeds": 1,
        "steps": big_facts["steps"],
        "exec_times_s": times,
        "exec_s": statistics.median(times["1e6"]),
        "first_call_s": big_facts["first_call_s"],
        "exec_steps_per_s_buffer_1e6": rate_big,
        "exec_steps_per_s_buffer_8e3": rate_small,
        "relative_change": rate_big / rate_small - 1.0,
        "within_10_percent": abs(rate_big / rate_small - 1.0) <= 0.10,
    }


# The environment alone ----------------------------------------------------------------------
def measure_env(env_id: str, n_envs: int = 4, n_iterations: int = 50_000, repeats: int = 3) -> dict[str, Any]:
    """A jitted lax.scan of vmapped gymnax steps (auto-reset included) under random actions."""
    import gymnax

    env, params = gymnax.make(env_id)
    space = env.action_space(params)

    def run(key: jax.Array):
        reset_key, key = jax.random.split(key)
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, n_envs), params)

        def body(carry, _):
            state, key, total = carry
            key, action_key, step_key = jax.random.split(key, 3)
            actions = jax.vmap(space.sample)(jax.random.split(action_key, n_envs))
            # gymnax 1.x: (obs, state, reward, terminated, truncated, info), auto-reset included
            obs, state, reward, *_ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                jax.random.split(step_key, n_envs), state, actions, params
            )
            return (state, key, total + jnp.sum(reward) + jnp.sum(obs) * 0.0), None

        (state, _, total), _ = jax.lax.scan(body, (state, key, jnp.zeros(())), None, length=n_iterations)
        return total

    program = jax.jit(run)
    key = jax.random.PRNGKey(0)
    start = time.perf_counter()
    jax.block_until_ready(program(key))
    first_call_s = time.perf_counter() - start
    times, _ = _timed_calls(lambda: program(key), repeats)
    steps = n_envs * n_iterations
    return {
        "run": f"env_{env_id}",
        "agent": None,
        "env_id": env_id,
        "settings": {"n_envs": n_envs, "random_actions": True},
        "n_seeds": 1,
        "n_timesteps": steps,
        "steps": steps,
        "first_call_s": first_call_s,
        **_exec_fields(times, steps),
        "reference_steps_per_s": 670_000.0 if env_id == "CartPole-v1" else None,
        "target_steps_per_s": None,
    }


# A raw SAC-like update of the same sizes ----------------------------------------------------
def _init_mlp(key: jax.Array, sizes: Sequence[int]) -> list[tuple[jax.Array, jax.Array]]:
    keys = jax.random.split(key, len(sizes) - 1)
    return [
        (jax.random.normal(k, (n_in, n_out)) * jnp.sqrt(1.0 / n_in), jnp.zeros((n_out,)))
        for k, n_in, n_out in zip(keys, sizes[:-1], sizes[1:], strict=True)
    ]


def _mlp(layers: list[tuple[jax.Array, jax.Array]], x: jax.Array) -> jax.Array:
    for w, b in layers[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = layers[-1]
    return x @ w + b


def raw_sac_program(
    hidden: int = 256,
    batch_size: int = 256,
    obs_dim: int = 3,
    action_dim: int = 1,
    n_updates: int = 1_750,
    data_size: int = 8_000,
) -> Callable[[jax.Array], jax.Array]:
    """A jitted run of `n_updates` hand-written SAC updates, in one lax.scan: sample a batch by
    index from a stored array, a critic step on the clipped double-Q soft target, a
    reparameterised actor step, a temperature step, the Polyak update; Adam everywhere."""
    import optax

    tx = optax.adam(3e-4)
    gamma, tau, target_entropy = 0.99, 0.005, -float(action_dim)

    def critics(params, obs, action):
        x = jnp.concatenate([obs, action], axis=-1)
        return jax.vmap(lambda p: _mlp(p, x)[..., 0])(params)  # (2, batch)

    def pi(params, obs, key):
        out = _mlp(params, obs)
        mean, log_std = out[..., :action_dim], jnp.clip(out[..., action_dim:], -20.0, 2.0)
        u = mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape)
        log_prob = jnp.sum(
            -0.5 * ((u - mean) / jnp.exp(log_std)) ** 2 - log_std - 0.5 * jnp.log(2 * jnp.pi), axis=-1
        ) - jnp.sum(2.0 * (jnp.log(2.0) - u - jax.nn.softplus(-2.0 * u)), axis=-1)
        return jnp.tanh(u), log_prob

    def init(key):
        actor_key, critic_key, data_key = jax.random.split(key, 3)
        actor = _init_mlp(actor_key, (obs_dim, hidden, hidden, 2 * action_dim))
        critic = jax.vmap(lambda k: _init_mlp(k, (obs_dim + action_dim, hidden, hidden, 1)))(
            jax.random.split(critic_key, 2)
        )
        log_alpha = jnp.zeros(())
        k1, k2, k3, k4 = jax.random.split(data_key, 4)
        data = (
            jax.random.normal(k1, (data_size, obs_dim)),
            jax.random.uniform(k2, (data_size, action_dim), minval=-1, maxval=1),
            jax.random.normal(k3, (data_size,)),
            jax.random.normal(k4, (data_size, obs_dim)),
            jnp.zeros((data_size,)),
        )
        params = (actor, critic, critic, log_alpha)
        opt = (tx.init(actor), tx.init(critic), tx.init(log_alpha))
        return params, opt, data

    def update(carry, key):
        (actor, critic, target, log_alpha), (actor_opt, critic_opt, alpha_opt), data = carry
        index_key, next_key, actor_key = jax.random.split(key, 3)
        index = jax.random.randint(index_key, (batch_size,), 0, data_size)
        obs, action, reward, next_obs, done = jax.tree.map(lambda x: x[index], data)
        alpha = jnp.exp(log_alpha)
        next_action, next_log_prob = pi(actor, next_obs, next_key)
        next_q = jnp.min(critics(target, next_obs, next_action), axis=0)
        y = jax.lax.stop_gradient(reward + gamma * (1.0 - done) * (next_q - alpha * next_log_prob))

        def critic_loss(p):
            return 0.5 * jnp.sum(jnp.mean((critics(p, obs, action) - y) ** 2, axis=-1))

        grads = jax.grad(critic_loss)(critic)
        updates, critic_opt = tx.update(grads, critic_opt)
        critic = optax.apply_updates(critic, updates)

        def actor_loss(p):
            new_action, log_prob = pi(p, obs, actor_key)
            return jnp.mean(alpha * log_prob - jnp.min(critics(critic, obs, new_action), axis=0)), log_prob

        grads, log_prob = jax.grad(actor_loss, has_aux=True)(actor)
        updates, actor_opt = tx.update(grads, actor_opt)
        actor = optax.apply_updates(actor, updates)

        alpha_grad = jax.grad(lambda a: -jnp.mean(a * jax.lax.stop_gradient(log_prob + target_entropy)))(log_alpha)
        updates, alpha_opt = tx.update(alpha_grad, alpha_opt)
        log_alpha = optax.apply_updates(log_alpha, updates)
        target = jax.tree.map(lambda t, o: (1.0 - tau) * t + tau * o, target, critic)
        return ((actor, critic, target, log_alpha), (actor_opt, critic_opt, alpha_opt), data), None

    def run(key):
        init_key, scan_key = jax.random.split(key)
        carry, _ = jax.lax.scan(update, init(init_key), jax.random.split(scan_key, n_updates))
        return carry[0][3]

    return jax.jit(run)


def measure_mlp_fraction(hidden: int = 256, repeats: int = 3) -> dict[str, Any]:
    """SAC's update rate within the agent against the raw update of the same sizes, calls taking turns.

    The agent's rate counts its whole execution (the 8,000 env steps and the replay
    included) over its updates; the fraction is that rate over the raw one.
    """
    name = {256: "sac_default", 64: "sac"}[hidden]
    execute, facts = _prepared_agent(name, 1)
    n_updates = int(facts["n_updates"])
    program, key = raw_sac_program(hidden, n_updates=n_updates), jax.random.PRNGKey(0)
    start = time.perf_counter()
    jax.block_until_ready(program(key))
    raw_first_call_s = time.perf_counter() - start
    times = _interleaved({"agent": execute, "raw": lambda: program(key)}, repeats)
    agent_rate = n_updates / statistics.median(times["agent"])
    raw_rate = n_updates / statistics.median(times["raw"])
    return {
        "run": f"sac_mlp_fraction_{hidden}",
        "agent": "SAC",
        "env_id": "Pendulum-v1",
        "settings": {**facts["settings"], "hidden": hidden, "batch_size": 256},
        "n_seeds": 1,
        "n_updates": n_updates,
        "steps": facts["steps"],
        "first_call_s": facts["first_call_s"],
        "raw_first_call_s": raw_first_call_s,
        "exec_s": statistics.median(times["agent"]),
        "exec_times_s": times,
        "exec_steps_per_s": facts["steps"] / statistics.median(times["agent"]),
        "agent_updates_per_s": agent_rate,
        "raw_updates_per_s": raw_rate,
        "fraction_of_raw": agent_rate / raw_rate,
    }


# A single-file PPO of the same settings ------------------------------------------------------
def measure_reference_ppo(n_seeds: int = 1, n_rollouts: int = 196, repeats: int = 3) -> dict[str, Any]:
    """A PureJaxRL-style PPO in one function, on the `ppo` run's settings, as the local reference.

    One actor-critic module and one Adam, values recorded during the rollout, GAE by a
    reverse scan, `n_epochs` passes of shuffled minibatches; `n_rollouts` rollouts (196 is
    what the `ppo` run's 100,000 steps make).
    """
    import distrax
    import flax.linen as nn
    import gymnax
    import optax

    _, _, kwargs, _, reference, target = RUNS["ppo"]
    n_envs, n_steps, n_epochs = kwargs["n_envs"], kwargs["n_steps"], kwargs["n_epochs"]
    batch_size = kwargs["batch_size"]
    n_minibatches = n_envs * n_steps // batch_size
    env, params = gymnax.make("CartPole-v1")
    tx = optax.chain(optax.clip_by_global_norm(0.5), optax.adam(kwargs["actor_learning_rate"], eps=1e-5))

    class ActorCritic(nn.Module):
        @nn.compact
        def __call__(self, x):
            actor = nn.tanh(nn.Dense(64)(nn.tanh(nn.Dense(64)(x))))
            critic = nn.tanh(nn.Dense(64)(nn.tanh(nn.Dense(64)(x))))
            return distrax.Categorical(logits=nn.Dense(2)(actor)), nn.Dense(1)(critic)[..., 0]

    network = ActorCritic()

    def train(key):
        key, init_key, reset_key = jax.random.split(key, 3)
        weights = network.init(init_key, jnp.zeros((4,)))
        opt_state = tx.init(weights)
        obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, n_envs), params)

        def rollout_and_update(carry, _):
            weights, opt_state, env_state, obs, key = carry

            def env_step(carry, _):
                env_state, obs, key = carry
                key, action_key, step_key = jax.random.split(key, 3)
                pi, value = network.apply(weights, obs)
                action = pi.sample(seed=action_key)
                next_obs, env_state, reward, terminated, truncated, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                    jax.random.split(step_key, n_envs), env_state, action, params
                )
                done = jnp.asarray(terminated | truncated, jnp.float32)
                return (env_state, next_obs, key), (obs, action, pi.log_prob(action), value, reward, done)

            (env_state, obs, key), batch = jax.lax.scan(env_step, (env_state, obs, key), None, n_steps)
            observations, actions, log_probs, values, rewards, dones = batch
            _, last_value = network.apply(weights, obs)

            def gae(carry, step):
                advantage, next_value = carry
                done, value, reward = step
                delta = reward + 0.99 * next_value * (1 - done) - value
                advantage = delta + 0.99 * 0.95 * (1 - done) * advantage
                return (advantage, value), advantage

            _, advantages = jax.lax.scan(
                gae, (jnp.zeros_like(last_value), last_value), (dones, values, rewards), reverse=True
            )
            data = (observations, actions, log_probs, values, advantages, advantages + values)

            def epoch(carry, _):
                weights, opt_state, key = carry
                key, shuffle_key = jax.random.split(key)
                order = jax.random.permutation(shuffle_key, n_envs * n_steps)
                minibatches = jax.tree.map(
                    lambda x: x.reshape(n_envs * n_steps, *x.shape[2:])[order].reshape(
                        n_minibatches, batch_size, *x.shape[2:]
                    ),
                    data,
                )

                def minibatch(carry, batch):
                    weights, opt_state = carry
                    obs, action, old_log_prob, old_value, advantage, target = batch

                    def loss(weights):
                        pi, value = network.apply(weights, obs)
                        ratio = jnp.exp(pi.log_prob(action) - old_log_prob)
                        advantage_n = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
                        policy = -jnp.minimum(ratio * advantage_n, jnp.clip(ratio, 0.8, 1.2) * advantage_n).mean()
                        return policy + 0.5 * jnp.mean((value - target) ** 2)

                    updates, opt_state = tx.update(jax.grad(loss)(weights), opt_state, weights)
                    return (optax.apply_updates(weights, updates), opt_state), None

                (weights, opt_state), _ = jax.lax.scan(minibatch, (weights, opt_state), minibatches)
                return (weights, opt_state, key), None

            (weights, opt_state, key), _ = jax.lax.scan(epoch, (weights, opt_state, key), None, n_epochs)
            return (weights, opt_state, env_state, obs, key), None

        carry, _ = jax.lax.scan(rollout_and_update, (weights, opt_state, env_state, obs, key), None, n_rollouts)
        return carry[0]

    program = jax.jit(jax.vmap(train))
    keys = jax.random.split(jax.random.PRNGKey(0), n_seeds)
    start = time.perf_counter()
    jax.block_until_ready(program(keys))
    first_call_s = time.perf_counter() - start
    times, _ = _timed_calls(lambda: program(keys), repeats)
    steps = n_rollouts * n_steps * n_envs * n_seeds
    return {
        "run": "ppo_single_file",
        "agent": None,
        "env_id": "CartPole-v1",
        "settings": {key: list(value) if isinstance(value, tuple) else value for key, value in kwargs.items()},
        "n_seeds": n_seeds,
        "n_timesteps": n_rollouts * n_steps * n_envs,
        "steps": steps,
        "first_call_s": first_call_s,
        **_exec_fields(times, steps),
        "reference_steps_per_s": reference,
        "target_steps_per_s": target,
    }


# Driver -------------------------------------------------------------------------------------
def _print(row: dict[str, Any]) -> None:
    parts = [f"{row['run']:18s} seeds={row['n_seeds']:<3d}"]
    if "error" in row:
        print("  ".join([*parts, "ERROR", row["error"]]), flush=True)
        return
    if "fraction_of_raw" in row:
        parts.append(
            f"agent {row['agent_updates_per_s']:.0f} updates/s, raw MLP {row['raw_updates_per_s']:.0f} updates/s: "
            f"fraction {row['fraction_of_raw']:.2f}"
        )
    elif "relative_change" in row:
        parts.append(
            f"1e6 buffer {row['exec_steps_per_s_buffer_1e6']:.0f} steps/s, "
            f"8e3 {row['exec_steps_per_s_buffer_8e3']:.0f}: "
            f"{row['relative_change']:+.1%} (within 10%: {row['within_10_percent']})"
        )
    elif "exec_steps_per_s" in row:
        parts.append(f"{row['exec_steps_per_s']:11.0f} exec steps/s (best {row['best_exec_steps_per_s']:.0f})")
    if row.get("updates_per_s") is not None:
        parts.append(f"{row['updates_per_s']:9.0f} updates/s")
    parts.append(f"exec {row['exec_s']:.3f}s  first call {row['first_call_s']:.1f}s  load {row['load_avg_1m']:.1f}")
    if row.get("reference_steps_per_s"):
        parts.append(f"ref {row['reference_steps_per_s']:.0f}")
    if row.get("target_steps_per_s"):
        parts.append(f"target {row['target_steps_per_s']:.0f}")
    if row.get("failed_attempts"):
        parts.append(f"after {len(row['failed_attempts'])} stalled attempt(s)")
    print("  ".join(parts), flush=True)


def _run_job(job: tuple[str, dict[str, Any]], results: Any) -> None:
    """A child process's work: one measurement, its row put on `results`."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    name, kwargs = job
    try:
        results.put(JOBS[name](**kwargs))
    except Exception as error:  # reported as the run's row, so one failure does not lose the others
        results.put({"error": f"{type(error).__name__}: {error}"})


def _cpu_seconds(pid: int) -> float | None:
    """The CPU time a process has used (Linux /proc), or None where it cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def run_isolated(job: tuple[str, dict[str, Any]], timeout_s: float, stall_s: float = 45.0) -> dict[str, Any]:
    """One measurement in a fresh process, stopped after `timeout_s`, or once it stalls.

    A fresh process per run keeps one run's compiled programs and memory out of the
    next. A process whose CPU time has not grown for `stall_s` is deadlocked (batched QR
    in the orthogonal initialiser can deadlock XLA's 2-thread CPU pool, see
    PERFORMANCE_REPORT.md): it is stopped and its row carries the error.
    """
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    process = context.Process(target=_run_job, args=(job, results))
    process.start()
    started = last_progress = time.monotonic()
    last_cpu = -1.0
    try:
        while True:
            try:
                return results.get(timeout=5.0)
            except queue.Empty:
                pass
            now, cpu = time.monotonic(), _cpu_seconds(process.pid)
            if cpu is not None and cpu > last_cpu + 0.5:
                last_cpu, last_progress = cpu, now
            if now - last_progress > stall_s:
                return {"error": f"stalled: no CPU time used for {stall_s:.0f} s (deadlock); the process was stopped"}
            if now - started > timeout_s or not process.is_alive():
                return {"error": f"no result after {now - started:.0f} s; the process was stopped"}
    finally:
        process.join(5)
        if process.is_alive():
            process.terminate()
            process.join()


def run_with_retries(job: tuple[str, dict[str, Any]], timeout_s: float, attempts: int) -> dict[str, Any]:
    """`run_isolated`, tried again (a fresh process) after a stall, up to `attempts` times."""
    errors = []
    for _ in range(attempts):
        row = run_isolated(job, timeout_s)
        if "error" not in row:
            return {**row, "failed_attempts": errors}
        errors.append(row["error"])
        if not row["error"].startswith("stalled"):
            break
    return {"error": "; ".join(errors), "failed_attempts": errors}


JOBS: dict[str, Callable[..., dict[str, Any]]] = {
    "env": measure_env,
    "agent": measure_agent,
    "sac_buffer": measure_buffer_check,
    "sac_mlp": measure_mlp_fraction,
    "ppo_reference": measure_reference_ppo,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    choices = ["env", *SEED_SWEPT, "ppo_reference", "sac_buffer", "sac_mlp"]
    parser.add_argument("--out", required=True, help="the JSONL file to write (overwritten)")
    parser.add_argument("--only", nargs="+", choices=choices, help=f"measure these only (of {choices})")
    parser.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS), help="seed counts of the swept runs")
    parser.add_argument("--repeats", type=int, default=3, help="execution-only calls per run; the median counts")
    parser.add_argument("--job-timeout", type=float, default=480.0, help="seconds before a run is stopped")
    parser.add_argument("--attempts", type=int, default=3, help="tries of a run that deadlocks")
    args = parser.parse_args(argv)
    selected = args.only or choices
    common = {
        "commit": git_commit(),
        "worktree_dirty": worktree_dirty(),
        "backend": jax.default_backend(),
        "cpu": cpu_model(),
        "n_cpus": os.cpu_count(),
        "jax": jax.__version__,
    }
    jobs: list[tuple[str, dict[str, Any]]] = []
    if "env" in selected:
        jobs += [("env", {"env_id": env_id, "repeats": args.repeats}) for env_id in ("CartPole-v1", "Pendulum-v1")]
    for name in SEED_SWEPT:
        if name in selected:
            jobs += [("agent", {"name": name, "n_seeds": n, "repeats": args.repeats}) for n in args.seeds]
    if "ppo_reference" in selected:
        jobs += [("ppo_reference", {"n_seeds": n_seeds, "repeats": args.repeats}) for n_seeds in args.seeds]
    if "sac_buffer" in selected:
        jobs.append(("sac_buffer", {"repeats": max(args.repeats, 5)}))
    if "sac_mlp" in selected:
        jobs += [("sac_mlp", {"hidden": hidden, "repeats": args.repeats}) for hidden in (256, 64)]
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        for job in jobs:
            row = run_with_retries(job, args.job_timeout, args.attempts)
            if "error" in row:
                row = {"run": job[1].get("name", job[0]), "n_seeds": job[1].get("n_seeds", 1), **row}
            row = {
                **common,
                **row,
                "timestamp": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "load_avg_1m": os.getloadavg()[0],
            }
            handle.write(json.dumps(row) + "\n")
            handle.flush()
            _print(row)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    sys.exit(main())
