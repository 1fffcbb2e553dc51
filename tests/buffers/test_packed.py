"""Packed replay rows: every field comes back as it went in, one gather a dtype per sample."""

from __future__ import annotations

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import DQN
from ajax.buffers.packed import Layout, PackedRows
from ajax.buffers.replay import ItemReplay, ReplayBuffer, add_items
from ajax.buffers.sequence import SequenceReplay, SequenceStep
from ajax.environments.interaction import Transition


def transition(lead: tuple[int, ...] = (), offset: float = 0.0) -> Transition:
    """A row of every kind a replay keeps: float vectors, a scalar reward, two flags, an int action
    and a uint8 image; values distinct across rows."""
    count = int(np.prod(lead, dtype=int))
    index = (offset + jnp.arange(count, dtype=jnp.float32)).reshape(lead)
    return Transition(
        obs={
            "vector": index[..., None] + jnp.arange(3.0),
            "image": (index[..., None, None] % 7 + 1).astype(jnp.uint8) * jnp.ones((2, 2), jnp.uint8),
        },
        action=index.astype(jnp.int32) % 4,
        reward=-index,
        next_obs={"vector": index[..., None] - jnp.arange(3.0), "image": jnp.zeros((*lead, 2, 2), jnp.uint8)},
        terminated=index % 2 == 0,
        truncated=index % 3 == 0,
    )


def test_fields_are_grouped_by_dtype_and_flags_join_the_floats():
    layout = Layout.of(transition())
    widths = {}
    for slot in layout.slots:
        widths[slot.group] = max(widths.get(slot.group, 0), slot.start + slot.size)
    assert widths == {"float32": 3 + 1 + 3 + 2, "uint8": 4 + 4, "int32": 1}
    alone = Layout.of({"board": jnp.zeros((4,), bool), "done": jnp.zeros((), bool)})
    assert {slot.group for slot in alone.slots} == {"bool"}  # no float array to join: kept as bools


def test_rows_round_trip_with_any_leading_axes():
    rows = transition((2, 5))
    packed = PackedRows.of(transition()).like(rows)
    assert {group: array.shape for group, array in packed.groups.items()} == {
        "float32": (2, 5, 9),
        "uint8": (2, 5, 8),
        "int32": (2, 5, 1),
    }
    for mine, given in zip(jax.tree.leaves(packed.unpacked()), jax.tree.leaves(rows), strict=True):
        assert mine.dtype == given.dtype and mine.shape == given.shape
        np.testing.assert_array_equal(mine, given)
    np.testing.assert_array_equal(packed.reward, rows.reward)  # a field reads as the row's own
    numpy_rows = jax.tree.map(np.asarray, packed).unpacked()  # a saved state, as numpy, unpacks alike
    np.testing.assert_array_equal(numpy_rows.obs["image"], rows.obs["image"])


def test_rows_of_another_structure_are_refused():
    packed = PackedRows.of(transition())
    with pytest.raises(ValueError, match="do not fit a replay"):
        packed.like({"obs": jnp.zeros((3,))})
    with pytest.raises(AttributeError):
        packed.not_a_field  # noqa: B018


def gathers(fn, *args) -> list:
    found, todo = [], [jax.make_jaxpr(fn)(*args).jaxpr]
    while todo:
        jaxpr = todo.pop()
        for eqn in jaxpr.eqns:
            found.append(eqn.primitive.name)
            todo.extend(jax.extend.core.jaxprs_in_params(eqn.params))
    return [name for name in found if name == "gather"]


def test_a_sample_draws_whole_rows_that_were_written_with_one_gather_a_dtype():
    replay = ItemReplay(capacity=16, batch_size=8)
    state = replay.init(transition())
    for tick in range(3):
        state = jax.jit(add_items)(state, transition((4,), offset=4.0 * tick))
    batch = jax.jit(replay.sample)(state, jax.random.key(0))
    written = transition((12,))
    for row in range(8):
        i = int(-batch.reward[row])  # the reward names the written row
        assert 0 <= i < 12
        for mine, given in zip(jax.tree.leaves(batch), jax.tree.leaves(written), strict=True):
            np.testing.assert_array_equal(mine[row], given[i])
    assert len(gathers(replay.sample, state, jax.random.key(0))) == 3  # float32, uint8, int32: not one a field


def test_a_sequence_sample_draws_consecutive_steps_with_one_gather_a_dtype():
    replay = SequenceReplay(capacity=16, n_envs=2, n_sequences=3, length=2)
    flag = jnp.zeros((), bool)
    state = replay._buffer.init(PackedRows.of(SequenceStep(transition(), flag)))
    for tick in range(5):
        step = SequenceStep(transition((2,), offset=2.0 * tick), jnp.full((2,), tick == 0))
        state = jax.jit(replay.append)(state, step)
    windows = jax.jit(replay.sample)(state, jax.random.key(0))
    assert windows.transition.reward.shape == (2, 3)  # time-major
    first, second = -windows.transition.reward  # each env's steps are 2 apart: rows 2t + env
    np.testing.assert_array_equal(second - first, 2.0)
    np.testing.assert_array_equal(windows.episode_start[0], first < 2)
    np.testing.assert_array_equal(windows.transition.action, (-windows.transition.reward).astype(jnp.int32) % 4)
    assert len(gathers(replay.sample, state, jax.random.key(0))) == 3


def test_a_field_exact_in_float_joins_the_floats_and_comes_back_in_its_dtype():
    rows = transition((5,))
    packed = PackedRows.of(transition(), exact_in_float=frozenset({"action"})).like(rows)
    assert set(packed.groups) == {"float32", "uint8"}
    assert packed.action.dtype == jnp.int32
    np.testing.assert_array_equal(packed.action, rows.action)


def test_a_discrete_agents_replay_samples_with_one_gather():
    replay = ReplayBuffer(capacity=64, batch_size=8)
    state = replay.init(DQN("CartPole-v1").env_args)
    assert set(state.experience.groups) == {"float32"}  # the action's index among the floats
    assert len(gathers(replay.sample, state, jax.random.key(0))) == 1
