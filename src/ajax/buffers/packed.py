"""Replay rows kept as one array per storage dtype rather than one per field.

A replay sample gathers the same random rows from every array the replay keeps. Kept a field
to an array, SAC's transition (observation, action, reward, next observation, two flags) costs
six gathers a sample; on a TPU each gather of a narrow array pads its rows to the chip's 128
lanes, so six gathers cost about six times one. Timed alone on the TPU v5e
(`benchmarks/studies/replay_write.py --packed`, 5,000-row rings, 256 rows a draw), a draw from
one packed ring took 94 us against 986 us from a ring per field at 64 seeds, 5,430 against
18,803 at 1,024. So a row is stored packed: the float32 fields side by side in one array, the
one-element flags beside them as 0.0/1.0 (exact, and a gather saved for 8 bytes a row), as
are the fields the replay names exact in float32 (a discrete action's index); every other
dtype (an image's uint8) in an array of its own, unconverted.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

FLOAT = "float32"


def index_action(continuous: bool) -> frozenset[str]:
    """The `exact_in_float` of rows whose "action" is a discrete action's index (an integer below
    the action count, which float32 holds exactly); none for a continuous action."""
    return frozenset() if continuous else frozenset({"action"})


@dataclass(frozen=True)
class Slot:
    """Where one field of a row lies: columns [start, start + size) of the array `group`."""

    group: str
    start: int
    shape: tuple[int, ...]
    dtype: str

    @property
    def size(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class Layout:
    """How the fields of one row (a pytree of arrays) map onto the packed arrays' columns."""

    treedef: Any
    slots: tuple[Slot, ...]

    @classmethod
    def of(cls, row: Any, exact_in_float: frozenset[str] = frozenset()) -> Layout:
        """`exact_in_float`: the fields (dotted paths) whose values float32 holds exactly, such as
        a discrete action's index, stored among the floats whatever their dtype."""
        paths, treedef = jax.tree_util.tree_flatten_with_path(row)
        shapes = [tuple(leaf.shape) for _, leaf in paths]  # arrays or jax.ShapeDtypeStruct
        names = [jax.tree_util.keystr(path, simple=True, separator=".") for path, _ in paths]
        dtypes = [str(leaf.dtype) for _, leaf in paths]  # "float32", "uint8", a PRNG key's "key<fry>"
        widths: dict[str, int] = {}
        slots = []
        for shape, dtype, name in zip(shapes, dtypes, names, strict=True):
            size = math.prod(shape)
            flag = dtype == "bool" and size == 1
            group = FLOAT if (flag or name in exact_in_float) and FLOAT in dtypes else dtype
            start = widths.get(group, 0)
            widths[group] = start + size
            slots.append(Slot(group, start, shape, dtype))
        return cls(treedef, tuple(slots))

    def pack(self, rows: Any) -> dict[str, jax.Array]:
        """Rows (any leading axes, the same in every field) as the packed arrays (leading axes, width)."""
        leaves, treedef = jax.tree.flatten(rows)
        if treedef != self.treedef:
            raise ValueError(f"Rows of structure {treedef} do not fit a replay that stores {self.treedef}.")
        columns: dict[str, list[jax.Array]] = {}
        for leaf, slot in zip(leaves, self.slots, strict=True):
            lead = jnp.shape(leaf)[: jnp.ndim(leaf) - len(slot.shape)]
            part = jnp.reshape(leaf, (*lead, slot.size))
            columns.setdefault(slot.group, []).append(part if slot.group == slot.dtype else part.astype(slot.group))
        return {group: jnp.concatenate(parts, axis=-1) for group, parts in columns.items()}

    def unpack(self, groups: dict[str, Any]) -> Any:
        """The rows the packed arrays hold, each field its own shape and dtype again (arrays or numpy)."""
        leaves = []
        for slot in self.slots:
            columns = groups[slot.group][..., slot.start : slot.start + slot.size]
            part = columns.reshape((*columns.shape[:-1], *slot.shape))
            leaves.append(part if slot.group == slot.dtype else part.astype(slot.dtype))
        return jax.tree.unflatten(self.treedef, leaves)


@struct.dataclass
class PackedRows:
    """A replay's rows, packed (`Layout`). Its fields read as the row's own: `experience.obs` is
    every stored observation, so a state is inspected as if each field had its array."""

    groups: dict[str, jax.Array]
    layout: Layout = struct.field(pytree_node=False)

    @classmethod
    def of(cls, rows: Any, exact_in_float: frozenset[str] = frozenset()) -> PackedRows:
        """`rows` packed; their layout is that of one row of them (no leading axes)."""
        layout = Layout.of(rows, exact_in_float)
        return cls(layout.pack(rows), layout)

    def like(self, rows: Any) -> PackedRows:
        """`rows` packed in this layout (rows with leading axes of their own)."""
        return PackedRows(self.layout.pack(rows), self.layout)

    def unpacked(self) -> Any:
        return self.layout.unpack(self.groups)

    def graft_saved(self, saved: dict[str, Any], graft: Callable[[Any, Any], Any]) -> PackedRows | None:
        """For `ajax.checkpoint`: a replay saved before rows were packed (one array per field) as
        this one, its fields grafted onto these rows unpacked and packed again; None for a replay
        saved packed, which grafts as any other node."""
        if "groups" in saved:
            return None
        return self.like(graft(self.unpacked(), saved))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("groups", "layout"):
            raise AttributeError(name)
        return getattr(self.unpacked(), name)
