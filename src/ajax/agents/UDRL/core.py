"""UDRL's maths: commands (Schmidhuber 2019, arXiv:1912.02875; Srivastava et al. 2019, arXiv:1912.02877).

A command c = (d_r, d_h) asks the policy for the return d_r within d_h steps. Pure
functions of arrays: the command update while acting, the exploratory and exploiting
commands built from the best episodes, the hindsight command a stored step is relabelled
with, and the scaling that brings a command to the network's input range.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ajax.agents.UDRL.state import CommandStatistics


def update_command(command: jax.Array, reward: jax.Array) -> jax.Array:
    """After a step paying r_t: d_r <- d_r - r_t, d_h <- max(d_h - 1, 1) (Srivastava et al., Algorithm 2)."""
    desired_return, desired_horizon = command[..., 0], command[..., 1]
    return jnp.stack([desired_return - reward, jnp.maximum(desired_horizon - 1.0, 1.0)], axis=-1)


def top_episode_statistics(episode_return: jax.Array, length: jax.Array, k: int) -> CommandStatistics:
    """The mean and standard deviation of the K highest returns among finished episodes, and their mean length.

    Fewer than K finished episodes: all of them. None: return 0 with no spread, horizon 1.
    """
    finished = length > 0
    top_returns, top = jax.lax.top_k(jnp.where(finished, episode_return, -jnp.inf), k)
    chosen = finished[top]
    count = jnp.sum(chosen)
    n = jnp.maximum(count, 1)
    mean = jnp.sum(jnp.where(chosen, top_returns, 0.0)) / n
    std = jnp.sqrt(jnp.sum(jnp.where(chosen, jnp.square(top_returns - mean), 0.0)) / n)
    horizon = jnp.where(count > 0, jnp.sum(jnp.where(chosen, length[top], 0)) / n, 1.0)
    return CommandStatistics(return_mean=mean, return_std=std, horizon=horizon.astype(jnp.float32))


def exploratory_command(statistics: CommandStatistics, key: jax.Array, n: int) -> jax.Array:
    """d_h = the top-K's mean length, d_r ~ U[M, M + S] of their returns (Srivastava et al., "Sampling
    exploratory commands")."""
    desired_return = statistics.return_mean + statistics.return_std * jax.random.uniform(key, (n,))
    return jnp.stack([desired_return, jnp.full((n,), statistics.horizon)], axis=-1)


def exploiting_command(statistics: CommandStatistics, n: int) -> jax.Array:
    """The evaluation's command: the top-K's mean return and mean length, the exploratory command without its noise."""
    return jnp.broadcast_to(jnp.stack([statistics.return_mean, statistics.horizon]), (n, 2))


def hindsight_command(episode_return: jax.Array, return_before: jax.Array, length: jax.Array, t1: jax.Array):
    """The command step t1 of a finished episode fulfilled: (sum_{t1 <= t < T} r_t, T - t1).

    Schmidhuber relabels any segment [t1, t2) of an episode with the command it fulfilled,
    (sum_{t1 <= t < t2} r_t, t2 - t1); Srivastava et al. ("Training the behavior function")
    take t2 = T, the episode's end, as here. The return collected before t1, stored with the
    step, gives the sum without the rewards themselves.
    """
    return jnp.stack([episode_return - return_before, (length - t1).astype(jnp.float32)], axis=-1)


def scale_command(command: jax.Array, return_scale: float, horizon_scale: float) -> jax.Array:
    """c * (return_scale, horizon_scale): the command brought to the observations' scale (Srivastava et al.'s
    command scaling)."""
    return command * jnp.asarray([return_scale, horizon_scale], jnp.float32)
