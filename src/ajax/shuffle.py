"""`take_rows`: a pytree's rows at given indices, one gather per dtype instead of one per leaf."""

from __future__ import annotations

import math
from typing import TypeVar

import jax
import jax.numpy as jnp

Tree = TypeVar("Tree")


def take_rows(tree: Tree, indices: jax.Array, axis: int = 0, exact_in_float: frozenset[str] = frozenset()) -> Tree:
    """`tree` with every leaf indexed by `indices` along `axis`: `jax.tree.map(lambda x: x[..., indices, ...], tree)`.

    The leaves must share their shape up to and including `axis`. Those of one dtype (and
    weak type) are flattened past `axis`, concatenated along their last axis and gathered
    once, then cut back into their own shapes; a dtype with one leaf is gathered directly.
    The values are those of per-leaf indexing, bit for bit (a gather copies). Why: on a TPU
    a gather costs per index, so shuffling PPO's rollout under a vmap over 1,024 seeds spent
    ~7.5 ms per epoch on each scalar-per-transition leaf (over half the run); the leaves of a
    dtype gathered as rows of one array cost about one such gather.

    `exact_in_float` names leaves (dotted paths) whose values float32 holds exactly, such as a
    discrete action's index: they are gathered among the float32 leaves and come back in their
    own dtype, so PPO's shuffle makes one gather where its int32 actions made a second.
    """
    paths, treedef = jax.tree_util.tree_flatten_with_path(tree)
    names = [jax.tree_util.keystr(path, simple=True, separator=".") for path, _ in paths]
    dtypes = [jnp.result_type(leaf) for _, leaf in paths]
    leaves = [
        jnp.asarray(leaf, jnp.float32) if name in exact_in_float else jnp.asarray(leaf)
        for name, (_, leaf) in zip(names, paths, strict=True)
    ]
    if not leaves:
        return tree
    lead = leaves[0].shape[: axis + 1]
    for leaf in leaves:
        if leaf.shape[: axis + 1] != lead:
            raise ValueError(f"take_rows: leaves differ up to axis {axis}: {leaf.shape} against {lead}")
    position = (slice(None),) * axis + (indices,)
    groups: dict[tuple[jnp.dtype, bool], list[int]] = {}
    for i, leaf in enumerate(leaves):
        groups.setdefault((leaf.dtype, jax.typeof(leaf).weak_type), []).append(i)
    taken: list[jax.Array | None] = [None] * len(leaves)
    for members in groups.values():
        if len(members) == 1:
            taken[members[0]] = leaves[members[0]][position]
            continue
        widths = [math.prod(leaves[i].shape[axis + 1 :]) for i in members]
        joined = jnp.concatenate([leaves[i].reshape(*lead, w) for i, w in zip(members, widths, strict=True)], axis=-1)
        rows = joined[position]
        start = 0
        for i, width in zip(members, widths, strict=True):
            part = jax.lax.slice_in_dim(rows, start, start + width, axis=-1)
            taken[i] = part.reshape(*rows.shape[:-1], *leaves[i].shape[axis + 1 :])
            start += width
    taken = [
        part.astype(dtype) if name in exact_in_float else part
        for part, name, dtype in zip(taken, names, dtypes, strict=True)
    ]
    return jax.tree.unflatten(treedef, taken)
