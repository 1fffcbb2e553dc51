"""A replay that grows in place when a run is continued past the horizon it was allocated for.

A replay is allocated for what its run's horizon writes, at most `buffer_size`
(`ActorCritic.replay_capacity`), so a run continued to a later horizon needs a larger one.
Every replay kind here (flashbax's item and trajectory buffers, DreamerV3's rows, DAgger's
dataset) is a ring of arrays with one capacity axis, written from slot 0 on, that samples
only among the rows written while it has not wrapped: appending empty slots to a ring that
has never been full changes no write, no sample and no value, so the continued run equals
the one with the whole `buffer_size` allocated.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

# Where a state keeps its replays: the collector's buffer, and DAgger's aggregate dataset.
REPLAY_FIELDS = ("collector_state.buffer_state", "dataset")


def is_replay(path: str) -> bool:
    """Whether the leaf at `path` (dotted, as `jax.tree_util.keystr(..., simple=True, separator=".")`
    writes it, or a checkpoint's field with its class in front) belongs to a replay."""
    parts = path.split(".")
    return any(
        parts[i : i + len(field.split("."))] == field.split(".") for field in REPLAY_FIELDS for i in range(len(parts))
    )


def capacity_axis(shape: tuple[int, ...], other: tuple[int, ...]) -> int | None:
    """The one axis on which two shapes of a replay leaf differ (its capacity), or None."""
    if len(shape) != len(other):
        return None
    differing = [axis for axis, (a, b) in enumerate(zip(shape, other, strict=True)) if a != b]
    return differing[0] if len(differing) == 1 else None


def leaves_by_path(tree: Any) -> dict[str, Any]:
    """Every leaf of `tree` by its dotted path, as `is_replay` and a mismatch's message read it."""
    keystr = jax.tree_util.keystr
    return {keystr(path, simple=True, separator="."): leaf for path, leaf in jax.tree.leaves_with_path(tree)}


def _capacity_axes(state: Any, skeleton: Any) -> dict[str, tuple[int, int, int]]:
    """Each replay leaf of `state` whose capacity differs from `skeleton`'s: that axis, and its
    length in `state` and in `skeleton`.

    Leaves are matched by path: two runs' states differ in their static parts (each program's
    own functions), not in their paths."""
    theirs, ours = leaves_by_path(state), leaves_by_path(skeleton)
    axes = {}
    for path in theirs.keys() & ours.keys():
        if is_replay(path):
            held, wanted = tuple(np.shape(theirs[path])), tuple(ours[path].shape)
            axis = capacity_axis(held, wanted)
            if axis is not None:
                axes[path] = (axis, held[axis], wanted[axis])
    return axes


def held_capacity(state: Any, skeleton: Any, capacity: int) -> int | None:
    """The capacity, in the units of `capacity`, of the replay `state` holds, where `skeleton`'s
    holds `capacity`; None when the two replays are alike."""
    axes = _capacity_axes(state, skeleton)
    if not axes:
        return None
    _, held, wanted = axes[min(axes)]
    return capacity * held // wanted


def grown(state: Any, skeleton: Any) -> Any:
    """`state` with each replay array padded with empty slots to `skeleton`'s capacity."""
    axes = _capacity_axes(state, skeleton)

    def pad(path: Any, given: Any) -> Any:
        name = jax.tree_util.keystr(path, simple=True, separator=".")
        if name not in axes:
            return given
        axis, held, wanted = axes[name]
        widths = [(0, 0)] * np.ndim(given)
        widths[axis] = (0, wanted - held)
        return jnp.pad(given, widths)

    return jax.tree_util.tree_map_with_path(pad, state)
