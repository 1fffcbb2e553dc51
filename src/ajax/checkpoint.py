"""Checkpoints: the whole agent state on disk, written atomically, grafted back onto a skeleton.

A state is one pytree (every seed, the replay buffer, the optimisers, the keys, the
counters), so a checkpoint is its arrays. `save_checkpoint` writes them to a temporary file
in the same directory, flushes it to disk and renames it over the old checkpoint: a crash
at any moment leaves either the old checkpoint or the new one, never half of either.

`restore_into(skeleton, path)` puts the saved arrays into a skeleton of the same structure
(`agent.train(seed=seeds, n_timesteps=0)` returns one), checking every field by name: a
field the checkpoint holds but the class no longer has restores only if the class lists it
in `removed_fields`; a field the class gained restores as NaN only if it is listed in
`added_fields`. Any other mismatch, of a field, a shape or a dtype, fails with the field's
path, before anything is trained on a wrong state.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import serialization

FORMAT = 1


def save_checkpoint(state: Any, path: str | os.PathLike) -> Path:
    """Write `state` to `path` atomically (a temporary file, fsync, then a rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = serialization.msgpack_serialize({"format": FORMAT, "class": type(state).__name__, "state": _saved(state)})
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(payload)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # the rename itself survives a power cut
    finally:
        os.close(directory)
    return path


def restore_into(skeleton: Any, path: str | os.PathLike) -> Any:
    """The state saved at `path`, on the structure of `skeleton`; fails naming any mismatched field."""
    contents = serialization.msgpack_restore(Path(path).read_bytes())
    if not isinstance(contents, dict) or contents.get("format") != FORMAT:
        raise ValueError(f"{path} is not an Ajax checkpoint (format {FORMAT}).")
    return jax.tree.map(jnp.asarray, _graft(skeleton, contents["state"], type(skeleton).__name__))


def _fields(node: Any) -> list[str]:
    """A dataclass node's data fields (a TrainState's apply_fn and tx are static, not saved)."""
    return [field.name for field in dataclasses.fields(node) if field.metadata.get("pytree_node", True)]


def _saved(node: Any) -> Any:
    """The state as msgpack stores it: dataclasses and sequences as dicts by field name or index."""
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return {name: _saved(getattr(node, name)) for name in _fields(node)}
    if isinstance(node, dict):
        return {str(key): _saved(value) for key, value in node.items()}
    if isinstance(node, tuple | list):
        return {str(i): _saved(value) for i, value in enumerate(node)}
    return None if node is None else np.asarray(node)


def _graft(template: Any, saved: Any, where: str) -> Any:
    if dataclasses.is_dataclass(template) and not isinstance(template, type):
        return _graft_fields(template, saved, where)
    if isinstance(template, dict):
        _same_keys(set(template), saved, where)
        return {key: _graft(value, saved[str(key)], f"{where}[{key!r}]") for key, value in template.items()}
    if template is None or (isinstance(template, tuple | list) and not template):
        if saved not in (None, {}):
            raise ValueError(f"Checkpoint field {where} holds data where the skeleton holds none.")
        return template
    if isinstance(template, tuple | list):
        _same_keys({str(i) for i in range(len(template))}, saved, where)
        values = [_graft(value, saved[str(i)], f"{where}[{i}]") for i, value in enumerate(template)]
        return type(template)(*values) if hasattr(template, "_fields") else type(template)(values)
    return _leaf(template, saved, where)


def _graft_fields(template: Any, saved: Any, where: str) -> Any:
    cls = type(template)
    names = _fields(template)
    if not isinstance(saved, dict):
        raise ValueError(f"Checkpoint field {where} is not a {cls.__name__}.")
    removed = getattr(cls, "removed_fields", frozenset())
    added = getattr(cls, "added_fields", frozenset())
    unknown = sorted(set(saved) - set(names) - removed)
    if unknown:
        raise ValueError(
            f"Checkpoint field {where}.{unknown[0]} is not a field of {cls.__name__}; if the class dropped it, "
            "list it in the class's removed_fields."
        )
    values = {}
    for name in names:
        value = getattr(template, name)
        if name in saved:
            values[name] = _graft(value, saved[name], f"{where}.{name}")
        elif name in added:
            values[name] = jax.tree.map(lambda leaf: jnp.full(jnp.shape(leaf), jnp.nan, jnp.result_type(leaf)), value)
        else:
            raise ValueError(
                f"Checkpoint lacks field {where}.{name} of {cls.__name__}; if the class gained it, list it in the "
                "class's added_fields (restored as NaN)."
            )
    return dataclasses.replace(template, **values)


def _same_keys(expected: set, saved: Any, where: str) -> None:
    if not isinstance(saved, dict) or set(map(str, expected)) != set(saved):
        got = sorted(saved) if isinstance(saved, dict) else type(saved).__name__
        raise ValueError(f"Checkpoint field {where} holds {got}, the skeleton {sorted(map(str, expected))}.")


def _leaf(template: Any, saved: Any, where: str) -> np.ndarray:
    expected = np.asarray(template)
    value = np.asarray(saved)
    if value.shape != expected.shape or value.dtype != expected.dtype:
        raise ValueError(
            f"Checkpoint field {where} is {value.dtype}{list(value.shape)}, the skeleton's "
            f"{expected.dtype}{list(expected.shape)}: restore into a skeleton built like the saved agent "
            "(same seeds, env and sizes)."
        )
    return value
