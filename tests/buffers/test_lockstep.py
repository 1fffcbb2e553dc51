"""Replay writes in lock-step: one write at a shared index for every seed, flashbax's values.

Under vmap a write at each seed's own index is a scatter with one index per seed and row,
which a TPU runs one at a time (1,500x slower at 1,024 seeds, benchmarks/studies/replay_write.py).
These checks hold the replays to flashbax's add, value for value, and the vmapped write to
one index shared by the seeds.
"""

from __future__ import annotations

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import SAC
from ajax.agents.base import shared_counters
from ajax.buffers.packed import PackedRows
from ajax.buffers.replay import ItemReplay, add_items
from ajax.buffers.sequence import SequenceReplay
from ajax.environments.row_collector import Rows, empty_replay, write_rows
from ajax.lockstep import lockstep

CAPACITY, N_ROWS, N_SEEDS = 10, 4, 3


def rows(n_seeds: int, tick: int) -> dict:
    """Distinct rows for every seed and tick, so a misplaced write shows."""
    base = 100.0 * jnp.arange(n_seeds)[:, None] + 10.0 * tick + jnp.arange(N_ROWS)
    return {"x": base, "pair": jnp.stack([base, -base], axis=-1)}


def flashbax_add(capacity: int):
    """flashbax's own add of the rows, packed as the replay packs them."""
    add = ItemReplay(capacity, batch_size=2)._buffer.add
    return lambda state, rows: add(state, state.experience.like(rows))


def written(add, n_seeds: int, ticks: int, capacity: int = CAPACITY):
    buffer = ItemReplay(capacity, batch_size=2)
    state = jax.vmap(lambda _: buffer.init({"x": jnp.zeros(()), "pair": jnp.zeros((2,))}))(jnp.arange(n_seeds))
    for tick in range(ticks):
        state = jax.jit(jax.vmap(add))(state, rows(n_seeds, tick))
    return state


# 3 and 7 ticks wrap a 10-row ring mid-write; 4 rows fill a ring of 4 exactly; a ring of 6 wraps
# every other write; 12 rows never wrap mid-write.
@pytest.mark.parametrize("capacity", [CAPACITY, N_ROWS, 6, 12])
@pytest.mark.parametrize("ticks", [1, 3, 7])
def test_add_items_writes_what_flashbax_writes_for_every_seed(ticks, capacity):
    ours = written(add_items, N_SEEDS, ticks, capacity)
    theirs = written(flashbax_add(capacity), N_SEEDS, ticks, capacity)
    for mine, reference in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
        np.testing.assert_array_equal(mine, reference)


def primitives(fn, *args) -> list:
    """Every equation of `fn`'s program, nested ones included."""
    found, todo = [], [jax.make_jaxpr(fn)(*args).jaxpr]
    while todo:
        jaxpr = todo.pop()
        for eqn in jaxpr.eqns:
            found.append(eqn)
            todo.extend(jax.extend.core.jaxprs_in_params(eqn.params))
    return found


def scatters(fn, *args) -> list:
    """The scatters in `fn`'s program: what vmap makes of a slice update it batches itself."""
    return [eqn for eqn in primitives(fn, *args) if eqn.primitive.name == "scatter"]


def test_the_vmapped_add_is_one_scatter_at_positions_the_seeds_share():
    state = written(add_items, N_SEEDS, 0)
    ours = [eqn.invars[1].aval.shape for eqn in scatters(jax.vmap(add_items), state, rows(N_SEEDS, 0))]
    assert ours and all(N_SEEDS not in shape for shape in ours), ours  # N_ROWS positions, no seed axis
    theirs = [eqn.invars[1].aval.shape for eqn in scatters(jax.vmap(flashbax_add(CAPACITY)), state, rows(N_SEEDS, 0))]
    assert theirs and all(N_SEEDS in shape for shape in theirs), theirs  # what the shared write replaces


def test_a_write_takes_the_first_seeds_index_and_broadcasts_an_unbatched_ring():
    write = lockstep(lambda ring, row, index, lead: jax.lax.dynamic_update_index_in_dim(ring, row, index, lead))
    ring, row = jnp.zeros((5,)), jnp.arange(1.0, N_SEEDS + 1)[:, None]
    out = jax.vmap(write, in_axes=(None, 0, 0))(ring, row, jnp.array([2, 2, 2]))
    np.testing.assert_array_equal(out, np.eye(5)[[2, 2, 2]] * np.arange(1, N_SEEDS + 1)[:, None])
    nested = jax.vmap(jax.vmap(write, in_axes=(None, 0, 0)), in_axes=(None, 0, 0))
    out = nested(ring, jnp.ones((2, N_SEEDS, 1)), jnp.array([[1, 1, 1], [4, 4, 4]]))
    np.testing.assert_array_equal(out[:, 0], np.eye(5)[[1, 4]])
    assert scatters(nested, ring, jnp.ones((2, N_SEEDS, 1)), jnp.array([[1, 1, 1], [4, 4, 4]]))  # 1 and 4 differ
    sharing = jax.vmap(jax.vmap(write, in_axes=(None, 0, 0)), in_axes=(None, 0, None))  # one index for all
    args = ring, jnp.ones((2, N_SEEDS, 1)), jnp.full((N_SEEDS,), 3)
    np.testing.assert_array_equal(sharing(*args)[:, 0], np.eye(5)[[3, 3]])
    assert not scatters(sharing, *args)


def test_sequence_append_writes_what_flashbax_writes_for_every_seed():
    replay = SequenceReplay(capacity=8, n_envs=2, n_sequences=1, length=2)  # lines of 4 steps
    buffer = replay._buffer
    ours = theirs = jax.vmap(lambda _: buffer.init(PackedRows.of({"x": jnp.zeros(())})))(jnp.arange(N_SEEDS))

    def packed_add(state, step):  # flashbax's own add of the step, packed as the replay packs it
        return buffer.add(state, jax.tree.map(lambda x: x[:, None], state.experience.like(step)))

    flashbax_append = jax.jit(jax.vmap(packed_add))
    for tick in range(6):  # wraps the lines
        step = {"x": 10.0 * tick + jnp.arange(N_SEEDS * 2, dtype=jnp.float32).reshape(N_SEEDS, 2)}
        ours, theirs = jax.jit(jax.vmap(replay.append))(ours, step), flashbax_append(theirs, step)
    assert not scatters(jax.vmap(replay.append), ours, step)
    for mine, reference in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
        np.testing.assert_array_equal(mine, reference)


def test_row_writes_land_in_every_seeds_slot_of_the_tick():
    n_envs, size = 2, 6
    tick = Rows(*(jnp.zeros((n_envs,)),) * 7)
    replay = jax.vmap(lambda _: empty_replay(tick, size))(jnp.arange(N_SEEDS))
    new = jax.tree.map(lambda _: jnp.arange(1.0, N_SEEDS * n_envs + 1).reshape(N_SEEDS, n_envs), replay)
    out = jax.vmap(write_rows)(replay, new, jnp.full((N_SEEDS,), 7))  # slot 7 % 6 = 1
    # one slice update a leaf, but the entries' ring, which keeps the per-seed scatter of its write-back
    ticks = jnp.full((N_SEEDS,), 7)
    assert len(scatters(jax.vmap(write_rows), replay, new, ticks)) == 1
    assert not scatters(jax.vmap(write_rows), replay.replace(entry=None), new.replace(entry=None), ticks)
    expected = np.zeros((N_SEEDS, n_envs, size))
    expected[:, :, 1] = np.asarray(new.obs)
    for leaf in jax.tree.leaves(out):
        np.testing.assert_array_equal(leaf, expected)


def test_a_state_whose_seeds_stand_at_different_replay_positions_is_refused():
    agent = SAC("Pendulum-v1", n_envs=2, buffer_size=64, batch_size=8, learning_starts=4)
    state, _ = agent.train(seed=[0, 1], n_timesteps=0)
    index = state.collector_state.buffer_state.current_index
    assert shared_counters(state)["timestep"] == 0
    moved = state.replace(
        collector_state=state.collector_state.replace(
            buffer_state=state.collector_state.buffer_state.replace(current_index=index.at[1].set(2))
        )
    )
    with pytest.raises(ValueError, match="replay position"):
        shared_counters(moved)
