"""UDRL's state and static settings: the episode buffer, the commands being followed and their statistics."""

from __future__ import annotations

from dataclasses import dataclass

import jax
from flax import struct

from ajax.state import BaseAgentState


@struct.dataclass
class EpisodeBuffer:
    """The most recent episodes, whole: `buffer_size` slots of `max_episode_steps` steps, a ring per env.

    Env e owns the slots e, e + n_envs, e + 2 n_envs, ... and writes its k-th episode into
    the (k mod its ring's size)-th of them, so no env writes into a slot another env is
    filling, and each env's ring drops its own oldest episode. A slot's `length` is 0 until
    the episode in it has finished.
    """

    obs: jax.Array  # (episodes, steps, obs_dim)
    action: jax.Array  # (episodes, steps) discrete, (episodes, steps, action_dim) continuous
    return_before: jax.Array  # (episodes, steps): sum_{k < t} r_k, the return collected before step t
    length: jax.Array  # (episodes,) int32
    episode_return: jax.Array  # (episodes,): the whole episode's return
    step: jax.Array  # (n_envs,) int32: the step of each env's current episode
    episode: jax.Array  # (n_envs,) int32: how many episodes each env finished before its current one


@struct.dataclass
class CommandStatistics:
    """The top-K finished episodes as Algorithm 2 of Srivastava et al. reads them.

    Before any episode has finished: return 0 with no spread, horizon 1.
    """

    return_mean: jax.Array
    return_std: jax.Array
    horizon: jax.Array  # their mean length


@struct.dataclass
class UDRLState(BaseAgentState):
    """The shared state (no critic) plus the episode buffer and the commands.

    `command` is each env's current command (desired return, desired horizon), updated at
    every step of its episode and drawn afresh at every episode start.
    """

    episodes: EpisodeBuffer = None
    command: jax.Array = None  # (n_envs, 2)
    command_statistics: CommandStatistics = None


@dataclass(frozen=True)
class UDRLConfig:
    n_steps: int
    n_updates_per_iter: int
    batch_size: int
    buffer_size: int
    top_k: int
    return_scale: float
    horizon_scale: float
