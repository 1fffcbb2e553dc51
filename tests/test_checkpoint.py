"""Checkpoints: the whole state round-trips, a resumed run from disk equals one call, a failed
write leaves the last checkpoint whole, a damaged or foreign file is refused naming the path and
the reason, and every mismatch names its field."""

import dataclasses
import os

import jax
import numpy as np
import pytest
from flax import struct

from ajax import SAC, TD3
from ajax.agents.SAC.state import SoftACState
from ajax.checkpoint import CheckpointError, restore_into, save_checkpoint
from ajax.state import BaseAgentState, LoopTrainState

SMALL = ("16", "relu")
TOTAL, HALF = 512, 256
COMPILES: list[str] = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, _seconds, **_: COMPILES.append(event) if event.endswith("backend_compile_duration") else None
)


def sac(**overrides):
    settings = {"actor_architecture": SMALL, "critic_architecture": SMALL, **overrides}
    return SAC("Pendulum-v1", n_envs=2, learning_starts=100, batch_size=32, buffer_size=1000, **settings)


def assert_same(a, b):
    leaves_a, leaves_b = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(leaves_a) == len(leaves_b)
    for x, y in zip(leaves_a, leaves_b, strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.fixture(scope="module")
def halves(tmp_path_factory):
    agent = sac()
    first, _ = agent.train(seed=[0, 1], n_timesteps=HALF, total_timesteps=TOTAL)
    path = save_checkpoint(first, tmp_path_factory.mktemp("ckpt") / "run" / "state.ckpt", agent=agent)
    return first, path


def test_the_whole_state_round_trips(halves):
    first, path = halves
    skeleton, _ = sac().train(seed=[0, 1], n_timesteps=0)
    restored = restore_into(skeleton, path)
    assert type(restored) is SoftACState
    assert_same(first, restored)  # every seed, the replay, the optimisers, the keys, the counters


def test_a_replay_saved_a_field_to_an_array_restores_packed(halves, tmp_path):
    """Checkpoints written before replays packed their rows keep one array per field."""
    first, _ = halves
    buffer = first.collector_state.buffer_state
    by_field = buffer.replace(experience=buffer.experience.unpacked())
    old = first.replace(collector_state=first.collector_state.replace(buffer_state=by_field))
    path = save_checkpoint(old, tmp_path / "old.ckpt")
    skeleton, _ = sac().train(seed=[0, 1], n_timesteps=0)
    assert_same(first, restore_into(skeleton, path))


def test_a_run_resumed_from_disk_on_a_fresh_agent_equals_one_call(halves):
    _, path = halves
    one_call, _ = sac().train(seed=[0, 1], n_timesteps=TOTAL)
    agent = sac()
    skeleton, _ = agent.train(seed=[0, 1], n_timesteps=0)
    resumed, _ = agent.train(initial_state=restore_into(skeleton, path), n_timesteps=HALF, total_timesteps=TOTAL)
    assert_same(one_call, resumed)


def test_a_state_read_from_disk_runs_the_program_a_fresh_state_compiled(halves):
    """Counters a library starts from a Python 0 are weakly typed in a fresh state and strong on
    disk; were that part of the program's key, every resume from disk would compile again."""
    _, path = halves
    agent = sac()
    agent.train(initial_state=agent.train(seed=[0, 1], n_timesteps=0)[0], n_timesteps=HALF, total_timesteps=TOTAL)
    restored = restore_into(agent.train(seed=[0, 1], n_timesteps=0)[0], path, agent=agent)
    COMPILES.clear()
    agent.train(initial_state=restored, n_timesteps=HALF, total_timesteps=TOTAL)
    assert COMPILES == []


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
    """The same rename, declared: `alpha` removed, `temperature` added (and gSDE's unused noise dropped)."""

    temperature: LoopTrainState = None
    removed_fields = frozenset({"alpha", "exploration_noise"})
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


def test_a_skeleton_of_other_seeds_is_refused_before_any_array_is_read(halves):
    _, path = halves
    three_seeds, _ = sac().train(seed=[0, 1, 2], n_timesteps=0)
    with pytest.raises(CheckpointError, match="it holds the runs of 2 seeds, the skeleton 3 seeds"):
        restore_into(three_seeds, path)


def test_a_skeleton_of_another_shape_fails_naming_the_field_and_the_setting_that_differs(halves):
    _, path = halves
    wider = sac(actor_architecture=("256", "relu", "256", "relu"), critic_architecture=("256", "relu", "256", "relu"))
    skeleton, _ = wider.train(seed=[0, 1], n_timesteps=0)
    with pytest.raises(ValueError, match=r"Checkpoint field SoftACState\..*the skeleton's float32\[2, .*256"):
        restore_into(skeleton, path)
    settings = r'actor_architecture: \["16", "relu"\] saved, \["256", "relu", "256", "relu"\] here; critic_'
    with pytest.raises(CheckpointError, match=r"into this SAC: it was built with other settings .*\(" + settings):
        restore_into(skeleton, path, agent=wider)


def test_a_changed_number_restores(halves):
    """A learning rate changed for the continuation is not a different agent: the arrays fit."""
    first, path = halves
    slower = sac(actor_learning_rate=1e-4)
    skeleton, _ = slower.train(seed=[0, 1], n_timesteps=0)
    assert_same(first.actor_state.params, restore_into(skeleton, path, agent=slower).actor_state.params)


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda data: None, "no such file"),
        (lambda data: b"", "the file is empty"),
        (lambda data: b"\x80", "not an Ajax checkpoint"),  # an empty msgpack map, as format 1 began
        (lambda data: data[:30], "header is damaged or cut short"),
        (lambda data: data[: len(data) // 2], r"truncated \([\d,]+ of its [\d,]+ bytes of arrays\)"),
        (lambda data: data[:-100] + bytes([data[-100] ^ 1]) + data[-99:], "corrupted"),  # one flipped bit
        (lambda data: data + b"\0", "corrupted"),
    ],
    ids=["missing", "empty", "not-ajax", "header-cut", "truncated", "flipped-bit", "trailing-byte"],
)
def test_a_damaged_file_is_refused_naming_the_path_and_the_reason(halves, tmp_path, damage, reason):
    first, path = halves
    damaged = tmp_path / "damaged.ckpt"
    data = damage(path.read_bytes())
    if data is not None:
        damaged.write_bytes(data)
    with pytest.raises(CheckpointError, match=f"Cannot restore {damaged}: .*{reason}"):
        restore_into(first, damaged)


def test_another_agents_checkpoint_is_refused_saying_who_saved_it(halves):
    _, path = halves
    td3 = TD3("Pendulum-v1", n_envs=2, buffer_size=1000, actor_architecture=SMALL, critic_architecture=SMALL)
    skeleton, _ = td3.train(seed=[0, 1], n_timesteps=0)
    # Told the agent, the header alone decides; without it the arrays do not fit the skeleton.
    with pytest.raises(CheckpointError, match="into TD3 on Pendulum-v1: it was saved by SAC on Pendulum-v1"):
        restore_into(skeleton, path, agent=td3)
    with pytest.raises(CheckpointError, match="holds a SoftACState saved by SAC on Pendulum-v1, the skeleton is a"):
        restore_into(skeleton, path)


def test_a_restored_state_evaluates_as_the_saved_one(halves):
    first, path = halves
    agent = sac()
    skeleton, _ = agent.train(seed=[0, 1], n_timesteps=0)
    saved = agent.evaluate(first, num_episode_test=2, seed=3)
    restored = agent.evaluate(restore_into(skeleton, path), num_episode_test=2, seed=3)
    assert saved["Eval/episodic mean reward"].shape == (2,)  # one return per seed
    for name in saved:
        np.testing.assert_array_equal(saved[name], restored[name], err_msg=name)


@dataclasses.dataclass
class Physics:
    """A field static by registration, not by field metadata, as MJX keeps its constraint counts."""

    qpos: jax.Array
    n_constraints: int = dataclasses.field(default=0)


jax.tree_util.register_dataclass(Physics, data_fields=["qpos"], meta_fields=["n_constraints"])


def test_a_field_static_by_registration_restores_as_the_skeleton_holds_it(tmp_path):
    saved = {"env": Physics(np.arange(3.0), 2), "step": np.int32(7)}
    path = save_checkpoint(saved, tmp_path / "physics.ckpt")
    skeleton = {"env": Physics(np.zeros(3), 2), "step": np.int32(0)}
    restored = restore_into(skeleton, path)
    assert jax.tree.structure(restored) == jax.tree.structure(skeleton)
    assert restored["env"].n_constraints == 2 and isinstance(restored["env"].n_constraints, int)
    np.testing.assert_array_equal(restored["env"].qpos, np.arange(3.0))
    assert int(restored["step"]) == 7
