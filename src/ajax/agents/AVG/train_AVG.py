"""AVG on the shared off-policy loop: one incremental update per sample, nothing stored.

Per tick, on the step the loop just collected: merge the observation and return
statistics; a critic step on the scaled soft TD error, bootstrapped from the online
critic; an actor step on SAC's soft policy loss against the updated critic. Both
networks see normalised observations and unit-norm penultimate features, and both use
Adam without momentum (beta1 = 0), as the paper prescribes for single-sample updates.

A PID actor (`actor_architecture=PIDPolicy(...)`) reads the observation unnormalised, its
error terms in the env's units, as a PID's gains expect; the critic's stays normalised.
Behind an image encoder neither network normalises: both read the frame as the encoder
does (8-bit pixels over 255), as SAC's do, rather than standardise each pixel apart.

One departure from the paper's listing: the actor's reparameterised action is drawn
afresh at s rather than reusing the noise that produced the executed action, which the
loop does not keep; both are samples of pi(.|s).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
from flax import struct

from ajax.agents.AVG.core import scaled_td_loss, td_scale
from ajax.agents.AVG.state import AVGConfig, AVGState, RunningMoments
from ajax.agents.loop import ActorCriticLogs, RunSettings, TrainLoop, actor_step, critic_step
from ajax.agents.SAC.core import soft_policy_loss, soft_q_target
from ajax.agents.SAC.train_SAC import PolicyAuxiliaries
from ajax.agents.updates_owed import UpdatesOwed
from ajax.environments.interaction import Transition, explore_pipeline, init_collector, sample_policy
from ajax.evaluate import EvalPolicy
from ajax.extensions import ExtensionStack
from ajax.modules.pid_actor import PIDPolicy, pid_actor
from ajax.networks.actor_critic import QCritic, SquashedGaussianActor
from ajax.networks.encoders import encoded
from ajax.networks.optim import make_optimizer, new_train_state
from ajax.state import EnvironmentConfig, LoopTrainState, NetworkConfig, OptimizerConfig


@struct.dataclass
class ValueAuxiliaries:
    critic_loss: jax.Array
    q_mean: jax.Array
    td_scale: jax.Array
    critic_grad_norm: jax.Array


def make_train(
    *,
    env_args: EnvironmentConfig,
    network_args: NetworkConfig,
    actor_optimizer_args: OptimizerConfig,
    critic_optimizer_args: OptimizerConfig,
    agent_config: AVGConfig,
    extensions: ExtensionStack,
    run: RunSettings,
):
    config = agent_config
    reads_raw = isinstance(network_args.actor_architecture, PIDPolicy)
    normalizes = network_args.encoder is None
    actor, critic = avg_networks(env_args, network_args)
    obs_example = env_args.observation_zeros(1)
    action_example = jnp.zeros((1, env_args.action_dim))

    def init(key: jax.Array) -> AVGState:
        rng, actor_key, critic_key, env_key, eval_key = jax.random.split(key, 5)
        log_alpha = {"log_alpha": jnp.log(jnp.asarray(config.alpha, jnp.float32))}
        return AVGState(
            rng=rng,
            actor_state=new_train_state(actor, actor_key, actor_optimizer_args, obs_example),
            critic_state=new_train_state(critic, critic_key, critic_optimizer_args, obs_example, action_example),
            collector_state=init_collector(env_key, env_args),
            eval_rng=eval_key,
            n_updates=jnp.zeros((), jnp.int32),
            n_logs=jnp.zeros((), jnp.int32),
            # The temperature is fixed: its state is read, never stepped.
            alpha=LoopTrainState.create(apply_fn=None, params=log_alpha, tx=make_optimizer(OptimizerConfig(0.0))),
            obs_moments=RunningMoments.create((env_args.observation_dim,) if normalizes else ()),
            reward_moments=RunningMoments.create(),
            discount_moments=RunningMoments.create(),
            return_moments=RunningMoments.create(),
            returns=jnp.zeros(env_args.n_envs),
        )

    def critic_view(state: AVGState, obs: jax.Array) -> jax.Array:
        """What the critic reads: the normalised observation, or a frame as its encoder reads it."""
        return state.obs_moments.normalize(obs) if normalizes else obs

    def actor_view(state: AVGState, obs: jax.Array) -> jax.Array:
        """What the actor reads: the critic's view, or a PID actor's raw observation."""
        return obs if reads_raw else critic_view(state, obs)

    def policy(state: AVGState, obs: jax.Array):
        return actor.apply(state.actor_state.params, actor_view(state, obs))

    def update(state: AVGState, transition: Transition) -> tuple[AVGState, ActorCriticLogs]:
        state = merge_statistics(state, transition, config.gamma, normalizes)
        state, (next_key, actor_key) = state.next_keys(2)
        alpha = jnp.exp(state.alpha.params["log_alpha"])
        sigma = td_scale(state.reward_moments, state.discount_moments, state.return_moments)
        batch = transition.replace(
            obs=critic_view(state, transition.obs), next_obs=critic_view(state, transition.next_obs)
        )

        next_action, next_log_prob = policy(state, transition.next_obs).sample_and_log_prob(seed=next_key)
        next_q = critic.apply(state.critic_state.params, batch.next_obs, next_action)
        target = soft_q_target(batch.reward, batch.terminated, next_q, next_log_prob, alpha, config.gamma)

        def td_loss(params, target):
            q = critic.apply(params, batch.obs, batch.action)
            return scaled_td_loss(target, q, sigma), jnp.mean(q)

        critic_state, critic_loss, q_mean, critic_norm, critic_metrics = critic_step(
            state.critic_state, td_loss, target, batch, state, extensions
        )

        actor_batch = batch.replace(obs=transition.obs) if reads_raw else batch

        def policy_loss(params):
            action, log_prob = actor.apply(params, actor_batch.obs).sample_and_log_prob(seed=actor_key)
            return soft_policy_loss(alpha, log_prob, critic.apply(critic_state.params, batch.obs, action)), log_prob

        actor_state, actor_loss, log_prob, actor_norm, actor_metrics = actor_step(
            state.actor_state, policy_loss, actor_batch, state, extensions
        )
        aux = ActorCriticLogs(
            PolicyAuxiliaries(actor_loss, jnp.mean(log_prob), actor_norm),
            ValueAuxiliaries(critic_loss, q_mean, sigma, critic_norm),
            {**critic_metrics, **actor_metrics},
        )
        return state.replace(actor_state=actor_state, critic_state=critic_state), aux

    loop = TrainLoop.create(env_args, run, extensions, evaluation_policy(policy, critic_view, critic, config))
    incremental = UpdatesOwed.replay(train_freq=1, gradient_steps=1, n_envs=env_args.n_envs)  # one update per tick
    return loop.off_policy(init, update, 0, explore_pipeline(sample_policy, policy, env_args), schedule=incremental)


def avg_networks(env_args: EnvironmentConfig, network_args: NetworkConfig) -> tuple[nn.Module, nn.Module]:
    """The squashed Gaussian actor (a PID one for a `PIDPolicy`) and the single Q-critic, both
    with unit-norm penultimate features, which the paper prescribes for its single-sample updates,
    each behind its own image encoder when one is set."""
    architecture = network_args.actor_architecture
    if isinstance(architecture, PIDPolicy):
        actor = pid_actor(architecture, env_args, "squashed")
    else:
        actor = SquashedGaussianActor(architecture, env_args.action_dim, normalize_features=True)
    critic = QCritic(network_args.critic_architecture, normalize_features=True)
    encoder, parts = network_args.encoder, env_args.observation_parts
    return encoded(actor, encoder, parts), encoded(critic, encoder, parts)


def merge_statistics(state: AVGState, transition: Transition, gamma: float, normalizes: bool) -> AVGState:
    """The running statistics merged with the step just collected, before the update reads them:
    the next observation's moments (the networks' normalisation, when they normalise), and the
    reward's, discount's and squared return's (the TD error's scale), each env's return so far
    restarting at an episode's end."""
    discount = gamma * (1.0 - transition.terminated.astype(jnp.float32))
    returns = transition.reward + gamma * state.returns
    return state.replace(
        obs_moments=state.obs_moments.update(transition.next_obs) if normalizes else state.obs_moments,
        reward_moments=state.reward_moments.update(transition.reward),
        discount_moments=state.discount_moments.update(discount),
        return_moments=state.return_moments.update(jnp.square(returns)),
        returns=jnp.where(transition.terminated | transition.truncated, 0.0, returns),
    )


def evaluation_policy(
    policy: Callable[[AVGState, jax.Array], Any],
    critic_view: Callable[[AVGState, jax.Array], jax.Array],
    critic: nn.Module,
    config: AVGConfig,
) -> EvalPolicy:
    """The policy's mode with its entropy; the critic reads the observation as it did in training
    (normalised by the statistics training left). `policy` is `make_train`'s, pi(.|s) from an
    observation."""

    def greedy(state: AVGState, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        pi = policy(state, obs)
        return pi.mode(), pi.entropy()

    def value(state: AVGState, obs: jax.Array, action: jax.Array) -> jax.Array:
        return critic.apply(state.critic_state.params, critic_view(state, obs), action)

    return EvalPolicy(greedy, value, config.gamma, expert=config.expert)
