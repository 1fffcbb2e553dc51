"""PQN's maths (Gallici et al. 2024, arXiv:2407.04811): Q(lambda) returns over a rollout."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def q_lambda_returns(
    rewards: jax.Array,
    bootstrap: jax.Array,
    terminated: jax.Array,
    truncated: jax.Array,
    gamma: float,
    q_lambda: float,
) -> jax.Array:
    """G_t = r_t + gamma (1 - terminated_t) [lambda G_{t+1} + (1 - lambda) max_a Q(s'_t, a)], time on axis 0.

    `bootstrap` is max_a Q(s'_t, a) at the state each step reached: the final observation
    when the episode ended there, so a time limit bootstraps from it and a true terminal
    does not. At an episode end, and at the rollout's last step, there is no G_{t+1} to
    mix in: the return bootstraps from max_a Q(s'_t, a) alone.
    """
    continues = 1.0 - terminated.astype(jnp.float32)
    ended = jnp.logical_or(terminated, truncated)

    def backwards(future: jax.Array, step: tuple[jax.Array, ...]) -> tuple[jax.Array, jax.Array]:
        reward, value, cont, end = step
        mixed = jnp.where(end, value, q_lambda * future + (1.0 - q_lambda) * value)
        ret = reward + gamma * cont * mixed
        return ret, ret

    _, returns = jax.lax.scan(backwards, bootstrap[-1], (rewards, bootstrap, continues, ended), reverse=True)
    return returns
