"""TD3 on the shared off-policy loop: Gaussian exploration, smoothed clipped double-Q targets,
and the actor and both target networks updated every `policy_delay` critic updates.

One update per tick: sample a minibatch, the target from the target networks, a critic step
towards it, then every `policy_delay`-th update the actor step and both targets' Polyak update.

With memory the networks are recurrent and read through `ajax.agents.recurrent`'s sequence
reader, as SAC's are; the replay and the collector are SAC's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
from flax import struct

from ajax.agents.loop import ActorCriticLogs, RunSettings, TrainLoop, actor_step, critic_step, when
from ajax.agents.recurrent import example_inputs, recurrent_evaluation, replay_network
from ajax.agents.SAC.core import polyak
from ajax.agents.SAC.train_SAC import ReplayActorCritic, ValueAuxiliaries, empty_collector
from ajax.agents.TD3.core import clipped_double_q_target, deterministic_policy_loss, smoothed_target_action
from ajax.agents.TD3.state import TD3Config
from ajax.buffers.sequence import SequenceStep
from ajax.environments.interaction import ActionPipeline, Transition, gaussian_exploration
from ajax.evaluate import EvalPolicy
from ajax.modules.pid_actor import PIDPolicy, pid_actor
from ajax.networks.actor_critic import DeterministicActor, QEnsemble
from ajax.networks.optim import new_train_state
from ajax.state import BaseAgentState, LoopTrainState


@struct.dataclass
class PolicyAuxiliaries:
    policy_loss: jax.Array
    actor_grad_norm: jax.Array


@dataclass(frozen=True)
class TwinDelayedActorCritic(ReplayActorCritic):
    """A deterministic actor and two Q-critics, each with a target copy, and a replay.

    The actor is a deterministic PID (`ajax.modules.pid_actor`) when the architecture is a `PIDPolicy`.
    """

    config: TD3Config

    @property
    def actor(self) -> nn.Module:
        architecture = self.network_args.actor_architecture
        if isinstance(architecture, PIDPolicy):
            return pid_actor(architecture, self.env_args, "deterministic")
        return replay_network(
            DeterministicActor(architecture, self.env_args.action_dim),
            self.memory,
            self.network_args.encoder,
            self.env_args.observation_parts,
        )

    @property
    def critic(self) -> nn.Module:
        return replay_network(
            QEnsemble(self.network_args.critic_architecture, n=2),
            self.memory,
            self.network_args.encoder,
            self.env_args.observation_parts,
        )

    def init(self, key: jax.Array) -> BaseAgentState:
        """Both networks with their target copies, and the collector with an empty replay."""
        rng, actor_key, critic_key, env_key, eval_key = jax.random.split(key, 5)
        actor_inputs = example_inputs(self.memory, self.env_args)
        critic_inputs = example_inputs(self.memory, self.env_args, self.env_args.action_dim)
        return BaseAgentState(
            rng=rng,
            actor_state=new_train_state(
                self.actor, actor_key, self.actor_optimizer_args, *actor_inputs, with_target=True
            ),
            critic_state=new_train_state(
                self.critic, critic_key, self.critic_optimizer_args, *critic_inputs, with_target=True
            ),
            collector_state=empty_collector(env_key, self.env_args, self.buffer, self.memory, self.config.sequences),
            eval_rng=eval_key,
            n_updates=jnp.zeros((), jnp.int32),
            n_logs=jnp.zeros((), jnp.int32),
        )

    def policy(self, state: BaseAgentState, obs: jax.Array) -> jax.Array:
        return self.actor.apply(state.actor_state.params, obs)

    def sample(self, state: BaseAgentState, key: jax.Array) -> Transition | SequenceStep:
        """A minibatch from the replay: transitions, or windows of trajectory with memory."""
        return self.buffer.sample(state.collector_state.buffer_state, key)

    def target(self, state: BaseAgentState, batch: Transition | SequenceStep, key: jax.Array) -> jax.Array:
        """y from the target networks alone: the min of the target critics at the target actor's
        smoothed action at s' (eq. 10 and 14).

        With memory the target actor burns in a carry of its own, as the online one does.
        """
        config, reader = self.config, self.reader
        next_action = smoothed_target_action(
            reader.at_next_obs(self.actor, state.actor_state.target_params, batch, actor=True),
            key,
            config.target_policy_noise,
            config.target_noise_clip,
        )
        next_q = reader.at_next_obs(self.critic, state.critic_state.target_params, batch, next_action)
        trained = reader.trained(batch)
        return clipped_double_q_target(trained.reward, trained.terminated, next_q, config.gamma)

    def critic_update(
        self, state: BaseAgentState, batch: Transition | SequenceStep, target: jax.Array
    ) -> tuple[LoopTrainState, ValueAuxiliaries, dict[str, jax.Array]]:
        """A step of both critics towards `target`; their target copy waits for the delayed update."""
        trained = self.reader.trained(batch)

        def td_loss(params: Any, target: jax.Array) -> tuple[jax.Array, jax.Array]:
            q = self.reader.at_obs(self.critic, params, batch, trained.action)
            return jnp.sum(jnp.mean(jnp.square(q - target), axis=tuple(range(1, q.ndim)))), jnp.mean(q)

        critic_state, loss, q_mean, norm, metrics = critic_step(
            state.critic_state, td_loss, target, trained, state, self.extensions
        )
        return critic_state, ValueAuxiliaries(loss, q_mean, norm), metrics

    def delayed_update(
        self,
        state: BaseAgentState,
        batch: Transition | SequenceStep,
        networks: tuple[LoopTrainState, LoopTrainState],
    ) -> tuple[tuple[LoopTrainState, LoopTrainState], tuple[PolicyAuxiliaries, dict[str, jax.Array]]]:
        """The actor step against the first of the updated critics, then both targets' Polyak
        update: what Algorithm 1 does every `policy_delay`-th update. `networks` are the actor's
        and the critics' states."""
        actor_state, critic_state = networks
        tau = self.config.tau

        def policy_loss(params: Any) -> tuple[jax.Array, tuple[()]]:
            action = self.reader.at_obs(self.actor, params, batch, actor=True)
            q = self.reader.at_obs(self.critic, critic_state.params, batch, action)
            return deterministic_policy_loss(q[0]), ()

        actor_state, loss, _, norm, metrics = actor_step(
            actor_state, policy_loss, self.reader.trained(batch), state, self.extensions
        )
        actor_state = actor_state.replace(target_params=polyak(actor_state.target_params, actor_state.params, tau))
        critic_state = critic_state.replace(target_params=polyak(critic_state.target_params, critic_state.params, tau))
        return (actor_state, critic_state), (PolicyAuxiliaries(loss, norm), metrics)

    def evaluation(self) -> EvalPolicy:
        """The actor's action, with no entropy to report; the critics' min for the value bias."""
        config = self.config
        if self.memory is not None:
            deterministic = lambda action: (action, jnp.zeros(action.shape[:-1]))  # noqa: E731
            minimum = lambda q: jnp.min(q, axis=0)  # noqa: E731
            return recurrent_evaluation(
                self.actor, self.critic, self.memory, deterministic, minimum, config.gamma, config.expert
            )

        def greedy(state: BaseAgentState, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
            return self.policy(state, obs), jnp.zeros(obs.shape[0])

        def value(state: BaseAgentState, obs: jax.Array, action: jax.Array) -> jax.Array:
            return jnp.min(self.critic.apply(state.critic_state.params, obs, action), axis=0)

        return EvalPolicy(greedy, value, config.gamma, expert=config.expert)

    def pipeline(self, total_timesteps: int) -> ActionPipeline:
        """SAC's action pipeline (`ajax.agents.SAC.action_pipeline`) around the actor's action plus
        Gaussian noise, whose schedule runs over `total_timesteps`."""
        config = self.config
        return config.action_pipeline.build(
            self.actor,
            self.policy,
            gaussian_exploration(config.exploration_noise),
            config.learning_starts,
            total_timesteps,
            stored_state=self.memory is not None and config.sequences.stored_state,
        )


def make_train(*, agent_config: TD3Config, run: RunSettings, **settings: Any):
    td3 = TwinDelayedActorCritic(config=agent_config, **settings)
    config = agent_config

    def update(state: BaseAgentState, transition: Transition) -> tuple[BaseAgentState, ActorCriticLogs]:
        del transition  # TD3 learns from replay; the loop has already stored the step
        state, (sample_key, noise_key) = state.next_keys(2)
        batch = td3.sample(state, sample_key)
        target = td3.target(state, batch, noise_key)
        critic_state, value_aux, critic_metrics = td3.critic_update(state, batch, target)
        (actor_state, critic_state), (policy_aux, actor_metrics) = when(
            state.n_updates % config.policy_delay == 0,
            lambda networks: td3.delayed_update(state, batch, networks),
            (state.actor_state, critic_state),
        )
        aux = ActorCriticLogs(policy_aux, value_aux, {**critic_metrics, **actor_metrics})
        return state.replace(actor_state=actor_state, critic_state=critic_state), aux

    loop = TrainLoop.create(td3.env_args, run, td3.extensions, td3.evaluation())
    return loop.off_policy(
        td3.init,
        update,
        config.learning_starts,
        td3.pipeline(run.total_timesteps),
        store=td3.buffer.add,
        schedule=config.schedule,
    )
