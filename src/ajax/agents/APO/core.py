"""APO's maths (Ma et al. 2021, arXiv:2106.03442): what the average-reward criterion changes in PPO.

APO optimises the reward rate rho(pi) = lim_T E[sum_t r_t] / T instead of a discounted
return. Its critic learns the differential (bias) value V(s) = E[sum_t (r_t - rho) | s_0 = s],
so three things change, and only these live here; the clipped surrogate, the squared
value error and GAE's recursion are PPO's, imported from `ajax.agents.PPO.core`:

- the reward rate is estimated from the rollouts (`reward_rate_update`);
- the advantages are PPO's GAE on r_t - rho with gamma = 1 (`differential_advantages`);
- the differential value is defined only up to a constant (V + c solves the same Bellman
  equation), so with bootstrapped targets its level drifts; the paper's Average Value
  Constraint E_{s ~ d_pi}[V(s)] = 0 pins it. Here the constraint is enforced as a quadratic
  penalty with a fixed weight, nu (E[V(s)])^2 added to the critic's squared error
  (`differential_value_loss`), not by adjusting the targets.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ajax.agents.PPO.core import generalized_advantages, value_loss


def reward_rate_update(average_reward: jax.Array, rewards: jax.Array, step: float, n_rollouts: jax.Array) -> jax.Array:
    """rho_k = rho_{k-1} + beta_k (mean_t r_t - rho_{k-1}), beta_k = alpha / (1 - (1 - alpha)^k).

    The paper estimates the reward rate as the sampled reward average; here each rollout's
    mean, an estimate of rho(pi) for the policy that collected it, is averaged across
    rollouts with step alpha (`step`), and alpha = 1 takes each rollout's mean as it is.
    `n_rollouts` = k counts the rollouts so far, this one included: beta_1 = 1 and
    beta_k -> alpha make rho_k the alpha-weighted average of the rollout means with weights
    summing to one (the unbiased constant-step trick, Sutton & Barto 2018, Exercise 2.7), so
    the arbitrary rho_0 = 0 leaves no trace; a plain constant step would hold rho near zero for
    the first ~1/alpha rollouts, shifting every differential reward and the value with it.
    """
    beta = step / (1.0 - (1.0 - step) ** jnp.asarray(n_rollouts, jnp.float32))
    return average_reward + beta * (jnp.mean(rewards) - average_reward)


def differential_advantages(
    rewards: jax.Array,
    average_reward: jax.Array,
    values: jax.Array,
    next_values: jax.Array,
    terminated: jax.Array,
    truncated: jax.Array,
    gae_lambda: float,
) -> tuple[jax.Array, jax.Array]:
    """Average-reward GAE: PPO's GAE on the differential reward r_t - rho, with gamma = 1.

    delta_t = r_t - rho + (1 - terminated_t) V(s'_t) - V(s_t), the average-reward TD error,
    and A_t = delta_t + lambda (1 - done_t) A_{t+1}. At a time limit V(s'_t) is the value of
    the final observation; a true terminal contributes no bootstrap. Returns the advantages
    and the value targets A_t + V(s_t).
    """
    return generalized_advantages(rewards - average_reward, values, next_values, terminated, truncated, 1.0, gae_lambda)


def average_value_penalty(values: jax.Array, nu: float) -> jax.Array:
    """nu (E[V(s)])^2: the Average Value Constraint E_{s ~ d_pi}[V(s)] = 0 as a penalty.

    The expectation is the minibatch mean, the rollout being samples of d_pi. Its gradient,
    2 nu E[V] E[dV/dphi], is the direction that moves the mean value: it pulls the value's
    level towards zero and leaves the differences between states, all that the advantages
    use, to the regression. Fitting targets whose mean is m, the values' mean comes out at
    m / (1 + nu) instead of m.
    """
    return nu * jnp.square(jnp.mean(values))


def differential_value_loss(values: jax.Array, targets: jax.Array, nu: float) -> jax.Array:
    """E[(V(s) - V_targ)^2] + nu (E[V(s)])^2: PPO's value regression under the constraint."""
    return value_loss(values, targets) + average_value_penalty(values, nu)
