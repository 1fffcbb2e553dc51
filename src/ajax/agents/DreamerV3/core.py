"""DreamerV3's losses and targets as pure functions of arrays (Hafner et al., arXiv:2301.04104v2).

Each follows the newest danijar/dreamerv3 (`dreamerv3/agent.py`, `dreamerv3/rssm.py`,
`dreamerv3/configs.yaml`): the balanced KL of the world model, the continue target, the
lambda-returns of imagination and of replay, the imagined trajectory's weight, the normalised
advantage and the REINFORCE actor loss. Time is on axis 0 everywhere.

An imagined trajectory has H + 1 states s_0 .. s_H, s_0 a replayed posterior state; the reward,
continue and value heads give r_t, c_t and v_t at each of them (r_t and c_t describe the step
that entered s_t), and a_t is the action the policy takes in s_t. The reference then uses:

- returns R_0 .. R_{H-1} = `lambda_returns(r, c, v)`, and W = `trajectory_weight(c)`;
- actor: `policy_loss(log pi(a_t | s_t), entropy_t, advantages(R, v[:-1], S), W[:-1])`, with S
  from `ajax.normalizers` (updated with R first);
- critic: W[:-1] * (CE(logits_t, R_t) + 1.0 * CE(logits_t, slow critic's mean at s_t)), the
  two-hot cross-entropies of `ajax.distributional` (the reference's bins are in raw space, see
  that module); the reference bootstraps from the online critic (`slowtar: False`);
- replayed value (loss scale 0.3): the same two terms on replayed states, weighted by
  1 - is_last_t, towards `lambda_returns(rewards, 1 - is_terminal, R_0 of imagination from each
  replayed state, discount=1 - 1/horizon, lasts=is_last)`.

Every loss here is per element; the agent takes the means and applies the loss scales
(dyn 1.0, rep 0.1, policy 1.0, value 1.0, repval 0.3).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def _categorical_kl(p_logits: jax.Array, q_logits: jax.Array) -> jax.Array:
    """KL[p || q] of categoricals over the last axis."""
    log_p = jax.nn.log_softmax(p_logits, axis=-1)
    log_q = jax.nn.log_softmax(q_logits, axis=-1)
    return (jnp.exp(log_p) * (log_p - log_q)).sum(-1)


def kl_balance(post_logits: jax.Array, prior_logits: jax.Array, free_nats: float = 1.0) -> tuple[jax.Array, jax.Array]:
    """The dynamics and representation losses of the world model (DreamerV3's KL balancing).

    For latents of shape (..., stoch, classes), given as logits already mixed with the uniform
    (`ajax.distributional.unimix_logits`):

        dyn = max(free_nats, KL[sg(post) || prior])   trains the prior to predict the posterior,
        rep = max(free_nats, KL[post || sg(prior)])   trains the posterior to be predictable,

    each KL summed over the `stoch` groups, then floored: the reference (`RSSM.loss` in
    `dreamerv3/rssm.py`) floors the total per element, not each group. Below the floor a loss is
    constant, so it gives no gradient. Returns two arrays of shape (...).
    """
    sg = jax.lax.stop_gradient
    dyn = _categorical_kl(sg(post_logits), prior_logits).sum(-1)
    rep = _categorical_kl(post_logits, sg(prior_logits)).sum(-1)
    return jnp.maximum(dyn, free_nats), jnp.maximum(rep, free_nats)


def continue_target(is_terminal: jax.Array, horizon: float = 333.0) -> jax.Array:
    """(1 - is_terminal) (1 - 1 / horizon): the continue head's target ('contdisc').

    With `contdisc: True` (the reference's default, `horizon: 333`) the discount lives in the
    learned continue probability, and imagination then discounts by the predicted c_t alone
    (`discount=1.0` below); 1 - 1/333 is about 0.997.
    """
    return (1.0 - is_terminal.astype(jnp.float32)) * (1.0 - 1.0 / horizon)


def lambda_returns(
    rewards: jax.Array,
    continues: jax.Array,
    values: jax.Array,
    lam: float = 0.95,
    discount: float = 1.0,
    lasts: jax.Array | None = None,
) -> jax.Array:
    """The reference's lambda-returns (`lambda_return` in `dreamerv3/agent.py`), time first.

    `rewards`, `continues` and `values` have length T + 1 along axis 0, one entry per state
    s_0 .. s_T, where r_t and c_t belong to the step into s_t (r_0 and c_0 are not used). The
    result has length T; its entry t is the return from s_t:

        R_T = v_T
        R_t = r_{t+1} + discount c_{t+1} ((1 - lam_{t+1}) v_{t+1} + lam_{t+1} R_{t+1}),  t = T-1 .. 0
        lam_t = lam (1 - lasts_t)                  (lam everywhere when `lasts` is None)

    so a terminal (c_{t+1} = 0) ends the sum, R_{T-1} = r_T + discount c_T v_T, and at a
    replayed episode's last step the return bootstraps from v_{t+1} in full instead of running
    into the next episode. Imagination: continues = the continue head's probabilities (they
    carry 1 - 1/horizon) and discount 1. Replay: continues = 1 - is_terminal, discount
    1 - 1/horizon, lasts = is_last, values = the imagined return from each replayed state.
    """
    lams = jnp.full_like(continues[1:], lam) if lasts is None else lam * (1.0 - lasts[1:].astype(jnp.float32))

    def backwards(future: jax.Array, step: tuple[jax.Array, ...]) -> tuple[jax.Array, jax.Array]:
        reward, live, step_lam, value = step
        current = reward + live * ((1.0 - step_lam) * value + step_lam * future)
        return current, current

    steps = (rewards[1:], discount * continues[1:], lams, values[1:])
    _, returns = jax.lax.scan(backwards, values[-1], steps, reverse=True)
    return returns


def trajectory_weight(continues: jax.Array, discount: float = 1.0) -> jax.Array:
    """sg(cumprod(discount c)_t / discount): each imagined state's chance of being reached, discounted.

    W_t = c_0 prod_{i=1..t} (discount c_i), so W_0 = c_0 (the start state's own continue
    prediction counts too, as in the reference's `imag_loss`), and a predicted terminal at s_i
    silences the losses at s_i and after. A constant: the losses weigh by it but do not train
    the continue head through it. Same length as `continues`; the actor and critic losses use
    W[:-1].
    """
    return jax.lax.stop_gradient(jnp.cumprod(discount * continues, axis=0) / discount)


def advantages(returns: jax.Array, values: jax.Array, denominator: jax.Array) -> jax.Array:
    """(R_t - v_t) / S, S = max(1, P95 - P5) of the returns (`ajax.normalizers.denominator`).

    `values` are v_0 .. v_{T-1}, the values the returns start from (the reference's
    `tarval[:, :-1]`). Only the scale is divided out; the offset cancels in the difference.
    """
    return (returns - values) / denominator


def policy_loss(
    log_probs: jax.Array,
    entropies: jax.Array,
    advantages: jax.Array,
    weights: jax.Array,
    entropy_scale: float = 3e-4,
) -> jax.Array:
    """-sg(W_t) (log pi(a_t | s_t) sg(A_t) + eta H[pi(. | s_t)]), per element (the reference's `imag_loss`).

    REINFORCE with the normalised advantage for discrete and continuous actions alike (the
    reference stops the gradient at the imagined states, `sg(imgfeat)`, so nothing flows back
    through the dynamics); eta = `actent: 3e-4`. The log-probability is of the sampled action
    (a constant), summed over the action's parts by the caller.
    """
    sg = jax.lax.stop_gradient
    return -sg(weights) * (log_probs * sg(advantages) + entropy_scale * entropies)
