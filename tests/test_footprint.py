"""A run's state is sized from its shapes and refused before allocation when it cannot fit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from ajax import DreamerV3, footprint
from ajax.agents.base import REPLAY_FLOOR
from ajax.footprint import check_fits, leaf_bytes


def test_leaves_are_sized_from_their_shapes_largest_first():
    tree = {"replay": jax.ShapeDtypeStruct((3, 1000, 4), jnp.float32), "step": jax.ShapeDtypeStruct((3,), jnp.int32)}
    assert leaf_bytes(tree) == [("replay", 48_000), ("step", 12)]


def test_a_state_that_fits_passes_and_one_that_does_not_names_its_size_and_what_to_lower():
    tree = {"buffer": jax.ShapeDtypeStruct((2, 1_000_000), jnp.float32)}  # 8 MB
    check_fits(tree, "SAC", 2, available=100_000_000)
    with pytest.raises(MemoryError, match=r"SAC's state for 2 seed\(s\) would take 0.0 GB.*buffer 0.0 GB.*buffer_size"):
        check_fits(tree, "SAC", 2, available=5_000_000)


def test_dreamerv3_at_its_default_replay_is_refused_before_allocating_when_memory_is_short(monkeypatch):
    """A million rows of DreamerV3's replay hold 2.6 GB a seed (a run to a million steps fills
    them): refused by name, not killed midway."""
    monkeypatch.setattr(footprint, "available_bytes", lambda device=None: 4_000_000_000)
    with pytest.raises(
        MemoryError, match=r"DreamerV3's state for 2 seed\(s\) would take 5\.\d GB.*buffer_state\.entry"
    ):
        DreamerV3("CartPole-v1").train(seed=[0, 1], n_timesteps=0, total_timesteps=1_000_000)


def test_a_short_run_at_the_default_replay_allocates_what_it_writes_and_fits():
    """The same agent and memory, a run to 10,000 steps: its replay is allocated for those, so it fits."""
    agent = DreamerV3("CartPole-v1")
    run, _ = agent.run_settings(0, 10_000, 10, None, None)
    skeleton = agent._skeleton_at(2)(run)
    n_envs = agent.env_args.n_envs
    assert skeleton.collector_state.buffer_state.is_first.shape == (2, n_envs, REPLAY_FLOOR // n_envs)
    check_fits(skeleton, "DreamerV3", 2, available=4_000_000_000)
