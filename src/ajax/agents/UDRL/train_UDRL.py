"""UDRL on TrainLoop.train: one iteration is a segment of acting on commands, then supervised updates.

An iteration, in the order Srivastava et al.'s Algorithm 1 runs:

1. act `n_steps` steps per env, sampling pi(a | s, c) with each env's command c, which the
   rewards update as they come (Algorithm 2) and which is drawn afresh from the command
   statistics at every episode start (exploration);
2. write the episodes that finished into the buffer and recompute the command
   statistics from its best `top_k` episodes;
3. `n_updates_per_iter` gradient steps on the negative log-likelihood of stored actions
   given their observation and the command they fulfilled (hindsight relabelling); then the
   loop's update counter and the extensions' post_update fold.

The loop evaluates the greedy policy every `log_frequency` steps, with the command carried
through each evaluation episode from the statistics' exploiting command.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp
from flax import struct

from ajax.agents.loop import RunSettings, TrainLoop, actor_step, when
from ajax.agents.UDRL.core import (
    exploiting_command,
    exploratory_command,
    scale_command,
    top_episode_statistics,
    update_command,
)
from ajax.agents.UDRL.episodes import (
    EpisodeBuffer,
    SegmentStep,
    advance,
    empty_episodes,
    sample_relabelled,
    write_segment,
)
from ajax.agents.UDRL.networks import CommandConditionedPolicy
from ajax.agents.UDRL.state import CommandStatistics, UDRLConfig, UDRLState
from ajax.environments.interaction import collect_experience, init_collector
from ajax.evaluate import EvalPolicy, PolicyCarry
from ajax.extensions import ExtensionStack
from ajax.networks.encoders import encoded
from ajax.networks.optim import new_train_state
from ajax.perf_utils import final_aux_scan
from ajax.state import EnvironmentConfig, LoopTrainState, NetworkConfig, OptimizerConfig

Policy = Callable[[Any, jax.Array, jax.Array], distrax.Distribution]  # (params, obs, command) -> pi(. | s, c)


@struct.dataclass
class PolicyAuxiliaries:
    policy_loss: jax.Array  # the negative log-likelihood of the stored actions
    entropy: jax.Array
    actor_grad_norm: jax.Array


@struct.dataclass
class CommandAuxiliaries:
    top_return_mean: jax.Array
    top_return_std: jax.Array
    top_horizon: jax.Array
    finished_episodes: jax.Array  # in the buffer


@struct.dataclass
class AuxiliaryLogs:
    policy: PolicyAuxiliaries
    commands: CommandAuxiliaries
    extensions: dict  # the actor_loss extensions' metrics (imitation/loss), logged under their own names


@struct.dataclass
class RelabelledBatch:
    """Replayed steps with the command each one fulfilled; an actor_loss extension reads `obs`."""

    obs: jax.Array
    command: jax.Array
    action: jax.Array


def make_train(
    *,
    env_args: EnvironmentConfig,
    network_args: NetworkConfig,
    actor_optimizer_args: OptimizerConfig,
    agent_config: UDRLConfig,
    extensions: ExtensionStack,
    run: RunSettings,
):
    config = agent_config
    n_envs = env_args.n_envs
    network = encoded(
        CommandConditionedPolicy(network_args.actor_architecture, env_args.action_dim, env_args.continuous),
        network_args.encoder,
        env_args.observation_parts,
        env_args.action_masked,
    )

    def init(key: jax.Array) -> UDRLState:
        return initial_state(key, network, actor_optimizer_args, env_args, config)

    def policy(params: Any, obs: jax.Array, command: jax.Array) -> distrax.Distribution:
        """pi(. | s, c), the command scaled to the network's input range."""
        return network.apply(params, obs, scale_command(command, config.return_scale, config.horizon_scale))

    # 1. Acting on commands --------------------------------------------------------------
    def behaviour(state: UDRLState, obs: jax.Array, key: jax.Array):
        action = policy(state.actor_state.params, obs, state.command).sample(seed=key)
        return in_action_space(action, env_args.continuous), ()

    def act(state: UDRLState, _) -> tuple[UDRLState, SegmentStep]:
        return_before, buffer = state.collector_state.episodic_return, state.episodes
        state, transition = collect_experience(state, behaviour, env_args)
        done = transition.terminated | transition.truncated
        state, (command_key,) = state.next_keys(1)
        command = next_commands(state, transition.reward, done, command_key)
        record = SegmentStep(
            obs=transition.obs,
            action=transition.action,
            return_before=return_before,
            episode=buffer.episode,
            step=buffer.step,
            done=done,
            episode_return=return_before + transition.reward,
        )
        return state.replace(command=command, episodes=advance(buffer, done)), record

    # 3. Supervised updates on relabelled steps -------------------------------------------
    def learn(state: UDRLState) -> tuple[UDRLState, AuxiliaryLogs]:
        episodes = state.episodes

        def gradient_update(actor_state: LoopTrainState, key: jax.Array):
            batch = RelabelledBatch(*sample_relabelled(episodes, key, config.batch_size))

            def negative_log_likelihood(params):
                pi = policy(params, batch.obs, batch.command)
                return -jnp.mean(pi.log_prob(batch.action)), jnp.mean(pi.entropy())

            # An actor_loss extension calls the actor as pi(. | s) on the batch's states: here
            # the behaviour function at the command each replayed step fulfilled.
            at_commands = actor_state.replace(apply_fn=lambda params, obs: policy(params, obs, batch.command))
            actor_state, loss, entropy, norm, metrics = actor_step(
                actor_state, negative_log_likelihood, batch, state.replace(actor_state=at_commands), extensions
            )
            return actor_state, (PolicyAuxiliaries(loss, entropy, norm), metrics)

        def updates(actor_state: LoopTrainState, key: jax.Array):
            return final_aux_scan(gradient_update, actor_state, jax.random.split(key, config.n_updates_per_iter))

        state, (key,) = state.next_keys(1)
        # A fresh run may end its first segment before any episode has: nothing to learn from yet.
        actor_state, (policy_aux, metrics) = when(jnp.any(episodes.length > 0), updates, state.actor_state, key)
        aux = AuxiliaryLogs(policy_aux, command_auxiliaries(state.command_statistics, episodes), metrics)
        return state.replace(actor_state=actor_state), aux

    loop = TrainLoop.create(env_args, run, extensions, command_conditioned_evaluation(policy, env_args.continuous))
    update = loop.updated(learn)

    def iteration(state: UDRLState) -> tuple[UDRLState, AuxiliaryLogs]:
        state, segment = jax.lax.scan(act, state, None, length=config.n_steps)
        return update(remember(state, segment, config.top_k))

    per_segment = config.n_steps * n_envs
    return loop.train(init, iteration, loop.rollouts(per_segment), steps_per_iteration=per_segment)


def initial_state(
    key: jax.Array,
    network: nn.Module,
    actor_optimizer_args: OptimizerConfig,
    env_args: EnvironmentConfig,
    config: UDRLConfig,
) -> UDRLState:
    """No critic, an empty episode buffer, and statistics of no episode yet, from which each env
    draws its first exploratory command."""
    rng, actor_key, env_key, eval_key, command_key = jax.random.split(key, 5)
    statistics = CommandStatistics(jnp.zeros(()), jnp.zeros(()), jnp.ones(()))  # no episode yet
    return UDRLState(
        rng=rng,
        actor_state=new_train_state(
            network, actor_key, actor_optimizer_args, env_args.observation_zeros(1), jnp.zeros((1, 2))
        ),
        critic_state=None,
        collector_state=init_collector(env_key, env_args),
        eval_rng=eval_key,
        n_updates=jnp.zeros((), jnp.int32),
        n_logs=jnp.zeros((), jnp.int32),
        episodes=empty_episodes(env_args, config.buffer_size),
        command=exploratory_command(statistics, command_key, env_args.n_envs),
        command_statistics=statistics,
    )


def in_action_space(action: jax.Array, continuous: bool) -> jax.Array:
    """A Gaussian's action clipped to the agent's [-1, 1]: what the env receives and the buffer
    stores, in training and in evaluation alike."""
    return jnp.clip(action, -1.0, 1.0) if continuous else action


def next_commands(state: UDRLState, reward: jax.Array, done: jax.Array, key: jax.Array) -> jax.Array:
    """Each env's command after a step: the reward taken off it (Algorithm 2), or where the
    episode ended a fresh exploratory one for the next, drawn from the current statistics."""
    return jnp.where(
        done[:, None],
        exploratory_command(state.command_statistics, key, done.shape[0]),
        update_command(state.command, reward),
    )


# 2. The buffer and the command statistics -------------------------------------------------
def remember(state: UDRLState, segment: SegmentStep, top_k: int) -> UDRLState:
    """The segment's finished episodes written into the buffer, and the command statistics
    recomputed from its best `top_k`."""
    episodes = write_segment(state.episodes, segment)
    statistics = top_episode_statistics(episodes.episode_return, episodes.length, top_k)
    return state.replace(episodes=episodes, command_statistics=statistics)


def command_auxiliaries(statistics: CommandStatistics, episodes: EpisodeBuffer) -> CommandAuxiliaries:
    """What the commands are drawn from, and how many finished episodes the buffer holds."""
    return CommandAuxiliaries(
        statistics.return_mean, statistics.return_std, statistics.horizon, jnp.sum(episodes.length > 0)
    )


def command_conditioned_evaluation(policy: Policy, continuous: bool) -> EvalPolicy:
    """The greedy action of pi(a | s, c), c starting at the exploiting command and updated by every reward."""

    def greedy(state: UDRLState, obs: jax.Array, command: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        pi = policy(state.actor_state.params, obs, command)
        return in_action_space(pi.mode(), continuous), pi.entropy(), command

    carry = PolicyCarry(init=lambda state, n: exploiting_command(state.command_statistics, n), advance=update_command)
    return EvalPolicy(greedy, carry=carry)
