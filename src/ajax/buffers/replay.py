"""A uniform replay buffer of transitions, on flashbax's item buffer.

Each tick adds the n_envs transitions of one step; a sample draws `batch_size` stored
transitions uniformly, at a cost independent of the capacity. The buffer state lives in
`collector_state.buffer_state`, so it is part of the agent state: saved, resumed and
vmapped over seeds like everything else. Its rows are stored packed (`ajax.buffers.packed`),
so a sample gathers one array per dtype, not one per field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import flashbax as fbx
import jax
import jax.numpy as jnp

from ajax.buffers.packed import PackedRows, index_action
from ajax.environments.interaction import Transition
from ajax.lockstep import lockstep
from ajax.state import BaseAgentState, EnvironmentConfig


@dataclass(frozen=True)
class ItemReplay:
    """flashbax's item buffer of packed rows: a ring of `capacity` rows, each add a batch of them
    (`add_items`), uniform samples of `batch_size` rows."""

    capacity: int
    batch_size: int

    @property
    def _buffer(self):
        return fbx.make_item_buffer(
            max_length=self.capacity, min_length=1, sample_batch_size=self.batch_size, add_batches=True
        )

    def init(self, row: Any, exact_in_float: frozenset[str] = frozenset()) -> Any:
        """An empty ring for rows like `row` (one row, no leading axis); `exact_in_float` as
        `ajax.buffers.packed.Layout.of` takes it."""
        return self._buffer.init(PackedRows.of(row, exact_in_float))

    def sample(self, buffer_state: Any, key: jax.Array) -> Any:
        return self._buffer.sample(buffer_state, key).experience.unpacked()


@lockstep
def _write_items(experience: Any, rows: Any, index: jax.Array, lead: int) -> Any:
    """Rows (n, ...) into an item buffer's ring (1, capacity, ...) from `index` on, wrapping:
    one scatter at positions every seed shares, behind `lead` seed axes.

    Two slice updates (the rows up to the ring's end, then those past it) write the same values
    without a scatter, but made SAC's one-seed run 15% slower on the CPU (twelve small kernels a
    tick for six); the TPU's verdict on the two (`benchmarks/studies/replay_write.py --sample`)
    decides between them.
    """
    n, capacity = jax.tree.leaves(rows)[0].shape[lead], jax.tree.leaves(experience)[0].shape[lead + 1]
    at = (slice(None),) * lead + (0, (index + jnp.arange(n)) % capacity)
    return jax.tree.map(lambda ring, row: ring.at[at].set(row), experience, rows)


def add_items(buffer_state: Any, rows: Any) -> Any:
    """flashbax's item-buffer add of a batch of rows (n, ...), packed, written in lock-step across
    seeds (`ajax.lockstep`): flashbax's own add scatters at each seed's index."""
    n, capacity = jax.tree.leaves(rows)[0].shape[0], jax.tree.leaves(buffer_state.experience)[0].shape[1]
    if n > capacity:
        raise ValueError(f"An add of {n} rows overruns a replay of {capacity}: raise buffer_size to at least {n}.")
    end, experience = buffer_state.current_index + n, buffer_state.experience
    return buffer_state.replace(
        experience=_write_items(experience, experience.like(rows), buffer_state.current_index),
        current_index=end % capacity,
        is_full=buffer_state.is_full | (end >= capacity),
    )


def stored(transition: Transition) -> Transition:
    """What replay keeps of a transition: everything but the behaviour policy's extras."""
    return transition.replace(extras=())


@dataclass(frozen=True)
class ReplayBuffer:
    """The uniform replay of DQN, SAC, TD3 and their descendants: `capacity` transitions (a
    ring, the oldest overwritten), minibatches of `batch_size` drawn uniformly. A transition
    is stored without the behaviour policy's extras; its rows are packed (`PackedRows`)."""

    capacity: int
    batch_size: int

    def __post_init__(self) -> None:
        if self.batch_size < 1 or self.capacity < self.batch_size:
            raise ValueError(
                f"The replay buffer must hold at least one batch: buffer_size={self.capacity}, "
                f"batch_size={self.batch_size}."
            )

    @property
    def _items(self) -> ItemReplay:
        return ItemReplay(self.capacity, self.batch_size)

    def init(self, env_args: EnvironmentConfig) -> Any:
        action = jnp.zeros((env_args.action_dim,), jnp.float32) if env_args.continuous else jnp.zeros((), jnp.int32)
        obs = env_args.observation_zeros()
        example = Transition(
            obs=obs,
            action=action,
            reward=jnp.zeros(()),
            next_obs=obs,
            terminated=jnp.zeros((), bool),
            truncated=jnp.zeros((), bool),
        )
        # A discrete action is an index below action_dim, exact in float32: kept among the floats,
        # the sample is one gather (two on a TPU cost about twice one; `ajax.buffers.packed`).
        return self._items.init(example, exact_in_float=index_action(env_args.continuous))

    def add(self, state: BaseAgentState, transition: Transition) -> BaseAgentState:
        collector = state.collector_state
        buffer_state = add_items(collector.buffer_state, stored(transition))
        return state.replace(collector_state=collector.replace(buffer_state=buffer_state))

    def sample(self, buffer_state: Any, key: jax.Array) -> Transition:
        return self._items.sample(buffer_state, key)
