"""What a state shows of the agent that made it: its memory and the actions it acts in.

`state_mismatch` (`ajax.agents.base`) compares a state handed to `train` with the one this
agent builds, leaf by leaf. Memory and the action space change many leaves at once (the
networks, the carries, the replay), so the first leaf that differs says little; these read
the settings themselves from the leaves, so the refusal names the difference instead.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from ajax.networks.memory import AttentionCache, MambaState
from ajax.networks.recurrent import MemoryCarries


def memory_kind(state: Any) -> str | None:
    """The `MemoryConfig.kind` whose carries the state holds, or None for a state without memory.

    Read from one layer's carry, whose form each kind fixes: a transformer's attention cache,
    Mamba's SSM state, an LSTM's (c, h) pair, a GRU's one array.
    """
    memory = getattr(state.collector_state, "memory", None)
    if not isinstance(memory, MemoryCarries):  # none, or a world model's own carry (DreamerV3's)
        return None
    layer = next(iter(memory.carries.values()))[0]
    if isinstance(layer, AttentionCache):
        return "transformer"
    if isinstance(layer, MambaState):
        return "mamba"
    return "lstm" if isinstance(layer, tuple) else "gru"


def memory_difference(state: Any, skeleton: Any) -> str | None:
    """How the memory of the agent that made `state` differs from this one's (`skeleton`), or None."""
    theirs, ours = memory_kind(state), memory_kind(skeleton)
    if theirs == ours:
        return None
    if ours is None:
        return f"the state was made by an agent with memory of kind {theirs!r}; this one has none"
    if theirs is None:
        return f"the state was made by an agent without memory; this one has memory of kind {ours!r}"
    return f"the state was made by an agent with memory of kind {theirs!r}; this one's is {ours!r}"


def _stored_actions(leaves: dict[str, Any]) -> tuple[bool, int | None] | None:
    """The actions a replay or an episode buffer stores (DAgger's as the expert's labels):
    integers are discrete indices, floats continuous actions whose last axis is their size."""
    for path, leaf in sorted(leaves.items()):
        if path.rsplit(".", 1)[-1] in ("action", "label") and not path.startswith("ext_state"):
            continuous = bool(jnp.issubdtype(leaf.dtype, jnp.floating))
            return continuous, (int(np.shape(leaf)[-1]) if continuous else None)
    return None


def _gaussian_actions(leaves: dict[str, Any]) -> tuple[bool, int] | None:
    """A Gaussian policy's actions (PPO's, APO's): its log_std holds one entry per action dimension."""
    for path, leaf in sorted(leaves.items()):
        if path.startswith("actor_state.params") and path.endswith(".log_std"):
            return True, int(np.shape(leaf)[-1])
    return None


def _size_by_heads(theirs: dict[str, Any], ours: dict[str, Any], size: int) -> int | None:
    """The action count (or size) the state's networks were built for: read from the parameters
    whose last axis is this env's `size` here and another there, all else alike (a policy's
    logits, a Q-network's values, an actor's output); None unless they agree on one."""
    shapes = {path: (np.shape(theirs[path]), np.shape(ours[path])) for path in theirs.keys() & ours.keys()}
    counts = {
        there[-1]
        for path, (there, here) in shapes.items()
        if "params" in path
        and len(there) == len(here) > 0
        and there[:-1] == here[:-1]
        and here[-1] == size
        and there[-1] != size
    }
    return int(counts.pop()) if len(counts) == 1 else None


def _described(continuous: bool, size: int | None) -> str:
    if continuous:
        return "continuous actions" + ("" if size is None else f" of size {size}")
    return "discrete actions" if size is None else f"{size} discrete action{'s' if size != 1 else ''}"


def action_difference(theirs: dict[str, Any], ours: dict[str, Any], continuous: bool, size: int) -> str | None:
    """How the actions the state's leaves (`theirs`, by path) were made for differ from this
    agent's env's (`continuous`, `size`: the action count when discrete), or None where they do
    not, or no leaf shows it. `ours` are this agent's own leaves, by path."""
    made_for = _stored_actions(theirs) or _gaussian_actions(theirs)
    if made_for is None and _gaussian_actions(ours) is not None:
        made_for = (False, None)  # no log_std where this agent's Gaussian policy has one: a categorical policy
    kind, held = made_for or (continuous, None)
    held = held if held is not None else _size_by_heads(theirs, ours, size)
    if kind == continuous and held in (None, size):
        return None
    return f"the state was made for {_described(kind, held)}; this agent's env has {_described(continuous, size)}"
