"""DreamerV3's losses as pure functions of the parameters and a sampled batch (arXiv:2301.04104v2).

They follow the reference's `Agent.loss` (danijar/dreamerv3, `agent.py`) in the order it runs:
the world model's five losses on the replayed rows (`world_model_loss`, with the KL balance of
the reference's `RSSM.loss`), imagination from every posterior state (`imagined_trajectories`), the
actor's and critic's losses on it (`behaviour_loss`, the reference's `imag_loss`),
and the critic's on the replayed rows (`replay_value_loss`, the reference's `repl_loss`).
`make_objective` closes over the networks and the settings, Brax-style, and weighs them into one
total. The per-element maths they assemble (KL balance, lambda-returns, the REINFORCE loss) is
in `core.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import distrax
import jax
import jax.numpy as jnp
import optax
from flax import struct

from ajax import normalizers
from ajax.agents.DreamerV3.core import (
    advantages,
    continue_target,
    kl_balance,
    lambda_returns,
    policy_loss,
    trajectory_weight,
)
from ajax.agents.DreamerV3.networks import (
    N_BINS,
    Actor,
    Critic,
    Latent,
    WorldModel,
    features,
    masked,
    observe_sampled,
    observed_mask,
    predicted_mask,
    rssm_action,
    sample_one_hot,
)
from ajax.agents.DreamerV3.state import DreamerV3Config
from ajax.distributional import bins_mean, symexp, symlog_bins, two_hot_cross_entropy
from ajax.environments.row_collector import Rows
from ajax.normalizers import PercentileScale, denominator

sg = jax.lax.stop_gradient


@struct.dataclass
class WorldModelLosses:
    reconstruction_loss: jax.Array
    reward_loss: jax.Array
    continuation_loss: jax.Array
    dynamics_loss: jax.Array
    representation_loss: jax.Array
    action_mask_loss: jax.Array | None = None  # on an env whose observations carry an action mask


@struct.dataclass
class BehaviourLosses:
    policy_loss: jax.Array
    value_loss: jax.Array
    replay_value_loss: jax.Array
    entropy: jax.Array
    imagined_return: jax.Array
    return_scale: jax.Array


Objective = Callable[..., tuple[jax.Array, tuple[Latent, WorldModelLosses, BehaviourLosses, PercentileScale]]]


@dataclass(frozen=True)
class Parts:
    """What every loss reads besides the parameters and the batch: the networks, the settings and the
    two-hot bins of the reward and value heads (the reference's `symexp_twohot`: spaced evenly in
    symlog space, targets encoded and predictions read between them in the env's own units)."""

    model: WorldModel
    actor: Actor
    critic: Critic
    config: DreamerV3Config
    bins: jax.Array

    def predict(self, logits: jax.Array) -> jax.Array:
        return bins_mean(logits, self.bins)

    def two_hot_loss(self, logits: jax.Array, target: jax.Array) -> jax.Array:
        return two_hot_cross_entropy(logits, target, self.bins)

    def pi(self, params: Any, latent: Latent) -> distrax.Distribution:
        return self.policy(params, features(latent))

    def policy(self, params: Any, feat: jax.Array) -> distrax.Distribution:
        """The actor at imagined states; on a masked env it keeps to the actions the mask head allows."""
        policy = self.actor.apply(params["actor"], feat)
        if not self.model.mask_actions:
            return policy
        allowed = self.model.apply(sg(params["model"]), feat, method=WorldModel.allowed_logits)
        return masked(policy, predicted_mask(allowed))

    def imagine(self, params: Any, latent: Latent, action: jax.Array, key: jax.Array) -> Latent:
        """The RSSM's prior step, read as the equations write it: h' = f(h, z, a), z' ~ p(z | h')."""
        deter = self.model.apply(params, latent, action, method=WorldModel.step)
        logits = self.model.apply(params, deter, method=WorldModel.prior)
        return Latent(deter, sample_one_hot(logits, key))


def world_model_loss(parts: Parts, params: Any, rows: Rows, context: Rows, key: jax.Array):
    """The posterior over the trained rows and the world model's five losses, each (B, T).

    The reference's `Agent.loss` with `RSSM.loss`: reconstruction (symlog MSE of vectors, MSE
    of images' pixels), reward (two-hot), continuation (binary, target `continue_target`), and
    the dynamics and representation halves of the balanced KL (`kl_balance`). The posterior starts
    from the context row's stored latent; a reset zeroes it.
    """
    model, config = parts.model, parts.config
    model_params = params["model"]
    embedding = model.apply(model_params, rows.obs, method=WorldModel.encode)
    previous = jnp.concatenate([context.action[:, None], rows.action[:, :-1]], 1)
    time_first = lambda x: jnp.swapaxes(x, 0, 1)  # noqa: E731

    def step(latent: Latent, inputs: tuple[jax.Array, ...]):
        embedding_t, action_t, first_t, key_t = inputs
        action_t = rssm_action(parts.actor, action_t)
        latent, logits = observe_sampled(model, model_params, latent, action_t, embedding_t, first_t, key_t)
        return latent, (latent, logits)

    keys = jax.random.split(key, config.batch_length)
    inputs = (time_first(embedding), time_first(previous), time_first(rows.is_first), keys)
    _, (posterior, posterior_logits) = jax.lax.scan(step, context.entry, inputs)
    posterior, posterior_logits = jax.tree.map(time_first, (posterior, posterior_logits))
    prior_logits = model.apply(model_params, posterior.deter, method=WorldModel.prior)
    dynamics, representation = kl_balance(posterior_logits, prior_logits, config.free_nats)
    feat = features(posterior)
    continuation = continue_target(rows.is_terminal, config.horizon)
    losses = WorldModelLosses(
        reconstruction_loss=model.apply(model_params, feat, rows.obs, method=WorldModel.reconstruction_loss),
        reward_loss=parts.two_hot_loss(model.apply(model_params, feat, method=WorldModel.reward_logits), rows.reward),
        continuation_loss=optax.sigmoid_binary_cross_entropy(
            model.apply(model_params, feat, method=WorldModel.continue_logit), continuation
        ),
        dynamics_loss=dynamics,
        representation_loss=representation,
        action_mask_loss=action_mask_loss(model, model_params, feat, rows.obs) if model.mask_actions else None,
    )
    return posterior, losses


def action_mask_loss(model: WorldModel, model_params: Any, feat: jax.Array, obs: Any) -> jax.Array:
    """Each row's binary cross-entropy of the mask head against the observed mask, summed over actions."""
    logits = model.apply(model_params, feat, method=WorldModel.allowed_logits)
    return optax.sigmoid_binary_cross_entropy(logits, observed_mask(obs).astype(jnp.float32)).sum(-1)


def imagined_trajectories(parts: Parts, params: Any, starts: Latent, key: jax.Array) -> tuple[Latent, jax.Array]:
    """H steps of the prior under the actor from every start: states (H + 1, N), actions (H + 1, N).

    The reference's `imagine`, all out of the gradient's reach: the actor learns by REINFORCE,
    not through the dynamics.
    """
    frozen = sg(params)

    def step(latent: Latent, key: jax.Array):
        action_key, latent_key = jax.random.split(key)
        action = parts.pi(frozen, latent).sample(seed=action_key)
        return parts.imagine(frozen["model"], latent, rssm_action(parts.actor, action), latent_key), (latent, action)

    keys = jax.random.split(key, parts.config.imag_horizon + 1)
    last, (states, actions) = jax.lax.scan(step, starts, keys[:-1])
    final_action = parts.pi(frozen, last).sample(seed=keys[-1])
    states = jax.tree.map(lambda xs, x: jnp.concatenate([xs, x[None]]), states, last)
    return sg(states), sg(jnp.concatenate([actions, final_action[None]]))


def behaviour_loss(
    parts: Parts, params: Any, slow: Any, scale: PercentileScale, posterior: Latent, rows: Rows, key: jax.Array
) -> tuple[BehaviourLosses, PercentileScale]:
    """The actor's and critic's losses on imagination, and the critic's on replay (the reference's
    `imag_loss` and `repl_loss`).

    Lambda-returns from the predicted rewards, continues and values; REINFORCE on advantages
    divided by max(1, the 5th-95th percentile range of returns); the critic's two-hot loss towards
    the returns and towards the slow critic's prediction. Returns the losses and the updated scale.
    """
    model, critic, config = parts.model, parts.critic, parts.config
    batch, length = rows.reward.shape
    starts = jax.tree.map(lambda x: sg(x).reshape(batch * length, *x.shape[2:]), posterior)
    states, actions = imagined_trajectories(parts, params, starts, key)
    feat = features(states)  # (H + 1, N, F)
    model_params = sg(params["model"])
    reward = parts.predict(model.apply(model_params, feat, method=WorldModel.reward_logits))
    continues = jax.nn.sigmoid(model.apply(model_params, feat, method=WorldModel.continue_logit))
    value_logits = critic.apply(params["critic"], feat)
    value = parts.predict(value_logits)
    slow_value = parts.predict(critic.apply(slow, feat))
    # The continue head already discounts (its target carries 1 - 1/horizon): imagination uses discount 1.
    weight = trajectory_weight(continues)
    ret = lambda_returns(reward, continues, sg(value), config.lam)  # (H, N)
    scale = normalizers.update(scale, ret)
    advantage = advantages(ret, sg(value[:-1]), denominator(scale))
    policy = parts.policy(params, feat)
    entropy = policy.entropy()[:-1]
    actor_loss = policy_loss(policy.log_prob(actions)[:-1], entropy, advantage, weight[:-1], config.actor_entropy)
    value_loss = weight[:-1] * (
        parts.two_hot_loss(value_logits[:-1], sg(ret))
        + config.slow_critic_regularizer * parts.two_hot_loss(value_logits[:-1], sg(slow_value[:-1]))
    )
    replay_loss = replay_value_loss(parts, params, slow, posterior, rows, ret[0])
    losses = BehaviourLosses(
        policy_loss=jnp.mean(actor_loss),
        value_loss=jnp.mean(value_loss),
        replay_value_loss=jnp.mean(replay_loss),
        entropy=jnp.mean(entropy),
        imagined_return=jnp.mean(ret),
        return_scale=denominator(scale),
    )
    return losses, scale


def replay_value_loss(
    parts: Parts, params: Any, slow: Any, posterior: Latent, rows: Rows, imagined_return: jax.Array
) -> jax.Array:
    """The critic's loss on the replayed rows (B, T - 1), towards the real rewards' lambda-returns
    bootstrapped from each row's imagined return (the reference's `repl_loss`).

    The posterior keeps its gradient: the representation learns from this loss too.
    """
    critic, config = parts.critic, parts.config
    replay_feat = features(posterior)
    replay_logits = critic.apply(params["critic"], replay_feat)
    replay_return = replay_returns(imagined_return, rows, config.lam, 1.0 - 1.0 / config.horizon)  # (B, T - 1)
    replay_slow = parts.predict(critic.apply(slow, replay_feat))
    return (1.0 - rows.is_last[:, :-1]) * (
        parts.two_hot_loss(replay_logits[:, :-1], sg(replay_return))
        + config.slow_critic_regularizer * parts.two_hot_loss(replay_logits[:, :-1], sg(replay_slow[:, :-1]))
    )


def replay_returns(imagined_return: jax.Array, rows: Rows, lam: float, discount: float) -> jax.Array:
    """The replayed rows' lambda-returns (B, T - 1), each bootstrapped from the imagined return of its row.

    `imagined_return` (B T,) is R_0 of the imagination started from each posterior state, which
    `behaviour_loss` flattens row-major: entry b T + t belongs to row (b, t), as the reference's
    `ret[:, 0].reshape(B, K)`. `lambda_returns` runs time first, hence the transposes.
    """
    batch, length = rows.reward.shape
    boot = imagined_return.reshape(batch, length)
    return lambda_returns(rows.reward.T, 1.0 - rows.is_terminal.T, boot.T, lam, discount, lasts=rows.is_last.T).T


def make_objective(model: WorldModel, actor: Actor, critic: Critic, config: DreamerV3Config) -> Objective:
    """Every loss of an update as one pure function of the parameters, each loss kept apart.

    `objective(params, slow, return_scale, rows, context, (model_key, imagine_key))`: `params`
    are the train state's {"model", "actor", "critic"} (the only argument `learn` differentiates),
    `slow` the slow critic's, `rows` and `context` a sampled batch as `learn` splits it. It returns
    the weighted total and (the posterior, the world model's losses per element, the behaviour
    losses, the updated return scale), so each term's gradient can also be taken on its own.
    """
    parts = Parts(model, actor, critic, config, symexp(symlog_bins(N_BINS)))

    def objective(params: Any, slow: Any, return_scale: PercentileScale, rows: Rows, context: Rows, keys: Any):
        """The weighted sum of the losses (the reference's `loss_scales`), and the parts `learn` keeps."""
        model_key, imagine_key = keys
        scales = config.scales
        posterior, model_losses = world_model_loss(parts, params, rows, context, model_key)
        behaviour_losses, scale = behaviour_loss(parts, params, slow, return_scale, posterior, rows, imagine_key)
        total = (
            scales.reconstruction * jnp.mean(model_losses.reconstruction_loss)
            + scales.reward * jnp.mean(model_losses.reward_loss)
            + scales.continuation * jnp.mean(model_losses.continuation_loss)
            + scales.dynamics * jnp.mean(model_losses.dynamics_loss)
            + scales.representation * jnp.mean(model_losses.representation_loss)
            + scales.policy * behaviour_losses.policy_loss
            + scales.value * behaviour_losses.value_loss
            + scales.replay_value * behaviour_losses.replay_value_loss
        )
        if model.mask_actions:
            total = total + scales.action_mask * jnp.mean(model_losses.action_mask_loss)
        return total, (posterior, model_losses, behaviour_losses, scale)

    return objective
