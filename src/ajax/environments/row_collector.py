"""The world models' collector: one row per env per tick, into a sequence replay.

A row is what DreamerV3's reference (`embodied/core/driver.py`) records at each step of an
env: the observation, the reward that came with it, whether it is the first of an episode,
the last, and a true terminal, the action the policy chose there, and the policy's latent
state after reading it (its "entry"). An episode of n steps therefore makes n + 1 rows: its
first observation, one per step, and the last one, whose action is never executed; the env
resets on the next tick, whose row is the next episode's first. Rows are what `n_timesteps`
counts, as the reference counts its steps.

The replay is a ring of rows per env copy. A training sequence is `length` consecutive rows
of one copy, at a uniformly drawn start among those the ring holds whole; gathering it and
writing the trained latents back cost the sequence's size, whatever the capacity. The
write position is read from the unbatched row counter, so every seed writes the same slot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from ajax import nonfinite
from ajax.environments.interaction import Transition, step_envs
from ajax.lockstep import lockstep
from ajax.state import ACTION_MASK, BaseAgentState, EnvironmentConfig


@struct.dataclass
class Rows:
    """Rows with leading axes (n_envs,) at collection, (n_envs, capacity) in the replay,
    (batch, length) in a sampled sequence."""

    obs: Any  # as the agent keeps it: one array or a dict
    action: jax.Array
    reward: jax.Array  # paid on arriving at obs
    is_first: jax.Array
    is_last: jax.Array
    is_terminal: jax.Array
    entry: Any  # the policy's latent after reading obs


@struct.dataclass
class RowCarry:
    """What the collector keeps between ticks, per env: how its current observation came,
    the next episode's first observation while a last row is written, and the policy's carry."""

    reward: jax.Array
    is_first: jax.Array
    is_last: jax.Array
    is_terminal: jax.Array
    reset_obs: Any  # an observation as kept: one array or a dict
    policy: Any


# (state, policy carry, observations, is_first, key) -> (actions, the carry after, the rows' entries)
RowPolicy = Callable[[BaseAgentState, Any, jax.Array, jax.Array, jax.Array], tuple[jax.Array, Any, Any]]


def initial_row_carry(last_obs: Any, policy_carry: Any) -> RowCarry:
    n = jax.tree.leaves(last_obs)[0].shape[0]
    false = jnp.zeros((n,), bool)
    return RowCarry(jnp.zeros((n,)), jnp.ones((n,), bool), false, false, last_obs, policy_carry)


def empty_replay(rows: Rows, size: int) -> Rows:
    """A replay of `size` rows per env, shaped like one tick's `rows`."""
    return jax.tree.map(lambda x: jnp.zeros((x.shape[0], size, *x.shape[1:]), x.dtype), rows)


def capacity(replay: Rows) -> int:
    return replay.is_first.shape[1]


def collect_row(state: BaseAgentState, policy: RowPolicy, env_args: EnvironmentConfig) -> tuple[BaseAgentState, Rows]:
    """One tick: every env writes its row, then steps (or resets, after a last row).

    The state's `collector_state.memory` is the `RowCarry`, `collector_state.buffer_state`
    the replay; the timestep grows by n_envs rows. Observations whose action mask allowed no
    action are counted in the run's record, but for a last row's, whose action is never executed.
    """
    state, (act_key, step_key) = state.next_keys(2)
    collector = state.collector_state
    carry: RowCarry = collector.memory
    obs = collector.last_obs
    if env_args.action_masked:
        state = nonfinite.record_no_action(state, obs[ACTION_MASK], collector.timestep, acted=~carry.is_last)
    action, policy_carry, entry = policy(state, carry.policy, obs, carry.is_first, act_key)
    row = Rows(obs, action, carry.reward, carry.is_first, carry.is_last, carry.is_terminal, entry)
    tick = collector.timestep // env_args.n_envs
    replay = write_rows(collector.buffer_state, row, tick)
    next_obs, env_state, reward, terminated, truncated, final_obs = step_envs(
        step_key, collector.env_state, action, env_args
    )
    resetting = carry.is_last  # the env reset itself when the last step ended: this tick emits its first row
    env_state = per_env_where(resetting, collector.env_state, env_state)
    done = (terminated | truncated) & ~resetting
    arrived = per_env_where(done, final_obs, next_obs)
    reward = jnp.where(resetting, 0.0, reward)
    episodic_return = collector.episodic_return + reward
    collector = collector.replace(
        env_state=env_state,
        last_obs=per_env_where(resetting, carry.reset_obs, arrived),
        timestep=collector.timestep + env_args.n_envs,
        episodic_return=jnp.where(done, 0.0, episodic_return),
        last_episodic_return=jnp.where(done, episodic_return, collector.last_episodic_return),
        buffer_state=replay,
        memory=RowCarry(
            reward=reward,
            is_first=resetting,
            is_last=done,
            is_terminal=terminated & ~resetting,
            reset_obs=per_env_where(done, next_obs, carry.reset_obs),
            policy=policy_carry,
        ),
    )
    state = state.replace(collector_state=collector)
    step = Transition(obs, action, reward, arrived, terminated & ~resetting, truncated & ~resetting)
    return nonfinite.record(state, nonfinite.env_kinds([step])), row


def per_env_where(flag: jax.Array, value: Any, otherwise: Any) -> Any:
    """`value` for the envs where `flag` (n_envs,) holds, `otherwise` elsewhere, whatever the trailing
    shape; a dict observation key by key."""
    return jax.tree.map(lambda v, o: jnp.where(flag.reshape(-1, *([1] * (v.ndim - 1))), v, o), value, otherwise)


def _write_at(replay: Any, rows: Any, slot: jax.Array, lead: int) -> Any:
    """`rows` into each env's ring at `slot`, behind `lead` seed axes."""
    return jax.tree.map(lambda buffer, x: jax.lax.dynamic_update_index_in_dim(buffer, x, slot, lead + 1), replay, rows)


_write_slot = lockstep(_write_at)


def write_rows(replay: Rows, rows: Rows, tick: jax.Array) -> Rows:
    """`rows` (n_envs, ...) into every env's ring at the slot of `tick`, in lock-step across seeds
    (`ajax.lockstep`), but for the entries.

    The entries' ring is also written at each seed's own sampled rows (`write_entries`), a
    scatter. Given a lock-step slice update as well, that ring stalled DreamerV3's run on a TPU
    v5e (five seeds at 1,500 rows an env: not 512 updates in 130 s, against 31 a second with
    the entries written as a scatter per seed, as both writes were before; 250 rows an env ran
    at full pace either way: benchmarks/studies/ring_pace.py), so the entries keep one kind of write.
    """
    slot = tick % capacity(replay)
    written = _write_slot(replay.replace(entry=None), rows.replace(entry=None), slot)
    return written.replace(entry=_write_at(replay.entry, rows.entry, slot, 0))


def rows_held(replay: Rows, ticks: jax.Array) -> jax.Array:
    """How many rows each env's ring holds after `ticks` ticks."""
    return jnp.minimum(ticks, capacity(replay))


def sample_sequences(
    replay: Rows, key: jax.Array, ticks: jax.Array, batch_size: int, length: int
) -> tuple[Rows, jax.Array, jax.Array]:
    """`batch_size` sequences of `length` consecutive rows, each of one env copy, uniformly
    among the whole sequences the rings hold after `ticks` ticks (at least `length` rows).

    Returns the sequences (batch, length, ...) and, for writing back, each one's env and
    ring slots (batch,), (batch, length).
    """
    env_key, start_key = jax.random.split(key)
    n_envs, size = replay.is_first.shape
    held = rows_held(replay, ticks)
    oldest = (ticks - held) % size
    envs = jax.random.randint(env_key, (batch_size,), 0, n_envs)
    offsets = jax.random.randint(start_key, (batch_size,), 0, held - length + 1)
    slots = (oldest + offsets[:, None] + jnp.arange(length)) % size
    sequences = jax.tree.map(lambda buffer: buffer[envs[:, None], slots], replay)
    return sequences, envs, slots


def write_entries(replay: Rows, envs: jax.Array, slots: jax.Array, entries: Any) -> Rows:
    """The trained latents of sampled sequences back into their rows (the reference's replay context)."""
    written = jax.tree.map(lambda buffer, x: buffer.at[envs[:, None], slots].set(x), replay.entry, entries)
    return replay.replace(entry=written)
