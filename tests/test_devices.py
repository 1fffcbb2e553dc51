"""Runs spread across devices and processes equal the one-device run of the same seeds, to float32 rounding.

Each check runs in processes of its own (tests/multidevice_runs.py): four devices forced on
the host platform before JAX starts, or two `jax.distributed` processes on 127.0.0.1 with
one device each. Both are bounded in time and killed on the way out.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests.multidevice_runs import BUDGET, agent, same

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 600


def _environment(**extra: str) -> dict[str, str]:
    return {**os.environ, "JAX_PLATFORMS": "cpu", **extra}


@pytest.mark.slow  # a minute and more on 2 cores: a fresh process compiles six programs
def test_seeds_and_configurations_spread_across_four_devices_give_the_one_device_results():
    result = subprocess.run(
        [sys.executable, "-m", "tests.multidevice_runs", "devices"],
        cwd=ROOT,
        env=_environment(XLA_FLAGS="--xla_force_host_platform_device_count=4"),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "every check held" in result.stdout


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow  # a minute and more on 2 cores: three processes compile the same program
def test_two_processes_train_the_union_of_the_seeds_as_one_process_does(tmp_path):
    out, port = tmp_path / "process0.npz", _free_port()
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.multidevice_runs", "host", str(pid), str(port), str(out)],
            cwd=ROOT,
            env=_environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for pid in (0, 1)
    ]
    try:
        outputs = [process.communicate(timeout=TIMEOUT_S)[0] for process in processes]
    finally:
        for process in processes:
            process.kill()
            process.wait()
    assert all(process.returncode == 0 for process in processes), "\n".join(outputs)
    state, _ = agent().train(seed=[0, 1, 2, 3], n_timesteps=BUDGET)
    spread = np.load(out)
    same([spread[f"arr_{index}"] for index in range(len(spread.files))], jax.tree.leaves(state.actor_state.params))


def test_a_run_once_program_gives_the_optimised_programs_values_to_float32_rounding():
    """The initial state compiles without LLVM's optimisations on a CPU: its values may move in
    the last bit (erf_inv in the initialisers), never more, and are the same on every call."""
    from ajax.devices import jit_run_once

    def initial(key: jax.Array) -> jax.Array:
        weights = jax.nn.initializers.variance_scaling(1.0, "fan_avg", "truncated_normal")(key, (64, 32))
        return jnp.tanh(jax.random.normal(key, (8, 64)) @ weights)

    key = jax.random.PRNGKey(3)
    once = np.asarray(jit_run_once(initial)(key))
    np.testing.assert_allclose(once, np.asarray(jax.jit(initial)(key)), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(once, np.asarray(jit_run_once(initial)(key)))


def test_beside_an_accelerator_the_initial_state_runs_on_the_host_and_lands_on_the_default_device(monkeypatch):
    """On a TPU or GPU the run-once program is compiled and run by the host's CPU (its compile
    grows with the seeds on a TPU) and its results are put on the accelerator; a program spread
    over a mesh, or a JAX started without its CPU backend, compiles for the accelerator."""
    from ajax import devices

    def initial(key: jax.Array) -> jax.Array:
        return jax.random.normal(key, (4, 3))

    keys = devices.seed_keys([0, 7])
    on_cpu = np.asarray(jax.vmap(devices.jit_run_once(initial))(keys))
    monkeypatch.setattr(jax, "default_backend", lambda: "tpu")
    program = devices.jit_run_once(initial)
    assert isinstance(program, devices.OnHost) and program.host.platform == "cpu"
    np.testing.assert_array_equal(np.asarray(jax.vmap(program)(keys)), on_cpu)  # a CPU run's initial state
    assert program.eval_shape(keys[0]).shape == (4, 3)
    landed = program(keys[0])
    assert landed.devices() == {devices.default_device()}
    assert not isinstance(devices.jit_run_once(initial, on_host=False), devices.OnHost)
    assert isinstance(devices.ONE_DEVICE.run_once(initial), devices.OnHost)  # one device: the fresh state's

    def no_cpu_backend(platform: str | None = None) -> list:
        raise RuntimeError(f"Unknown backend {platform}")

    monkeypatch.setattr(jax, "devices", no_cpu_backend)
    assert not isinstance(devices.jit_run_once(initial), devices.OnHost)


def test_seed_keys_are_each_seeds_prng_key():
    from ajax.devices import seed_keys

    seeds = [0, 1, 41, 2**31 - 1, 2**32 + 5]
    keys = seed_keys(seeds)
    assert keys.dtype == np.uint32 and keys.shape == (len(seeds), 2)
    np.testing.assert_array_equal(keys, np.stack([np.asarray(jax.random.PRNGKey(s)) for s in seeds]))


def test_under_jaxs_rbg_prng_a_run_and_a_sweep_draw_four_word_keys_and_repeat_themselves():
    """`jax.config.update("jax_default_prng_impl", "rbg")`, the implementation JAX suggests on a
    TPU, makes every key four words: the run's key arrays follow it (they were fixed at two)."""
    from ajax import PPO
    from ajax.sweep import sweep

    small = {"n_envs": 2, "n_steps": 16, "batch_size": 16, "n_epochs": 1}
    previous = jax.config.jax_default_prng_impl
    jax.config.update("jax_default_prng_impl", "rbg")
    try:
        first, _ = PPO("CartPole-v1", **small).train(seed=[0, 1], n_timesteps=64)
        again, _ = PPO("CartPole-v1", **small).train(seed=[0, 1], n_timesteps=64)
        swept = sweep(PPO, "CartPole-v1", grid={"gamma": [0.9, 0.99]}, seed=[0], n_timesteps=64, **small)[0]
    finally:
        jax.config.update("jax_default_prng_impl", previous)
    assert jax.tree.leaves(first.rng)[0].shape == (2, 4)
    assert jax.tree.leaves(swept.rng)[0].shape == (2, 1, 4)
    for a, b in zip(jax.tree.leaves(first), jax.tree.leaves(again), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.optimized
def test_a_run_program_at_llvms_second_level_gives_the_third_levels_values_bit_for_bit():
    """A run's program compiles at `xla_backend_optimization_level=2` on a CPU, for its compile
    time: XLA's CPU code keeps the floating-point order, so nothing it computes moves."""
    from ajax.devices import jit_run

    def run(params: jax.Array, x: jax.Array) -> jax.Array:
        def step(params: jax.Array, _: None) -> tuple[jax.Array, jax.Array]:
            loss = jnp.mean(jnp.log1p(jnp.exp(jnp.tanh(x @ params))) ** 2)
            return params - 0.1 * jnp.tanh(params) * loss, loss

        return jax.lax.scan(step, params, None, length=50)[1]

    params, x = jax.random.normal(jax.random.PRNGKey(0), (32, 16)), jax.random.normal(jax.random.PRNGKey(1), (8, 32))
    np.testing.assert_array_equal(np.asarray(jit_run(run)(params, x)), np.asarray(jax.jit(run)(params, x)))


@pytest.mark.parametrize("name", ["jit_run", "jit_run_once"])
def test_a_program_is_traced_with_the_garbage_collector_paused_and_it_runs_again_after(name):
    import gc

    from ajax import devices

    jit, seen = getattr(devices, name), []

    def program(x: jax.Array) -> jax.Array:
        seen.append(gc.isenabled())
        return x + 1

    assert int(jit(program)(jnp.int32(1))) == 2
    assert seen == [False] and gc.isenabled()
    gc.disable()  # a caller's own pause outlasts the trace
    try:
        jit(program)(jnp.int32(1))
        assert not gc.isenabled()
    finally:
        gc.enable()
