"""A replay is allocated for what its run writes, and a continued run grows it in place.

The contract: whatever a run allocates, its results are those of the full `buffer_size`,
bit for bit, in one call or split, because a ring that never fills samples only among the
rows written. Each check trains the same legs twice: with the full allocation
(`REPLAY_FLOOR` above `buffer_size`) and with a small floor, so the second leg's replay is
grown from the first's. TD-MPC2's replay is the sequence replay a recurrent SAC's is.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import DQN, SAC, DreamerV3
from ajax.agents import base
from ajax.buffers.growth import capacity_axis, grown, held_capacity, is_replay
from ajax.checkpoint import restore_into, save_checkpoint
from ajax.networks.memory import MemoryConfig
from ajax.sweep import sweep

# Two programs of different replay shapes, compared bit for bit: compiled with XLA's fusion emitters.
pytestmark = pytest.mark.exact

FULL, SMALL_FLOOR = 10**9, 64


def test_replay_paths_are_the_buffer_and_dagger_dataset_also_behind_a_checkpoints_class_name():
    assert is_replay("collector_state.buffer_state.experience.obs")
    assert is_replay("SACState.collector_state.buffer_state.current_index")
    assert is_replay("DAggerState.dataset.experience.label")
    assert not is_replay("collector_state.env_state.obs")
    assert not is_replay("actor_state.params.buffer_state")


def test_the_capacity_axis_is_the_one_axis_that_differs():
    assert capacity_axis((2, 1, 300, 3), (2, 1, 600, 3)) == 2
    assert capacity_axis((2, 1, 300, 3), (2, 1, 300, 3)) is None
    assert capacity_axis((2, 1, 300, 3), (2, 2, 600, 3)) is None
    assert capacity_axis((2, 300), (2, 1, 300)) is None


def test_growing_pads_the_replay_with_empty_slots_and_leaves_the_rest():
    state = {
        "collector_state": {"buffer_state": {"obs": jnp.ones((2, 4, 3)), "index": jnp.array([4, 4])}},
        "params": jnp.ones((5,)),
    }
    skeleton = {
        "collector_state": {"buffer_state": {"obs": jnp.zeros((2, 10, 3)), "index": jnp.zeros((2,), int)}},
        "params": jnp.zeros((5,)),
    }
    assert held_capacity(state, skeleton, 20) == 8  # 4 of 10 slots, where the skeleton's 10 are 20 transitions
    out = grown(state, skeleton)
    obs = out["collector_state"]["buffer_state"]["obs"]
    assert obs.shape == (2, 10, 3)
    np.testing.assert_array_equal(obs[:, :4], 1.0)
    np.testing.assert_array_equal(obs[:, 4:], 0.0)
    np.testing.assert_array_equal(out["collector_state"]["buffer_state"]["index"], [4, 4])
    assert held_capacity(out, skeleton, 20) is None


def assert_same(full, small) -> None:
    """Equal leaf by leaf, each replay compared on the slots the smaller one has."""
    ours = {jax.tree_util.keystr(path): leaf for path, leaf in jax.tree.leaves_with_path(small)}
    for path, leaf in jax.tree.leaves_with_path(full):
        x, y = np.asarray(leaf), np.asarray(ours[jax.tree_util.keystr(path)])
        axis = capacity_axis(x.shape, y.shape)
        if axis is not None:
            x = np.take(x, np.arange(y.shape[axis]), axis=axis)
        np.testing.assert_array_equal(x, y, err_msg=jax.tree_util.keystr(path))


def replay_slots(state) -> int:
    """The largest replay array's shape, its capacity among its axes."""
    return max((leaf.shape for leaf in jax.tree.leaves(state.collector_state.buffer_state)), key=len)


def two_legs(monkeypatch, floor, make, first, second, seeds=(0, 1)):
    monkeypatch.setattr(base, "REPLAY_FLOOR", floor)
    agent = make()
    state, _ = agent.train(seed=list(seeds), n_timesteps=first)
    kept = jax.tree.map(np.array, state)  # a copy: the second call takes the state's buffers over
    return agent, kept, agent.train(initial_state=state, n_timesteps=second)[0]


def small_dqn() -> DQN:
    return DQN(
        "CartPole-v1", architecture=("16", "relu"), learning_starts=50, batch_size=16, n_envs=2, buffer_size=5000
    )


@pytest.fixture(scope="module")
def dqn_legs():
    """DQN's two legs of 300 steps, fully allocated and grown; the grown run's first leg."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        _, _, full = two_legs(monkeypatch, FULL, small_dqn, 300, 300)
        agent, first, small = two_legs(monkeypatch, SMALL_FLOOR, small_dqn, 300, 300)
    return full, agent, first, small


def test_a_short_run_allocates_what_it_writes_and_grows_when_continued(dqn_legs):
    full, _, first, small = dqn_legs
    assert replay_slots(full)[2] == 5000
    # The first leg writes 300 transitions (and may start a tick at its horizon): 300 + 2 + 1, in pairs.
    assert replay_slots(first)[2] == 512  # the floor: 256 rows for each of the 2 env copies
    assert replay_slots(small)[2] == 604  # grown for the second leg: 600 + 2 + 1, rounded to pairs
    assert_same(full, small)


def test_a_ring_that_has_filled_cannot_grow_and_names_the_buffer_size_to_keep(dqn_legs, monkeypatch):
    monkeypatch.setattr(base, "REPLAY_FLOOR", SMALL_FLOOR)
    made = DQN("CartPole-v1", architecture=("16", "relu"), learning_starts=50, batch_size=16, n_envs=2, buffer_size=200)
    state, _ = made.train(seed=[0, 1], n_timesteps=300)
    with pytest.raises(ValueError, match=r"holds 200 transitions and has filled them by timestep 300.*buffer_size=200"):
        small_dqn().train(initial_state=state, n_timesteps=300)


def test_a_checkpoint_restores_its_replay_as_saved_and_continues_as_one_run(dqn_legs, tmp_path, monkeypatch):
    full, agent, first, _ = dqn_legs
    path = save_checkpoint(first, tmp_path / "run.ckpt", agent)
    monkeypatch.setattr(base, "REPLAY_FLOOR", SMALL_FLOOR)
    skeleton, _ = agent.train(seed=[0, 1], n_timesteps=0, total_timesteps=600)  # allocated for 600
    restored = restore_into(skeleton, path, agent)
    assert replay_slots(restored)[2] == 512
    continued, _ = agent.train(initial_state=restored, n_timesteps=300)
    assert_same(full, continued)


def recurrent_sac() -> SAC:
    return SAC(
        "Pendulum-v1",
        actor_architecture=("16", "relu"),
        critic_architecture=("16", "relu"),
        learning_starts=50,
        batch_size=16,
        buffer_size=4000,
        memory=MemoryConfig(kind="gru", hidden_size=8),
        n_envs=2,
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "make, first, second",
    [
        (
            lambda: DreamerV3("CartPole-v1", model_size="1m", batch_size=2, batch_length=8, train_ratio=8, n_envs=2),
            300,
            300,
        ),
        (recurrent_sac, 500, 500),
    ],
    ids=["DreamerV3 rows", "sequence replay"],
)
def test_every_replay_kind_grows_to_the_full_allocations_result(monkeypatch, make, first, second):
    _, _, full = two_legs(monkeypatch, FULL, make, first, second, seeds=(0,))
    _, start, small = two_legs(monkeypatch, SMALL_FLOOR, make, first, second, seeds=(0,))
    assert replay_slots(start) != replay_slots(small)  # it grew
    assert_same(full, small)


@pytest.mark.slow
def test_a_continued_sweep_grows_its_replay_to_the_full_allocations_result(monkeypatch):
    settings = dict(actor_architecture=("16", "relu"), critic_architecture=("16", "relu"), learning_starts=50)

    def legs(floor):
        monkeypatch.setattr(base, "REPLAY_FLOOR", floor)
        grid = {"gamma": [0.9, 0.99]}
        state, _, _ = sweep(SAC, "Pendulum-v1", grid=grid, seed=[0], n_timesteps=300, batch_size=16, **settings)
        return state, sweep(
            SAC, "Pendulum-v1", grid=grid, seed=[0], n_timesteps=300, initial_state=state, batch_size=16, **settings
        )[0]

    _, full = legs(FULL)
    start, small = legs(SMALL_FLOOR)
    assert replay_slots(start)[3] == 302 and replay_slots(small)[3] == 602
    assert_same(full, small)
