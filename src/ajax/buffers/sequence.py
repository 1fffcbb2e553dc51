"""A replay of trajectories, on flashbax's trajectory buffer: what a recurrent replay agent samples.

Each env copy writes its own time line, one step per tick, so consecutive rows of a line
are consecutive steps of that copy (episodes follow each other, marked by `episode_start`).
A sample draws `n_sequences` windows of `length` consecutive steps, each from a uniform
start in a uniform copy; windows never straddle the oldest and the newest step of a full
line. The draw is a gather of `n_sequences * length` rows, its cost independent of the
capacity; the steps are stored packed (`ajax.buffers.packed`), so it gathers one array per
dtype rather than one per field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import flashbax as fbx
import jax
import jax.numpy as jnp
from flax import struct

from ajax.buffers.packed import PackedRows
from ajax.environments.interaction import Transition
from ajax.lockstep import lockstep
from ajax.state import BaseAgentState, EnvironmentConfig


@struct.dataclass
class SequenceStep:
    """One stored step: the transition, whether its observation began an episode, and the
    actor's carry before reading it (stored-state replay; () otherwise)."""

    transition: Transition
    episode_start: jax.Array
    carry: Any = ()


@lockstep
def _write_step(lines: Any, step: Any, index: jax.Array, lead: int) -> Any:
    """One step (n_envs, ...) into every env's line (n_envs, length, ...) at `index`, behind
    `lead` seed axes."""
    return jax.tree.map(
        lambda line, row: jax.lax.dynamic_update_slice_in_dim(
            line, jnp.expand_dims(row, lead + 1), index, axis=lead + 1
        ),
        lines,
        step,
    )


@dataclass(frozen=True)
class SequenceReplay:
    """`capacity` steps in all, `capacity // n_envs` per env copy; samples of `n_sequences` windows."""

    capacity: int
    n_envs: int
    n_sequences: int
    length: int

    def __post_init__(self) -> None:
        if self.capacity // self.n_envs < self.length:
            raise ValueError(
                f"A sequence replay keeps buffer_size // n_envs = {self.capacity // self.n_envs} steps per env, "
                f"fewer than one window of {self.length} (burn_in + sequence_length); raise buffer_size to at least "
                f"{self.length * self.n_envs}."
            )

    @property
    def _buffer(self):
        return fbx.make_trajectory_buffer(
            add_batch_size=self.n_envs,
            sample_batch_size=self.n_sequences,
            sample_sequence_length=self.length,
            period=1,
            min_length_time_axis=self.length,
            max_length_time_axis=self.capacity // self.n_envs,
        )

    def init(self, env_args: EnvironmentConfig, carry: Any = ()) -> Any:
        """The empty replay; `carry` is one env's actor carry when the replay stores it."""
        action = jnp.zeros((env_args.action_dim,), jnp.float32) if env_args.continuous else jnp.zeros((), jnp.int32)
        obs = env_args.observation_zeros()
        flag = jnp.zeros((), bool)
        transition = Transition(obs, action, jnp.zeros(()), obs, flag, flag)
        return self._buffer.init(PackedRows.of(SequenceStep(transition, flag, carry)))

    def add(self, state: BaseAgentState, transition: Transition) -> BaseAgentState:
        """Append the tick's step of every copy; the behaviour policy's extras must hold
        `episode_start` and, for stored-state replay, `carry`."""
        extras = transition.extras
        step = SequenceStep(transition.replace(extras=()), extras["episode_start"], extras.get("carry", ()))
        collector = state.collector_state
        return state.replace(collector_state=collector.replace(buffer_state=self.append(collector.buffer_state, step)))

    def append(self, buffer_state: Any, step: SequenceStep) -> Any:
        """One time step into every env's line, as flashbax's add writes it but by a slice update
        in lock-step across seeds (`ajax.lockstep`): its add scatters, which XLA's CPU backend runs
        one index at a time."""
        index, lines = buffer_state.current_index, buffer_state.experience
        experience = _write_step(lines, lines.like(step), index)
        length = self.capacity // self.n_envs
        return buffer_state.replace(
            experience=experience,
            current_index=(index + 1) % length,
            is_full=buffer_state.is_full | (index + 1 >= length),
        )

    def sample(self, buffer_state: Any, key: jax.Array) -> SequenceStep:
        """`n_sequences` windows, time-major: leaves (length, n_sequences, ...)."""
        windows = self._buffer.sample(buffer_state, key).experience
        return jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1), windows).unpacked()
