"""The episode buffer: whole episodes written in as a segment of acting ends, relabelled steps sampled out.

Acting records, for every step of every env, where the step belongs (its env's episode
count and step) and the return collected before it. After the segment, scatters write
every step into its slot and every finished episode's length and return into its slot's:
nothing is written into the buffer step by step inside the acting loop.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from ajax.agents.UDRL.core import hindsight_command
from ajax.agents.UDRL.state import EpisodeBuffer
from ajax.state import EnvironmentConfig


@struct.dataclass
class SegmentStep:
    """One acting step of every env (leading axis n_envs), or a segment of them (time first)."""

    obs: jax.Array
    action: jax.Array
    return_before: jax.Array
    episode: jax.Array  # the env's episode count: which of its ring's slots the step goes to
    step: jax.Array  # the step within that episode
    done: jax.Array
    episode_return: jax.Array  # the return so far, the episode's return where `done`


def empty_episodes(env_args: EnvironmentConfig, buffer_size: int) -> EpisodeBuffer:
    steps = env_args.max_episode_steps
    action_shape = (env_args.action_dim,) if env_args.continuous else ()
    return EpisodeBuffer(
        obs=env_args.observation_zeros(buffer_size, steps),
        action=jnp.zeros((buffer_size, steps, *action_shape), jnp.float32 if env_args.continuous else jnp.int32),
        return_before=jnp.zeros((buffer_size, steps), jnp.float32),
        length=jnp.zeros((buffer_size,), jnp.int32),
        episode_return=jnp.zeros((buffer_size,), jnp.float32),
        step=jnp.zeros((env_args.n_envs,), jnp.int32),
        episode=jnp.zeros((env_args.n_envs,), jnp.int32),
    )


def advance(buffer: EpisodeBuffer, done: jax.Array) -> EpisodeBuffer:
    """Each env's place after a step: the next step of its episode, or the first of its next one."""
    return buffer.replace(step=jnp.where(done, 0, buffer.step + 1), episode=buffer.episode + done)


def write_segment(buffer: EpisodeBuffer, segment: SegmentStep) -> EpisodeBuffer:
    """Write a segment's steps into their slots and its finished episodes' lengths and returns.

    `buffer` already holds each env's place after the segment. An env that finished more
    episodes in the segment than its ring holds overwrote its oldest ones: their steps are
    dropped rather than scattered onto the same slots.
    """
    n_slots, n_envs = buffer.length.shape[0], buffer.episode.shape[0]
    env = jnp.arange(n_envs)
    ring = (n_slots - env + n_envs - 1) // n_envs  # env e's slots: e, e + n_envs, ... below n_slots

    def slot(episode: jax.Array) -> jax.Array:
        return env + n_envs * (episode % ring)

    kept = segment.episode > buffer.episode - ring
    into = jnp.where(kept, slot(segment.episode), n_slots)  # out of range: dropped
    finished = jnp.where(kept & segment.done, slot(segment.episode), n_slots)
    filling = slot(buffer.episode)  # each env's current episode
    return buffer.replace(
        obs=jax.tree.map(lambda kept, new: kept.at[into, segment.step].set(new, mode="drop"), buffer.obs, segment.obs),
        action=buffer.action.at[into, segment.step].set(segment.action, mode="drop"),
        return_before=buffer.return_before.at[into, segment.step].set(segment.return_before, mode="drop"),
        length=buffer.length.at[finished].set(segment.step + 1, mode="drop").at[filling].set(0),
        episode_return=buffer.episode_return.at[finished].set(segment.episode_return, mode="drop"),
    )


def sample_relabelled(buffer: EpisodeBuffer, key: jax.Array, batch_size: int) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(obs, command, action) of `batch_size` steps, each relabelled with the command it fulfilled.

    As Srivastava et al. sample: a finished episode uniformly, then a step t1 uniformly in it.
    """
    episode_key, step_key = jax.random.split(key)
    slot = jax.random.categorical(episode_key, jnp.where(buffer.length > 0, 0.0, -jnp.inf), shape=(batch_size,))
    length = buffer.length[slot]
    t1 = jax.random.randint(step_key, (batch_size,), 0, length)
    command = hindsight_command(buffer.episode_return[slot], buffer.return_before[slot, t1], length, t1)
    return jax.tree.map(lambda kept: kept[slot, t1], buffer.obs), command, buffer.action[slot, t1]
