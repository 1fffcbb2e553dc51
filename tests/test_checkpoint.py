"""Checkpoints: the whole state round-trips, a resumed run from disk equals one call, a failed
write leaves the last checkpoint whole, and every mismatch names its field."""

import dataclasses
import os

import jax
import numpy as np
import pytest
from flax import struct

from ajax import SAC
from ajax.agents.SAC.state import SoftACState
from ajax.checkpoint import restore_into, save_checkpoint
from ajax.state import BaseAgentState, LoopTrainState

SMALL = ("16", "relu")
TOTAL, HALF = 512, 256


def sac():
    return SAC(
        "Pendulum-v1",
        n_envs=2,
        learning_starts=100,
        batch_size=32,
        buffer_size=1000,
        actor_architecture=SMALL,
        critic_architecture=SMALL,
    )


def assert_same(a, b):
    leaves_a, leaves_b = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(leaves_a) == len(leaves_b)
    for x, y in zip(leaves_a, leaves_b, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.fixture(scope="module")
def halves(tmp_path_factory):
    first, _ = sac().train(seed=[0, 1], n_timesteps=HALF, total_timesteps=TOTAL)
    path = save_checkpoint(first, tmp_path_factory.mktemp("ckpt") / "run" / "state.ckpt")
    return first, path


def test_the_whole_state_round_trips(halves):
    first, path = halves
    skeleton, _ = sac().train(seed=[0, 1], n_timesteps=0)
    restored = restore_into(skeleton, path)
    assert type(restored) is SoftACState
    assert_same(first, restored)  # every seed, the replay, the optimisers, the keys, the counters


def test_a_run_resumed_from_disk_on_a_fresh_agent_equals_one_call(halves):
    _, path = halves
    one_call, _ = sac().train(seed=[0, 1], n_timesteps=TOTAL)
    agent = sac()
    skeleton, _ = agent.train(seed=[0, 1], n_timesteps=0)
    resumed, _ = agent.train(initial_state=restore_into(skeleton, path), n_timesteps=HALF, total_timesteps=TOTAL)
    assert_same(one_call, resumed)


def test_a_failed_write_leaves_the_last_checkpoint_whole(halves, tmp_path, monkeypatch):
    first, _ = halves
    path = save_checkpoint(first, tmp_path / "state.ckpt")
    before = path.read_bytes()

    def crash(*args):
        raise OSError("killed mid-rename")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="killed"):
        save_checkpoint(jax.tree.map(lambda x: x, first), path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["state.ckpt"]  # no temporary file left behind


@struct.dataclass
class Renamed(BaseAgentState):
    """SoftACState with its `alpha` field renamed `temperature`."""

    temperature: LoopTrainState = None


@struct.dataclass
class Migrated(BaseAgentState):
    """The same rename, declared: `alpha` removed, `temperature` added."""

    temperature: LoopTrainState = None
    removed_fields = frozenset({"alpha"})
    added_fields = frozenset({"temperature"})


def renamed_skeleton(cls, state):
    fields = {field.name: getattr(state, field.name) for field in dataclasses.fields(BaseAgentState)}
    return cls(**fields, temperature=state.alpha)


def test_a_renamed_field_fails_with_its_name_unless_declared(halves):
    first, path = halves
    with pytest.raises(ValueError, match=r"field Renamed\.alpha is not a field of Renamed.*removed_fields"):
        restore_into(renamed_skeleton(Renamed, first), path)
    restored = restore_into(renamed_skeleton(Migrated, first), path)
    assert np.isnan(np.asarray(restored.temperature.params["log_alpha"])).all()  # added: restored as NaN
    assert_same(first.actor_state, restored.actor_state)


def test_a_skeleton_of_another_shape_fails_naming_the_field(halves):
    _, path = halves
    three_seeds, _ = sac().train(seed=[0, 1, 2], n_timesteps=0)
    with pytest.raises(ValueError, match=r"SoftACState\.rng is uint32\[2, 2\], the skeleton's uint32\[3, 2\]"):
        restore_into(three_seeds, path)


def test_a_file_that_is_not_a_checkpoint_is_refused(halves, tmp_path):
    first, _ = halves
    bad = tmp_path / "notes.ckpt"
    bad.write_bytes(b"\x80")  # an empty msgpack map
    with pytest.raises(ValueError, match="not an Ajax checkpoint"):
        restore_into(first, bad)


def test_a_restored_state_evaluates_as_the_saved_one(halves):
    first, path = halves
    agent = sac()
    skeleton, _ = agent.train(seed=[0, 1], n_timesteps=0)
    saved = agent.evaluate(first, num_episode_test=2, seed=3)
    restored = agent.evaluate(restore_into(skeleton, path), num_episode_test=2, seed=3)
    assert saved["Eval/episodic mean reward"].shape == (2,)  # one return per seed
    for name in saved:
        np.testing.assert_array_equal(saved[name], restored[name], err_msg=name)
