"""TD-MPC2's maths (Hansen, Su, Wang, ICLR 2024, arXiv:2310.16828), as nicklashansen/tdmpc2 computes it.

The multi-task agent imports these instead of copying them. Conventions: time first, a
window of H transitions sampled from replay; `valid` (H, B) is 1 where a transition belongs
to the episode the window began in (the reference samples only windows inside one
episode; Ajax samples any and masks what follows an episode's end).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ajax.distributional import symlog_bins, two_hot_loss, two_hot_mean

LOG_2PI_HALF = 0.9189385175704956  # log(2 pi) / 2


def discount_from_episode_length(episode_length: int, denom: float = 5.0, low: float = 0.95, high: float = 0.995):
    """clip((T/5 - 1) / (T/5), 0.95, 0.995): longer episodes look further ahead (the reference's `_get_discount`)."""
    frac = episode_length / denom
    return min(max((frac - 1) / frac, low), high)


def default_seed_steps(episode_length: int) -> int:
    """max(1000, 5 T): random steps before the first update (the reference's `seed_steps`)."""
    return max(1000, 5 * episode_length)


def value_bins(num_bins: int = 101, vmin: float = -10.0, vmax: float = 10.0) -> jax.Array:
    """The two-hot bins of rewards and values, spaced evenly in symlog space."""
    return symlog_bins(num_bins, vmin, vmax)


def predict(logits: jax.Array, bins: jax.Array) -> jax.Array:
    """The scalar a reward or Q head predicts: symexp of the softmax's mean bin."""
    return two_hot_mean(logits, bins)


def soft_cross_entropy(logits: jax.Array, target: jax.Array, bins: jax.Array) -> jax.Array:
    """The reference's `soft_ce`: cross-entropy against two_hot(symlog(target)), per element."""
    return two_hot_loss(logits, target, bins)


def rho_weights(horizon: int, rho: float) -> jax.Array:
    """rho^t for t = 0 .. horizon - 1: later predictions of the rollout count less."""
    return rho ** jnp.arange(horizon, dtype=jnp.float32)


def td_target(reward: jax.Array, terminated: jax.Array, discount: jax.Array | float, next_q: jax.Array) -> jax.Array:
    """r_t + gamma (1 - terminated_t) Q'(z_{t+1}, pi(z_{t+1})), each step with its own termination flag."""
    return reward + discount * (1.0 - terminated) * next_q


def pair_of(q_values: jax.Array, key: jax.Array) -> jax.Array:
    """Two distinct members of an ensemble (leading axis), drawn uniformly: (2, ...)."""
    chosen = jax.random.permutation(key, q_values.shape[0])[:2]
    return q_values[chosen]


def consistency_loss(predicted: jax.Array, target: jax.Array, valid: jax.Array, rho: float) -> jax.Array:
    """sum_t rho^t MSE(z_{t+1}, sg(enc(s_{t+1}))) / H over (H, B, latent) rollouts."""
    horizon, batch = valid.shape
    per_step = jnp.sum(jnp.mean(jnp.square(predicted - target), -1) * valid, -1) / batch
    return jnp.sum(rho_weights(horizon, rho) * per_step) / horizon


def reward_loss(logits: jax.Array, reward: jax.Array, valid: jax.Array, rho: float, bins: jax.Array) -> jax.Array:
    """sum_t rho^t CE(R(z_t, a_t), r_t) / H."""
    horizon, batch = valid.shape
    per_step = jnp.sum(soft_cross_entropy(logits, reward, bins) * valid, -1) / batch
    return jnp.sum(rho_weights(horizon, rho) * per_step) / horizon


def value_loss(logits: jax.Array, target: jax.Array, valid: jax.Array, rho: float, bins: jax.Array) -> jax.Array:
    """sum_t rho^t sum_q CE(Q_q(z_t, a_t), sg(target_t)) / (H num_q), logits (num_q, H, B, bins)."""
    num_q = logits.shape[0]
    horizon, batch = valid.shape
    per_step = jnp.sum(soft_cross_entropy(logits, jax.lax.stop_gradient(target), bins) * valid, (0, 2)) / batch
    return jnp.sum(rho_weights(horizon, rho) * per_step) / (horizon * num_q)


def termination_loss(logits: jax.Array, terminated: jax.Array, valid: jax.Array) -> jax.Array:
    """Binary cross-entropy of the termination head on the rollout's latents z_1 .. z_H."""
    bce = jnp.maximum(logits, 0) - logits * terminated + jnp.log1p(jnp.exp(-jnp.abs(logits)))
    return jnp.sum(bce * valid) / valid.size


def log_std(raw: jax.Array, low: float, high: float) -> jax.Array:
    """The policy's log-std squashed into [low, high]: low + (high - low)(tanh(raw) + 1) / 2."""
    return low + 0.5 * (high - low) * (jnp.tanh(raw) + 1.0)


def squashed_gaussian(
    raw: jax.Array, eps: jax.Array, low: float, high: float, action_mask: jax.Array | None = None
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """The policy prior's reparameterised draw: (action, mean action, log-prob, scaled entropy).

    a = tanh(mu + eps sigma). The log-probability is the Gaussian's minus the tanh's
    log-Jacobian (with the reference's 1e-6 inside the log). The entropy bonus is the
    Gaussian's, before the squash, scaled by the number of action dimensions
    (`scaled_entropy` = -dims log N(eps; 0, sigma), what the reference's
    `-log_prob * entropy_scale` reduces to in `world_model.py`'s `pi`), so its weight does not
    shrink with a wider action space; the tanh's correction enters `log_prob` alone.
    A mask (multi-task: padded action dimensions) zeroes the mean, the log-std and the noise there.
    """
    mean, raw_std = jnp.split(raw, 2, axis=-1)
    std_log = log_std(raw_std, low, high)
    if action_mask is not None:
        mean, std_log, eps = mean * action_mask, std_log * action_mask, eps * action_mask
        dims = jnp.sum(action_mask, -1)
    else:
        dims = eps.shape[-1]
    gaussian = jnp.sum(-0.5 * jnp.square(eps) - std_log, -1) - LOG_2PI_HALF * eps.shape[-1]
    action = jnp.tanh(mean + eps * jnp.exp(std_log))
    log_prob = gaussian - jnp.sum(jnp.log(jax.nn.relu(1.0 - jnp.square(action)) + 1e-6), -1)
    return action, jnp.tanh(mean), log_prob, -gaussian * dims


def policy_loss(
    q_values: jax.Array, scaled_entropy: jax.Array, scale: jax.Array, valid: jax.Array, rho: float, entropy_coef: float
):
    """mean_t rho^t mean_B -(entropy_coef * scaled entropy + Q / S) over the rollout's H + 1 latents.

    Q is the mean of two random Q-functions (detached from the critic's parameters); S the
    running scale of Q. The mean over time (not the sum) is the reference's.
    """
    steps, batch = valid.shape
    per_step = jnp.sum(-(entropy_coef * scaled_entropy + q_values / scale) * valid, -1) / batch
    return jnp.mean(rho_weights(steps, rho) * per_step)


def soft_update(target: jax.Array, online: jax.Array, tau: float) -> jax.Array:
    """Polyak averaging, target <- target + tau (online - target) (the reference's `lerp_`)."""
    return jax.tree.map(lambda t, o: t + tau * (o - t), target, online)


def window_valid(terminated: jax.Array, truncated: jax.Array) -> jax.Array:
    """(H, B): 1 for a window's transitions up to and including the first that ends an episode."""
    done = (terminated | truncated).astype(jnp.float32)
    ended_before = jnp.cumsum(done, 0) - done
    return (ended_before == 0).astype(jnp.float32)
