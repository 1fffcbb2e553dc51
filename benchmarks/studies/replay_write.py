"""Does the replay's write cost the replay agents their speed and compile at many seeds on an accelerator?

On the TPU v5e, Ajax's DQN and SAC compiled in 91 and 70 s at 1,024 seeds (24 and 40 s for
Rejax) and SAC ran at 0.65x Rejax's speed there (issue 58). Their run programs write each
tick's `n_envs` rows into the replay with flashbax's item buffer, a scatter at per-seed
indices: vmapped over the seeds, the write position is a batched value, 12 scatters an
iteration in SAC's program. Every seed writes at the same position, though, so the write
could be a `dynamic_update_slice` at one shared index. This study times the two writes alone,
in a loop of `--ticks` writes of `n_envs` rows into a `--rows`-row ring per seed, at each
seed count: compile seconds and microseconds a write. Run it on the device in question.

    python benchmarks/studies/replay_write.py --seeds 1 64 1024

Measured with that command on one TPU v5e chip (2026-12-07, JAX 0.10.2, code at d618dde;
rows in benchmarks/studies/replay_write.jsonl), microseconds a write of 4 rows a seed into a
16,384-row ring at 1, 64 and 1,024 seeds: the scatter at per-seed indices (flashbax's, what
the item replay does under vmap) 4.2, 17.6 and 11,460; the scatter at a shared index 4.3,
2.2 and 7.6; one dynamic_update_slice at a shared index 4.7, 10.3 and 69.7. At 1,024 seeds
the per-seed scatter takes about 1,500 times as long as the shared one and compiles in 1.5 s
against 0.3 s. On the 2-core CPU (64 seeds) the three took 5.1, 4.5 and 3.6 us, all
compiling in 0.1 s. PERFORMANCE_REPORT.md has the finding.

Vmapped, the third write is a scatter too: JAX batches `dynamic_update_slice` into one, at
any index. The fourth, `ajax.lockstep`'s slice update behind the seed axis, is one slice
update over all the seeds. `--sample` adds to every tick what the replay agents' updates do
between writes, a draw of 256 rows a seed at that seed's own random positions, so the ring is
both written and gathered in one loop (in SAC's run at 1,024 seeds the TPU profile showed the
ring's layout changed back and forth between its write and its sample, every tick).

    python benchmarks/studies/replay_write.py --seeds 1 64 1024 --sample

On the TPU at 1,024 seeds that draw, not the write, is what a tick costs (3.6 ms against 7.6
us). The item replay keeps a ring per field of a transition (six for SAC), and its sample
gathers each: `--packed` times the draws alone, from a ring per field against one ring of
all their columns, the same rows, to tell whether storing a transition as one row would cut
the sample to one gather's cost.

    python benchmarks/studies/replay_write.py --seeds 64 1024 --rows 5000 --packed

On the 2-core CPU (2026-12-07, that command with 1 seed added, one pinned core) a draw took
8.8, 161 and 8,821 us from a ring per field at 1, 64 and 1,024 seeds, and 9.1, 147 and 8,316
from the packed ring: within 8% either way. The TPU's figures decide.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp

from ajax.lockstep import lockstep

WIDTH = 3 + 1 + 1 + 3 + 2  # Pendulum's obs, action, reward, next obs and the two flags, as floats


def scatter_write(ring: jax.Array, rows: jax.Array, index: jax.Array) -> jax.Array:
    """flashbax's item-buffer write: each row at its own position, modulo the ring."""
    positions = (jnp.arange(rows.shape[0]) + index) % ring.shape[0]
    return ring.at[positions].set(rows)


def slice_write(ring: jax.Array, rows: jax.Array, index: jax.Array) -> jax.Array:
    """The rows as one block at `index` (a ring whose length `n_envs` divides never wraps mid-block)."""
    return jax.lax.dynamic_update_slice_in_dim(ring, rows, index, axis=0)


@lockstep
def lockstep_write(ring: jax.Array, rows: jax.Array, index: jax.Array, lead: int) -> jax.Array:
    """The rows as one block at `index`, a slice update behind the seed axes (`ajax.lockstep`)."""
    return jax.lax.dynamic_update_slice_in_dim(ring, rows, index, axis=lead)


SAMPLE = 256  # rows a seed drawn each tick with --sample (the replay agents' batch)


def program(write: Callable, n_seeds: int, ticks: int, shared_index: bool, sample: bool = False) -> Callable:
    """`ticks` writes into every seed's ring, the index per seed (batched) or one for all; with
    `sample`, each tick also draws SAMPLE rows a seed at random and adds up their first column."""
    step = jax.vmap(write, in_axes=(0, 0, None if shared_index else 0))
    draw = jax.vmap(lambda ring, key: ring[jax.random.randint(key, (SAMPLE,), 0, ring.shape[0]), 0].sum())

    def run(ring: jax.Array, rows: jax.Array) -> tuple[jax.Array, jax.Array]:
        def tick(t: jax.Array, carry: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
            ring, drawn = carry
            index = t * rows.shape[1] % ring.shape[1]
            index = index if shared_index else jnp.full((n_seeds,), index)
            ring = step(ring, rows + t.astype(rows.dtype), index)
            if sample:
                keys = jax.random.split(jax.random.fold_in(jax.random.key(0), t), n_seeds)
                drawn = drawn + draw(ring, keys)
            return ring, drawn

        return jax.lax.fori_loop(0, ticks, tick, (ring, jnp.zeros((n_seeds,), ring.dtype)))

    return jax.jit(run, donate_argnums=0)


def compiled_and_timed(jitted: Callable, arguments: Callable[[], tuple]) -> tuple[float, float]:
    """Seconds to compile `jitted` and seconds of its second call, each call on fresh `arguments()`
    (a program that donates its ring consumes them)."""
    compiled_at = time.perf_counter()
    compiled = jitted.lower(*arguments()).compile()
    compile_s = time.perf_counter() - compiled_at
    jax.block_until_ready(compiled(*arguments()))
    fresh = arguments()
    started = time.perf_counter()
    jax.block_until_ready(compiled(*fresh))
    return compile_s, time.perf_counter() - started


FIELDS = (3, 1, 1, 3, 1, 1)  # the widths of SAC's stored fields on Pendulum: obs, action, reward, next obs, two flags


def sample_program(n_seeds: int, ticks: int) -> Callable:
    """`ticks` draws of SAMPLE rows a seed, each seed at its own random positions, summed, from the
    rings it is given: one ring of all FIELDS' columns (one gather a draw), or a ring per field as
    the item replay stores a transition (a gather per field)."""

    def draw(rings: tuple[jax.Array, ...], key: jax.Array) -> jax.Array:
        at = jax.random.randint(key, (SAMPLE,), 0, rings[0].shape[0])
        return sum(ring[at].sum() for ring in rings)

    draws = jax.vmap(draw)

    def run(rings: tuple[jax.Array, ...]) -> jax.Array:
        def tick(t: jax.Array, drawn: jax.Array) -> jax.Array:
            keys = jax.random.split(jax.random.fold_in(jax.random.key(0), t), n_seeds)
            return drawn + draws(rings, keys)

        return jax.lax.fori_loop(0, ticks, tick, jnp.zeros((n_seeds,), rings[0].dtype))

    return jax.jit(run)


def split_fields(ring: jax.Array) -> tuple[jax.Array, ...]:
    """A packed ring (seeds, rows, sum(FIELDS)) as a ring per field."""
    bounds = [sum(FIELDS[:i]) for i in range(len(FIELDS) + 1)]
    return tuple(ring[..., start:end] for start, end in zip(bounds, bounds[1:], strict=False))


def measure_samples(n_seeds: int, n_rows: int, ticks: int) -> list[dict]:
    """Microseconds a draw from one packed ring against a ring per field, the same rows."""
    ring = jax.random.normal(jax.random.key(1), (n_seeds, n_rows, sum(FIELDS)))
    results = []
    for name, packed in [("a ring per field (the item replay's)", False), ("one packed ring", True)]:
        rings = (ring,) if packed else split_fields(ring)
        compile_s, seconds = compiled_and_timed(sample_program(n_seeds, ticks), lambda rings=rings: (rings,))
        results.append(
            {
                "sample": name,
                "n_seeds": n_seeds,
                "rows": n_rows,
                "fields": list(FIELDS),
                "batch": SAMPLE,
                "ticks": ticks,
                "device_kind": jax.devices()[0].device_kind,
                "compile_s": round(compile_s, 3),
                "us_per_sample": round(1e6 * seconds / ticks, 3),
            }
        )
    return results


def measure(n_seeds: int, n_envs: int, n_rows: int, ticks: int, sample: bool = False) -> list[dict]:
    rows = jnp.ones((n_seeds, n_envs, WIDTH))
    results = []
    for name, write, shared in [
        ("scatter, per-seed index (flashbax's)", scatter_write, False),
        ("scatter, shared index", scatter_write, True),
        ("dynamic_update_slice, shared index", slice_write, True),
        ("slice update behind the seed axis (ajax.lockstep)", lockstep_write, True),
    ]:
        compile_s, seconds = compiled_and_timed(
            program(write, n_seeds, ticks, shared, sample), lambda: (jnp.zeros((n_seeds, n_rows, WIDTH)), rows)
        )
        results.append(
            {
                "write": name,
                "n_seeds": n_seeds,
                "n_envs": n_envs,
                "rows": n_rows,
                "ticks": ticks,
                "sample": sample,
                "device_kind": jax.devices()[0].device_kind,
                "compile_s": round(compile_s, 3),
                "us_per_write": round(1e6 * seconds / ticks, 3),
            }
        )
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 64, 1024])
    parser.add_argument("--n-envs", type=int, default=4)
    parser.add_argument("--rows", type=int, default=16_384, help="rows of each seed's ring (Ajax's REPLAY_FLOOR)")
    parser.add_argument("--ticks", type=int, default=1_250, help="writes a call (accelerator.py's SAC at x0.25)")
    parser.add_argument("--sample", action="store_true", help=f"each tick also draws {SAMPLE} rows a seed")
    parser.add_argument(
        "--packed", action="store_true", help="time the draws alone: a ring per field against one packed ring"
    )
    args = parser.parse_args(argv)
    for n_seeds in args.seeds:
        if args.packed:
            results = measure_samples(n_seeds, args.rows, args.ticks)
        else:
            results = measure(n_seeds, args.n_envs, args.rows, args.ticks, args.sample)
        for result in results:
            print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
