"""Spreading a run's leading axis (seeds, or a sweep's configurations) across devices and hosts.

A run is one program vmapped over its seeds, and no seed reads another's numbers, so spreading
it is a matter of where the arrays live: the leading axis of every batched leaf of the state
(and of the keys) is split across a one-dimensional `Mesh` with a `NamedSharding`, and each
device runs the one-device program on its share (`jax.shard_map`), with no communication. The
results are the one-device run's to float32 rounding: the per-device program, compiled for a
host of several devices, may round the last bits differently.

A count of runs that the devices do not divide is padded with copies of the last run, computed
and then dropped from the results: every device stays busy with the same shapes, and the caller
sees only the runs it asked for. Under `jax.distributed` (several processes, one global mesh of
every process's devices), each process builds the same global arrays from the same seeds, every
device computes its share, and the results are gathered back to every process.
"""

from __future__ import annotations

import functools
import gc
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ajax.checks import is_count

RUN_AXIS = "runs"


# XLA's CPU compile of a program that runs once: LLVM's optimisation passes off.
RUN_ONCE_ON_CPU = {"xla_backend_optimization_level": 0}


def jit_run_once(fn: Callable, *, on_host: bool = True) -> Callable:
    """`jax.jit(fn)` for a program that runs once a call (a run's initial state), not in a loop.

    On a CPU such a program spends far longer in LLVM's optimisation passes than in running:
    PPO's initial state (network initialisers, env resets) compiled in 3.2 s and 1.6 s
    without them (`xla_backend_optimization_level=0`), and SAC's in 2.7 and 1.4 s, where
    running it takes milliseconds. XLA's own graph passes (fusion, layout) still run; the
    values may differ from the optimised program's in the last bit, but each call of this
    program gives the same ones.

    Beside an accelerator the program runs on the host's CPU the same way (`on_host`, for a
    program on one device) and its results move to the accelerator: a TPU compiles the
    seed-batched initialisers slowly, all of it in code generation that grows with the seeds
    (PPO's initial state on a TPU v5e: 7 s at one seed, 20 s at 64, 19 s at 1,024, where
    the run itself compiled in 10 to 16 s; `benchmarks/studies/compile_passes.py`), and the host
    compiles it in about a second and a half at any count. A run on an accelerator then starts
    from the initial state a CPU run of the same seeds starts from. Like a run's program, it is
    traced with the garbage collector paused (`collection_paused`).
    """
    fn = collection_paused(fn)
    if jax.default_backend() == "cpu":
        return jax.jit(fn, compiler_options=RUN_ONCE_ON_CPU)
    host = host_cpu() if on_host else None
    return jax.jit(fn) if host is None else OnHost(jax.jit(fn, compiler_options=RUN_ONCE_ON_CPU), host)


def host_cpu() -> jax.Device | None:
    """The host's CPU device, or None where JAX was started without its CPU backend."""
    try:
        return jax.devices("cpu")[0]
    except RuntimeError:  # JAX_PLATFORMS names the accelerator alone
        return None


@dataclass(frozen=True)
class OnHost:
    """A jitted program run on the host's CPU, its results put on the default device."""

    program: Callable
    host: jax.Device

    def __call__(self, *args: Any) -> Any:
        return jax.device_put(self.program(*jax.device_put(args, self.host)), default_device())

    def eval_shape(self, *args: Any) -> Any:
        return self.program.eval_shape(*args)


def default_device() -> jax.Device:
    """The device an uncommitted array lands on: `jax.default_device`'s if one is set, else the first."""
    chosen = jax.config.jax_default_device
    if isinstance(chosen, str):
        return jax.devices(chosen)[0]
    return chosen if chosen is not None else jax.devices()[0]


def key_shape() -> tuple[int, ...]:
    """The shape of one raw PRNG key under JAX's configured implementation: (2,) for the default
    threefry, (4,) for `rbg` and `unsafe_rbg` (`jax.config.update("jax_default_prng_impl", ...)`),
    read when a run is built, so a setting made after importing Ajax holds."""
    return jax.eval_shape(lambda: jax.random.PRNGKey(0)).shape


def seed_keys(seeds: Sequence[int]) -> np.ndarray:
    """Each seed's `jax.random.PRNGKey`, stacked on the host.

    Stacking them with `jnp.stack` compiles a program of as many operands as seeds: 6.4 s on a
    TPU v5e for 1,024 seeds.
    """
    return np.stack([np.asarray(jax.random.PRNGKey(seed)) for seed in seeds])


def jit_run(fn: Callable, **kwargs: Any) -> Callable:
    """`jax.jit(fn, **kwargs)` for a run's program, which runs many iterations a call.

    On a CPU it is compiled with LLVM's second optimisation level rather than its third
    (`xla_backend_optimization_level=2`): for the programs of the peer comparison the
    compile took 10 to 20% less (PPO 5.0 -> 4.5 s, DQN 3.6 -> 3.2 s), execution measured
    the same, and the values are bit for bit those of the third (XLA's CPU code keeps
    floating-point order; the matrix products are Eigen's, compiled once). With JAX's
    `jax_disable_most_optimizations` on (the test suite), JAX's own setting stands. It is
    traced with the garbage collector paused (`collection_paused`).
    """
    fn = collection_paused(fn)
    if jax.default_backend() != "cpu" or jax.config.values["jax_disable_most_optimizations"]:
        return jax.jit(fn, **kwargs)
    return jax.jit(fn, compiler_options={"xla_backend_optimization_level": 2}, **kwargs)


def collection_paused(fn: Callable) -> Callable:
    """`fn` with Python's cyclic garbage collector paused while it runs, and under the name it had.

    A jitted function's Python body runs only while JAX traces it, and tracing a run's program
    allocates hundreds of thousands of objects that outlive the young generations, which sets off
    full collections over every object the process holds (JAX's, Flax's, the envs'): two of them
    took 0.42 s of DreamerV3's trace at the CartPole gate's settings on 2 CPU cores. Paused, the
    trace fell from 2.24 to 1.79 s (TD-MPC2's at its defaults from 2.23 to 1.85 s, means of four),
    with the compiled programs unchanged (`benchmarks/program_hashes.py`) and the peak memory
    within its spread between runs. The trace's garbage is collected once the collector runs
    again. Where the caller had already paused the collector, it stays paused.
    """

    @functools.wraps(fn)
    def paused(*args: Any, **kwargs: Any) -> Any:
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()

    return paused


def _chosen_devices(devices: int | Sequence[jax.Device] | None) -> list[jax.Device]:
    """The devices a run spreads over: all of them (None), the first `devices`, or those listed."""
    available = jax.devices()
    if devices is None:
        return available
    if is_count(devices):
        if not 1 <= devices <= len(available):
            raise ValueError(
                f"devices={devices}, but JAX sees {len(available)} device(s) ({available[0].platform}): pass "
                f"devices=None for all of them, or a count from 1 to {len(available)}."
            )
        if devices < len(available) and jax.process_count() > 1:
            raise ValueError(
                f"devices={devices} leaves out devices of a {jax.process_count()}-process run: every process must "
                "take part in one global mesh. Pass devices=None."
            )
        return available[:devices]
    chosen = list(devices)
    if not chosen or any(not isinstance(device, jax.Device) for device in chosen):
        raise TypeError(f"devices= takes None, a count or a list of jax devices, got {devices!r}.")
    return chosen


@dataclass(frozen=True)
class Placement:
    """Where a run's leading axis of `n_runs` lives: one device (`mesh` None) or split across a mesh.

    `padded` is `n_runs` rounded up to a multiple of the mesh's devices.
    """

    mesh: Mesh | None
    n_runs: int

    @classmethod
    def of(cls, devices: int | Sequence[jax.Device] | None, n_runs: int) -> Placement:
        chosen = _chosen_devices(devices)
        if len(chosen) == 1:
            return cls(None, n_runs)
        return cls(Mesh(np.asarray(chosen), (RUN_AXIS,)), n_runs)

    @property
    def n_devices(self) -> int:
        return 1 if self.mesh is None else self.mesh.size

    @property
    def padded(self) -> int:
        return math.ceil(self.n_runs / self.n_devices) * self.n_devices

    @property
    def multi_process(self) -> bool:
        return self.mesh is not None and jax.process_count() > 1

    def program(self, fn: Callable) -> Callable:
        """`fn` (over arguments and results whose every leaf leads with the runs' axis) run by each
        device on its own share of the runs: the one-device program on fewer runs, no communication."""
        if self.mesh is None:
            return fn
        spec = PartitionSpec(RUN_AXIS)
        return jax.shard_map(fn, mesh=self.mesh, in_specs=spec, out_specs=spec, check_vma=False)

    def run_once(self, fn: Callable) -> Callable:
        """`fn` placed as `program` places it, jitted as a program that runs once a call
        (`jit_run_once`): on one device, beside an accelerator, the host's CPU runs it."""
        return jit_run_once(self.program(fn), on_host=self.mesh is None)

    def _put(self, leaf: Any) -> jax.Array:
        sharding = NamedSharding(self.mesh, PartitionSpec(RUN_AXIS))
        if not self.multi_process:
            return jax.device_put(leaf, sharding)
        # Another process's devices are out of reach: each process builds its own shards of the
        # global array from the same host values.
        values = np.asarray(leaf)
        return jax.make_array_from_callback(values.shape, sharding, lambda index: values[index])

    def spread(self, tree: Any) -> Any:
        """`tree`, every leaf leading with the runs' axis, padded to `padded` runs and split across the mesh.

        On one device the tree is returned as it is.
        """
        if self.mesh is None:
            return tree
        extra = self.padded - self.n_runs

        def place(leaf: Any) -> jax.Array:
            if extra:
                leaf = jnp.concatenate([leaf, jnp.repeat(jnp.asarray(leaf)[-1:], extra, axis=0)])
            return self._put(leaf)

        return jax.tree.map(place, tree)

    def gather(self, tree: Any) -> Any:
        """The results for the runs asked for: padding dropped, and, across processes, every run on every process."""
        if self.mesh is None:
            return tree
        if self.multi_process:
            tree = jax.tree.map(jnp.asarray, multihost_utils.process_allgather(tree, tiled=True))
        if self.padded == self.n_runs:
            return tree
        return jax.tree.map(lambda leaf: leaf[: self.n_runs], tree)


ONE_DEVICE = Placement(None, 0)
"""The placement of a program that runs on the default device (its runs counted by the caller)."""
