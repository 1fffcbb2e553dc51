"""Ring writes that stay one write when a run is vmapped over seeds that step in lock-step.

Every seed of a run writes its replay at the same position: the seeds take the same number
of steps from the same counters (`train()` refuses a state whose seeds disagree on them), so
the ring's write index is equal across them. vmap cannot know that. It sees a batched index
and turns the write into a scatter with one index per seed and row, which a TPU executes one
index at a time: 11,460 us a write of 4 rows at 1,024 seeds, against 7.6 us for the same
scatter at one shared index (benchmarks/studies/replay_write.py on a TPU v5e). On a CPU the
shared write saves a fifth of SAC's execution at 8 seeds.

`lockstep` gives a write function a vmap rule that writes every seed's rows at the first
seed's index. Deciding at run time (a conditional between the shared and the per-seed
write) would cost more than it saves: XLA copies the whole ring into the conditional.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

Write = Callable[[Any, Any, jax.Array], Any]


def _batched(tree: Any, batched: Any, axis_size: int) -> Any:
    """Every leaf of `tree` with the vmapped axis in front, broadcast where vmap left it out."""
    return jax.tree.map(lambda x, b: x if b else jnp.broadcast_to(x, (axis_size, *jnp.shape(x))), tree, batched)


def lockstep(write: Write) -> Write:
    """`write(ring, rows, index)`, one seed's write of `rows` into `ring` at `index`, made one
    write at the first seed's index under vmap: every seed's index must be the same."""

    @custom_vmap
    def written(ring: Any, rows: Any, index: jax.Array) -> Any:
        return write(ring, rows, index)

    @written.def_vmap
    def vmapped(axis_size: int, in_batched: Any, ring: Any, rows: Any, index: jax.Array) -> tuple[Any, Any]:
        ring_batched, rows_batched, index_batched = in_batched
        ring, rows = _batched(ring, ring_batched, axis_size), _batched(rows, rows_batched, axis_size)
        out = jax.vmap(write, in_axes=(0, 0, None))(ring, rows, index[0] if index_batched else index)
        return out, jax.tree.map(lambda _: True, out)

    return written
