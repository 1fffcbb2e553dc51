"""Checkpoints: the whole agent state on disk, written atomically, verified when read, grafted onto a skeleton.

A state is one pytree (every seed, the replay buffer, the optimisers, the keys, the
counters), so a checkpoint is its arrays. The file opens with a one-line header (the format,
the state's class, the agent and env that saved it, its settings and seed count, the
payload's length and SHA-256), then
the arrays as msgpack. `save_checkpoint` writes the file to a temporary name in the same
directory, flushes it to disk and renames it over the old checkpoint: a crash at any moment
leaves either the old checkpoint or the new one, never half of either.

`restore_into(skeleton, path)` reads the header first and refuses a missing, empty,
truncated or corrupted file, one saved by another agent or with another number of seeds,
naming the path and the reason, before it parses any array. It then puts the saved arrays
into a skeleton of the same structure (`agent.train(seed=seeds, n_timesteps=0)` returns
one), checking every field by name: a field the checkpoint holds but the class no longer has
restores only if the class lists it in `removed_fields`; a field the class gained restores
as NaN only if it is listed in `added_fields`; a class whose saved form changed wholesale
reads its older form in a `graft_saved(saved, graft)` method (a packed replay reads one
saved an array per field). A replay's arrays keep the capacity they were saved with (a
skeleton's is allocated for its own call's horizon; `train` grows or keeps a restored one).
Any other mismatch, of a field, a shape or a dtype, fails with the field's path, before
anything is trained on a wrong state; given the agent, the message
first names each setting it was built with differently from the saving agent (n_envs, a
layer size, memory), the likely cause.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import serialization

from ajax.buffers.growth import capacity_axis, is_replay

if TYPE_CHECKING:
    from ajax.agents.base import ActorCritic

MAGIC = b"AJAX-CHECKPOINT\n"
FORMAT = 2


class CheckpointError(ValueError):
    """A checkpoint that cannot be restored: missing, empty, truncated, corrupted, or another agent's."""


def save_checkpoint(state: Any, path: str | os.PathLike, agent: ActorCritic | None = None) -> Path:
    """Write `state` to `path` atomically (a temporary file, fsync, then a rename).

    Given the `agent` that trained it, the header records its name and env, and
    `restore_into(..., agent=...)` can refuse another agent's file by name.
    """
    payload = serialization.msgpack_serialize({"state": _saved(state)})
    header = {
        "format": FORMAT,
        "class": type(state).__name__,
        "agent": None if agent is None else agent.name,
        "env": None if agent is None else agent_env(agent),
        "settings": None if agent is None else identity(agent),
        "runs": runs(state),
        "payload_bytes": len(payload),
        "sha256": hashlib.sha256(payload).hexdigest(),
    }
    return write_atomically(path, MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + payload)


def write_atomically(path: str | os.PathLike, data: bytes) -> Path:
    """`data` at `path` through a temporary file in the same directory, flushed to disk and renamed
    over it: a crash leaves the old file or the new one, never half of either."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
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


def env_label(env_id: Any) -> str:
    """An env id as a header records it: the id itself, or a custom env's class name."""
    return env_id if isinstance(env_id, str) else type(env_id).__name__


def agent_env(agent: ActorCritic) -> str:
    """What a header records as `agent`'s env: its env id, or, for an agent built on a multi-task
    dataset (TDMPC2MultiTask, which has no one env and whose config names none), its tasks."""
    if "env_id" in agent.config:
        return env_label(agent.config["env_id"])
    return "tasks " + ", ".join(agent.config["resolved"]["tasks"])


def identity(agent: ActorCritic) -> dict[str, str]:
    """The agent's constructor settings as a header records them, each as its text, so a
    restore can name the ones that differ. A value whose text is an object's address (a
    function, an env object) says nothing across processes and is left out."""
    texts = {name: json.dumps(value, default=repr, sort_keys=True) for name, value in agent.config.items()}
    return {name: text for name, text in texts.items() if " at 0x" not in text}


def runs(state: Any) -> list[int] | None:
    """The runs a state holds: its keys' leading axes, (seeds,) or a sweep's (configurations,
    seeds); None for a state without keys."""
    rng = getattr(state, "rng", None)
    return None if rng is None else [int(n) for n in np.shape(rng)[:-1]]


def _axes(shape: list[int]) -> str:
    """Runs as a user counts them: '3 seeds', or '2 configurations x 3 seeds'."""
    words = ("configurations", "seeds")[-len(shape) :] if shape else ()
    named = [f"{n} {word if n != 1 else word[:-1]}" for n, word in zip(shape, words, strict=True)]
    return " x ".join(named) if shape else "one run"


def _differences(header: dict[str, Any], agent: ActorCritic) -> list[str]:
    """The settings the saving agent and this one were built with differently, each as
    'name: saved, here'. (A changed learning rate restores; a changed size does not.)"""
    saved, ours = header.get("settings") or {}, identity(agent)
    return [
        f"{name}: {saved[name]} saved, {ours[name]} here"
        for name in sorted(set(saved) & set(ours))
        if saved[name] != ours[name]
    ]


def read_checkpoint(path: str | os.PathLike) -> tuple[dict[str, Any], bytes]:
    """The header and the verified payload of the checkpoint at `path`; a CheckpointError says why not."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"Cannot restore {path}: no such file.")
    data = path.read_bytes()
    if not data:
        raise CheckpointError(f"Cannot restore {path}: the file is empty.")
    if not data.startswith(MAGIC):
        raise CheckpointError(f"Cannot restore {path}: it is not an Ajax checkpoint (format {FORMAT}).")
    line, newline, payload = data[len(MAGIC) :].partition(b"\n")
    try:
        header = json.loads(line) if newline else None
    except ValueError:
        header = None
    if not isinstance(header, dict) or not {"format", "class", "payload_bytes", "sha256"} <= set(header):
        raise CheckpointError(f"Cannot restore {path}: its header is damaged or cut short.")
    if header["format"] != FORMAT:
        raise CheckpointError(
            f"Cannot restore {path}: it is in checkpoint format {header['format']}, this Ajax reads format {FORMAT}."
        )
    if len(payload) < header["payload_bytes"]:
        raise CheckpointError(
            f"Cannot restore {path}: it is truncated ({len(payload):,} of its {header['payload_bytes']:,} bytes "
            "of arrays); restore an earlier checkpoint or train again."
        )
    if len(payload) > header["payload_bytes"] or hashlib.sha256(payload).hexdigest() != header["sha256"]:
        raise CheckpointError(
            f"Cannot restore {path}: it is corrupted (its arrays do not match the checksum written with them); "
            "restore an earlier checkpoint or train again."
        )
    return header, payload


def restore_into(skeleton: Any, path: str | os.PathLike, agent: ActorCritic | None = None) -> Any:
    """The state saved at `path`, on the structure of `skeleton`; fails naming the file's or the field's fault.

    Given the `agent` the skeleton comes from, a checkpoint another agent or env saved is refused.
    """
    header, payload = read_checkpoint(path)
    saved_by = f"{header['agent']} on {header['env']}" if header.get("agent") else "an unnamed agent"
    if agent is not None and header.get("agent") is not None:
        ours = (agent.name, agent_env(agent))
        if ours != (header["agent"], header["env"]):
            raise CheckpointError(
                f"Cannot restore {path} into {ours[0]} on {ours[1]}: it was saved by {saved_by}. Build the agent "
                "that saved it, with the same env, sizes and seeds."
            )
    saved_runs = header.get("runs")
    if saved_runs is not None and runs(skeleton) not in (None, saved_runs):
        raise CheckpointError(
            f"Cannot restore {path}: it holds the runs of {_axes(saved_runs)}, the skeleton {_axes(runs(skeleton))}. "
            "Train (or build the skeleton) with as many seeds, and configurations in a sweep, as were saved."
        )
    contents = serialization.msgpack_restore(payload)
    try:
        grafted = _graft(skeleton, contents["state"], type(skeleton).__name__)
    except ValueError as error:
        differ = [] if agent is None else _differences(header, agent)
        if differ:  # the likely cause, named before the field it broke
            raise CheckpointError(
                f"Cannot restore {path} into this {agent.name}: it was built with other settings than the one that "
                f"saved it ({'; '.join(differ)}), and its state does not fit: {error}"
            ) from error
        if header["class"] == type(skeleton).__name__:
            raise
        raise CheckpointError(
            f"Cannot restore {path}: it holds a {header['class']} saved by {saved_by}, the skeleton is a "
            f"{type(skeleton).__name__} ({error}). Restore into the skeleton of the agent that saved it."
        ) from error
    # Back onto the skeleton's own tree structure: a pytree class may keep a field static by
    # registration rather than by field metadata (MJX's physics state keeps its constraint counts
    # so), which the graft cannot tell from data; the skeleton's structure holds its static values.
    leaves, structure = jax.tree.leaves(grafted), jax.tree.structure(skeleton)
    if len(leaves) != structure.num_leaves:
        raise CheckpointError(
            f"Cannot restore {path}: it fills {len(leaves)} arrays of the skeleton's {structure.num_leaves}."
        )
    return jax.tree.unflatten(structure, [jnp.asarray(leaf) for leaf in leaves])


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
    older_form = getattr(template, "graft_saved", None)  # a class that reads a form it was saved in before
    if older_form is not None:
        grafted = older_form(saved, lambda node, value: _graft(node, value, where))
        if grafted is not None:
            return grafted
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
    if value.dtype == expected.dtype and is_replay(where) and capacity_axis(value.shape, expected.shape) is not None:
        return value  # a replay allocated for another horizon: `train` keeps or grows it (`ajax.buffers.growth`)
    if value.shape != expected.shape or value.dtype != expected.dtype:
        raise ValueError(
            f"Checkpoint field {where} is {value.dtype}{list(value.shape)}, the skeleton's "
            f"{expected.dtype}{list(expected.shape)}: restore into a skeleton built like the saved agent "
            "(same seeds, env and sizes)."
        )
    return value
