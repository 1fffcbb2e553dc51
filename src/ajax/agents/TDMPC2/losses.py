"""TD-MPC2's losses as pure functions of the parameters and a window of transitions (arXiv:2310.16828).

They follow the reference's `TDMPC2._update` (nicklashansen/tdmpc2, `tdmpc2.py`) in the order
it runs: the TD targets from the parameters before the update (`td_targets`, the reference's
`_td_target`), the world model's loss on a latent rollout (`world_model_loss`, as `_update` sums
it), and the policy prior's (`policy_objective`, the reference's `update_pi`).
`update` in `train_TDMPC2.py` takes their gradients and steps the optimisers; the per-element
terms they assemble (consistency, two-hot, termination and policy losses) are in `core.py`,
which the multi-task agent shares.

Conventions: time first, a window's leaves (H, B, ...); `valid` (H, B) masks what follows an
episode's end; `task` and `action_mask` are the multi-task agent's and None for one task.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from ajax.agents.TDMPC2.core import (
    consistency_loss,
    pair_of,
    policy_loss,
    reward_loss,
    td_target,
    termination_loss,
    value_loss,
)
from ajax.agents.TDMPC2.model import Networks
from ajax.agents.TDMPC2.networks import WorldModel
from ajax.agents.TDMPC2.state import TDMPC2Config
from ajax.normalizers import RunningScale, update_running
from ajax.state import LoopTrainState

sg = jax.lax.stop_gradient


def td_targets(
    networks: Networks,
    model_state: LoopTrainState,
    policy_params: Any,
    window: Any,
    discount: jax.Array | float,
    keys: tuple[jax.Array, jax.Array],
    task: jax.Array | None = None,
    action_mask: jax.Array | None = None,
) -> tuple[jax.Array, jax.Array]:
    """(z'_t, the TD target), both out of the gradient's reach (the reference's `_td_target`).

    z'_t = enc(s_{t+1}) (the final observation at a time limit); the target is r_t + gamma
    (1 - terminated_t) times the min of two random target Q-functions at (z'_t, a' ~ pi(z'_t)).
    `keys` = (the policy's noise, the pair of target Q-functions).
    """
    pi_key, q_key = keys
    params = {**model_state.params, **policy_params}
    next_z = sg(networks.encode(params, window.next_obs, task))
    next_action = networks.pi(params, next_z, pi_key, task, action_mask)[0]
    target_params = {**params, "q_ensemble": model_state.target_params}
    next_q = jnp.min(pair_of(networks.q_values(target_params, next_z, next_action, task), q_key), 0)
    terminated = window.terminated.astype(jnp.float32)
    return next_z, sg(td_target(window.reward, terminated, discount, next_q))


def world_model_loss(
    networks: Networks,
    config: TDMPC2Config,
    model_params: Any,
    policy_params: Any,
    window: Any,
    next_z: jax.Array,
    target: jax.Array,
    valid: jax.Array,
    dropout: jax.Array,
    task: jax.Array | None = None,
) -> tuple[jax.Array, tuple[jax.Array, dict[str, jax.Array]]]:
    """The world model's weighted loss on a latent rollout: (total, (latents zs (H + 1, B, latent), each loss)).

    z_0 = enc(s_0), z_{t+1} = d(z_t, a_t); the consistency (MSE to z'_t), reward and value
    (two-hot cross-entropies, the Q-functions under dropout) and, in episodic mode, termination
    losses, each step weighted by rho^t, summed with the coefficients (20, 0.1, 0.1, 1), as the
    reference's `_update` does. Only `model_params` is differentiated.
    """
    coefficients, rho = config.coefficients, config.rho
    params = {**model_params, **policy_params}
    z0 = networks.encode(params, window.obs[0], task)

    def roll(z: jax.Array, action: jax.Array) -> tuple[jax.Array, jax.Array]:
        z = networks.apply(params, WorldModel.next, z, action, task)
        return z, z

    _, predicted = jax.lax.scan(roll, z0, window.action)
    zs = jnp.concatenate([z0[None], predicted])
    q_logits = networks.apply(params, WorldModel.q, zs[:-1], window.action, task, False, rngs={"dropout": dropout})
    reward_logits = networks.apply(params, WorldModel.reward, zs[:-1], window.action, task)
    losses = {
        "consistency": consistency_loss(predicted, next_z, valid, rho),
        "reward": reward_loss(reward_logits, window.reward, valid, rho, networks.bins),
        "value": value_loss(q_logits, target, valid, rho, networks.bins),
        "termination": jnp.zeros(()),
    }
    if config.arch.episodic:
        logits = networks.apply(params, WorldModel.termination, predicted, task)
        losses["termination"] = termination_loss(logits, window.terminated.astype(jnp.float32), valid)
    total = (
        coefficients.consistency * losses["consistency"]
        + coefficients.reward * losses["reward"]
        + coefficients.value * losses["value"]
        + coefficients.termination * losses["termination"]
    )
    return total, (zs, losses)


def policy_objective(
    networks: Networks,
    config: TDMPC2Config,
    model_params: Any,
    policy_params: Any,
    zs: jax.Array,
    q_scale: RunningScale,
    valid: jax.Array,
    keys: tuple[jax.Array, jax.Array, jax.Array],
    task: jax.Array | None = None,
    action_mask: jax.Array | None = None,
) -> tuple[jax.Array, tuple[RunningScale, jax.Array, jax.Array]]:
    """The policy prior's loss on the latents zs (H + 1, B, latent): (loss, (new Q scale, entropy, scaled entropy)).

    The reference's `update_pi`. The world model's parameters enter detached, so the loss's
    gradient with respect to them, the Q-functions' among them, is zero (the reference's
    `Q(..., detach=True)`): the policy prior's loss never moves the Q-functions, whatever is
    differentiated. `keys` = (the policy's noise, the pair of Q-functions, their dropout);
    `valid` (H + 1, B) masks the latents.
    """
    pi_key, q_key, pi_dropout = keys
    params = {**sg(model_params), **policy_params}
    action, _, log_prob, scaled_entropy = networks.pi(params, zs, pi_key, task, action_mask)
    q = jnp.mean(pair_of(networks.q_values(params, zs, action, task, dropout=pi_dropout), q_key), 0)
    scale = update_running(q_scale, q[0], config.tau)
    loss = policy_loss(q, scaled_entropy, scale.value, valid, config.rho, config.entropy_coef)
    return loss, (scale, -log_prob, scaled_entropy)
