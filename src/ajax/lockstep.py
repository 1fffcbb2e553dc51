"""Ring writes that stay one write when a run is vmapped over seeds that step in lock-step.

Every seed of a run writes its replay at the same position: the seeds take the same number
of steps from the same counters (`train()` refuses a state whose seeds disagree on them), so
the ring's write index is equal across them. vmap cannot know that. It sees a batched index
and turns the write into a scatter with one index per seed and row, which a TPU executes one
index at a time: 11,460 us a write of 4 rows at 1,024 seeds, against 7.6 us for the same
scatter at one shared index (benchmarks/studies/replay_write.py on a TPU v5e). On a CPU the
shared write saves a fifth of SAC's execution at 8 seeds.

`lockstep` gives a write function a vmap rule that writes every seed's rows at the first
seed's index, as one write over all the seeds: the write is told how many seed axes lead its
arrays and writes behind them, so a slice update stays one (the sequence replay's, DreamerV3's
rows). Vmapping a slice update instead, even at an unbatched index, makes it a scatter: JAX
batches `dynamic_update_slice` that way, and in SAC's run at 1,024 seeds on the TPU the
scatters into the rings streamed every seed's whole ring through the chip's memory and changed
its layout on each write. (The item replay's wrapping write is still one scatter at the shared
positions: see `ajax.buffers.replay`. DreamerV3's ring of latents, which its updates also
write at each seed's own sampled rows, keeps per-seed writes throughout: see
`ajax.environments.row_collector.write_rows`.) Deciding at run
time (a conditional between the shared and the per-seed write) would cost more than it
saves: XLA copies the whole ring into the conditional.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

# write(ring, rows, index, lead): one seed's rows into its ring at `index`, every array behind
# `lead` seed axes that the write leaves alone.
Write = Callable[[Any, Any, jax.Array, int], Any]


def _batched(tree: Any, batched: Any, axis_size: int) -> Any:
    """Every leaf of `tree` with the vmapped axis in front, broadcast where vmap left it out."""
    return jax.tree.map(lambda x, b: x if b else jnp.broadcast_to(x, (axis_size, *jnp.shape(x))), tree, batched)


def lockstep(write: Write) -> Callable[[Any, Any, jax.Array], Any]:
    """`write` as `f(ring, rows, index)` for one seed, made one write at the first seed's index
    under the innermost vmap (the seeds'), whose every index must be the same. A vmap around
    that one keeps its elements' own indices: one slice update where they share one, a scatter
    where they differ."""
    return _behind(write, 0)


def _behind(write: Write, lead: int) -> Callable[[Any, Any, jax.Array], Any]:
    """`write` of arrays behind `lead` vmapped axes; a vmap over it adds one."""

    @custom_vmap
    def written(ring: Any, rows: Any, index: jax.Array) -> Any:
        return write(ring, rows, index, lead)

    @written.def_vmap
    def vmapped(axis_size: int, in_batched: Any, ring: Any, rows: Any, index: jax.Array) -> tuple[Any, Any]:
        ring_batched, rows_batched, index_batched = in_batched
        ring, rows = _batched(ring, ring_batched, axis_size), _batched(rows, rows_batched, axis_size)
        if index_batched and lead > 0:
            out = jax.vmap(lambda r, x, i: write(r, x, i, lead))(ring, rows, index)
        else:
            out = _behind(write, lead + 1)(ring, rows, index[0] if index_batched else index)
        return out, jax.tree.map(lambda _: True, out)

    return written
