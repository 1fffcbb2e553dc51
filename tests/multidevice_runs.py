"""Runs on several devices or processes, started by tests/test_devices.py in processes of their own.

JAX fixes its devices when it starts, so each check runs here, in a fresh interpreter:

    python -m tests.multidevice_runs devices           # under --xla_force_host_platform_device_count=4
    python -m tests.multidevice_runs host PID PORT OUT  # one of two jax.distributed processes

`devices` asserts and exits 0 when every check holds; `host` writes process 0's results to OUT.
"""

from __future__ import annotations

import sys

import jax
import numpy as np

SMALL = ("16", "relu")
BUDGET = 64


def agent():
    from ajax import PPO

    return PPO(
        "CartPole-v1",
        n_envs=2,
        n_steps=16,
        batch_size=16,
        n_epochs=1,
        actor_architecture=SMALL,
        critic_architecture=SMALL,
    )


def same(first, second) -> float:
    """Assert two runs' results agree to float32 rounding; the largest difference.

    Each device runs the one-device program on its share of the seeds, compiled for a host of
    four devices, and its float rounding may differ in the last bits (6e-8 when measured); a
    two-seed and an eight-seed run on one device agree exactly, which the checks measure too.
    """
    largest = 0.0
    for a, b in zip(jax.tree.leaves(first), jax.tree.leaves(second), strict=True):
        a, b = np.asarray(a), np.asarray(b)
        if np.issubdtype(a.dtype, np.floating):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
            largest = max(largest, float(np.nanmax(np.abs(a - b), initial=0.0)))
        else:
            np.testing.assert_array_equal(a, b)
    return largest


def devices() -> None:
    from ajax.logging.wandb_logging import LoggingConfig
    from ajax.sweep import sweep

    assert len(jax.devices()) == 4, jax.devices()
    logging = LoggingConfig(log_frequency=BUDGET // 2)
    spread, spread_rows = agent().train(seed=list(range(8)), n_timesteps=BUDGET, logging_config=logging)
    leaf = jax.tree.leaves(spread.actor_state.params)[0]
    assert len(leaf.sharding.device_set) == 4, leaf.sharding
    alone, alone_rows = agent().train(seed=list(range(8)), n_timesteps=BUDGET, logging_config=logging, devices=1)
    assert len(jax.tree.leaves(alone.actor_state.params)[0].sharding.device_set) == 1
    across = same((spread, spread_rows), (alone, alone_rows))
    pair = agent().train(seed=[0, 1], n_timesteps=BUDGET, logging_config=logging, devices=1)
    batched = same(pair, jax.tree.map(lambda x: x[:2], (alone, alone_rows)))
    print(f"largest difference: 8 seeds on 4 devices vs 1, {across:.2e}; 2 seeds vs 8 on one device, {batched:.2e}")
    # Six seeds on four devices: padded to eight, the padding dropped; each seed as alone.
    six, six_rows = agent().train(seed=list(range(6)), n_timesteps=BUDGET, logging_config=logging)
    assert jax.tree.leaves(six.rng)[0].shape[0] == 6 and six_rows["timestep"].shape[0] == 6
    same((six, six_rows), jax.tree.map(lambda x: x[:6], (alone, alone_rows)))
    # A sweep spreads its configurations (two, padded to four) the same way.
    grid = {"actor_learning_rate": [1e-3, 3e-3]}
    fixed = {
        "n_envs": 2,
        "n_steps": 16,
        "batch_size": 16,
        "n_epochs": 1,
        "actor_architecture": SMALL,
        "critic_architecture": SMALL,
    }
    from ajax import PPO

    swept = sweep(PPO, "CartPole-v1", grid=grid, seed=[0, 1], n_timesteps=BUDGET, **fixed)
    swept_alone = sweep(PPO, "CartPole-v1", grid=grid, seed=[0, 1], n_timesteps=BUDGET, devices=1, **fixed)
    same(swept[0], swept_alone[0])
    print("devices: every check held")


def host(process_id: int, port: int, out: str) -> None:
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=2, process_id=process_id)
    try:
        assert jax.process_count() == 2 and len(jax.devices()) == 2, jax.devices()
        state, _ = agent().train(seed=[0, 1, 2, 3], n_timesteps=BUDGET)
        if process_id == 0:
            np.savez(out, *[np.asarray(leaf) for leaf in jax.tree.leaves(state.actor_state.params)])
    finally:
        jax.distributed.shutdown()


if __name__ == "__main__":
    if sys.argv[1] == "devices":
        devices()
    else:
        host(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
