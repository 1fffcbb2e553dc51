"""PPO's maths (Schulman et al. 2017, arXiv:1707.06347), imported by its descendants (APO).

Pure functions of arrays: generalised advantage estimation with termination and
truncation kept apart, the clipped surrogate, and the value regression.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def generalized_advantages(
    rewards: jax.Array,
    values: jax.Array,
    next_values: jax.Array,
    terminated: jax.Array,
    truncated: jax.Array,
    gamma: float,
    gae_lambda: float,
    *,
    bootstrap_on_truncation: bool = True,
    estimator: str = "gae",
) -> tuple[jax.Array, jax.Array]:
    """GAE (Schulman et al. 2016, eq. 16) over a rollout, time on axis 0.

    delta_t = r_t + gamma (1 - terminated_t) V(s'_t) - V(s_t), where s'_t is the state the
    step reached: the final observation when the episode ended there, so a time limit
    bootstraps from it and a true terminal does not. The recursion
    A_t = delta_t + gamma lambda (1 - done_t) A_{t+1} stops at every episode end, and at
    axis 0's end, where delta bootstraps from V(s'): a rollout's or a segment's last step.
    Returns the advantages and the value targets A_t + V(s_t) (the lambda-returns).

    `bootstrap_on_truncation=False` is Brax's choice (`compute_gae`'s truncation mask):
    a step cut by a time limit gets delta_t = 0, so its advantage is 0 and its target
    V(s_t), rather than bootstrapping from the final observation.
    `estimator="vtrace"` returns Brax's advantages instead, IMPALA's on-policy V-trace
    r_t + gamma (1 - terminated_t) v_{t+1} - V(s_t) with v the lambda-return (Espeholt et
    al. 2018, arXiv:1802.01561, section 4.2): delta_t + gamma (1 - done_t) A_{t+1}, the
    future GAE term without lambda; the targets are the same lambda-returns.
    """
    terminated = terminated.astype(jnp.float32)
    done = jnp.maximum(terminated, truncated.astype(jnp.float32))
    deltas = rewards + gamma * (1.0 - terminated) * next_values - values
    if not bootstrap_on_truncation:
        deltas = deltas * (1.0 - jnp.maximum(truncated.astype(jnp.float32) - terminated, 0.0))

    def backwards(future: jax.Array, step: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        delta, done = step
        advantage = delta + gamma * gae_lambda * (1.0 - done) * future
        return advantage, advantage

    _, advantages = jax.lax.scan(backwards, jnp.zeros_like(deltas[0]), (deltas, done), reverse=True)
    targets = advantages + values
    if estimator == "vtrace":
        following = jnp.concatenate([advantages[1:], jnp.zeros_like(advantages[:1])])
        advantages = deltas + gamma * (1.0 - done) * following
    return advantages, targets


def normalize(advantages: jax.Array) -> jax.Array:
    """Advantage normalisation within a minibatch, as the reference implementations do."""
    return (advantages - advantages.mean()) / (advantages.std() + 1e-8)


def clipped_surrogate_loss(log_ratio: jax.Array, advantages: jax.Array, clip_range: jax.Array) -> jax.Array:
    """-E[min(r A, clip(r, 1 - eps, 1 + eps) A)] (Schulman et al. 2017, eq. 7)."""
    ratio = jnp.exp(log_ratio)
    clipped = jnp.clip(ratio, 1.0 - clip_range, 1.0 + clip_range)
    return -jnp.mean(jnp.minimum(ratio * advantages, clipped * advantages))


def value_loss(values: jax.Array, targets: jax.Array) -> jax.Array:
    """E[(V(s) - V_targ)^2] (eq. 9's L^VF)."""
    return jnp.mean(jnp.square(values - targets))


def approx_kl(log_ratio: jax.Array) -> jax.Array:
    """E[(r - 1) - log r], a low-variance estimator of KL(old || new)."""
    return jnp.mean(jnp.exp(log_ratio) - 1.0 - log_ratio)
