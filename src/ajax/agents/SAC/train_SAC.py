"""SAC on the shared off-policy loop: replay, clipped double-Q soft targets, learned temperature.

One update per tick: sample a minibatch, a critic step towards the soft target, a
reparameterised actor step against the updated critics, a temperature step, then the
Polyak update of the target critics.

`SoftActorCritic` holds the parts SAC's descendants reuse unchanged (the networks, the
replay, the initial state, the actor and temperature steps, the evaluation), so ASAC's and
REDQ's update functions hold only what their papers change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
from flax import struct

from ajax.agents.loop import RunSettings, TrainLoop, critic_step
from ajax.agents.recurrent import (
    FEED_FORWARD,
    Reader,
    SequenceTraining,
    example_inputs,
    recurrent_collector,
    recurrent_evaluation,
    replay_network,
)
from ajax.agents.SAC.action_pipeline import make_action_pipeline as make_action_pipeline  # the README imports it here
from ajax.agents.SAC.core import (
    SquashedGaussianActor,
    polyak,
    soft_actor_step,
    soft_q_target,
    temperature_loss,
    temperature_step,
)
from ajax.agents.SAC.state import SACConfig, SoftACState
from ajax.buffers import ReplayBuffer
from ajax.buffers.sequence import SequenceReplay, SequenceStep
from ajax.environments.interaction import (
    ActionPipeline,
    Transition,
    collect_experience,
    init_collector,
    sample_policy,
)
from ajax.environments.obs_norm import raw_observation
from ajax.evaluate import EvalPolicy, ValueEstimate
from ajax.extensions import ExtensionStack
from ajax.modules.pid_actor import PIDPolicy, pid_actor
from ajax.networks.actor_critic import QEnsemble, StateDependentNoiseActor
from ajax.networks.hyperspherical import HypersphericalActor, HypersphericalEnsemble, SimbaV2Network
from ajax.networks.memory import MemoryConfig
from ajax.networks.optim import make_optimizer, new_train_state, projected
from ajax.state import CollectorState, EnvironmentConfig, LoopTrainState, NetworkConfig, OptimizerConfig


@struct.dataclass
class PolicyAuxiliaries:
    policy_loss: jax.Array
    log_prob: jax.Array
    actor_grad_norm: jax.Array


@struct.dataclass
class ValueAuxiliaries:
    critic_loss: jax.Array
    q_mean: jax.Array
    critic_grad_norm: jax.Array


@struct.dataclass
class TemperatureAuxiliaries:
    alpha: jax.Array
    alpha_loss: jax.Array


@struct.dataclass
class AuxiliaryLogs:
    policy: PolicyAuxiliaries
    value: ValueAuxiliaries
    temperature: TemperatureAuxiliaries
    extensions: dict


def replay_buffer(
    buffer_size: int, batch_size: int, sequences: SequenceTraining | None, n_envs: int
) -> ReplayBuffer | SequenceReplay:
    """The replay of an off-policy actor-critic: transitions, or with memory (`sequences`) each
    env's trajectory, a batch being `batch_size` steps in windows of `sequence_length`.

    Here rather than in SAC's class so that TD3, whose replay is the same, builds it too.
    """
    if sequences is None:
        return ReplayBuffer(buffer_size, batch_size)
    n_sequences = batch_size // sequences.sequence_length
    return SequenceReplay(buffer_size, n_envs, n_sequences, sequences.window)


def empty_collector(
    key: jax.Array,
    env_args: EnvironmentConfig,
    buffer: ReplayBuffer | SequenceReplay,
    memory: MemoryConfig | None,
    sequences: SequenceTraining | None,
) -> CollectorState:
    """The collector with `buffer` empty; with memory it carries the actor's memory, and a
    stored-state replay keeps its carry. Shared with TD3, which collects the same way."""
    if memory is None:
        return init_collector(key, env_args, buffer.init(env_args))
    return recurrent_collector(key, env_args, buffer, sequences)


@dataclass(frozen=True)
class ReplayActorCritic:
    """An actor, critics and a replay built from an agent's static settings: SAC's and TD3's parts.

    With memory both networks are recurrent and the replay keeps trajectories
    (`ajax.agents.recurrent`); the updates read the networks through `reader` either way.
    """

    env_args: EnvironmentConfig
    network_args: NetworkConfig
    actor_optimizer_args: OptimizerConfig
    critic_optimizer_args: OptimizerConfig
    config: Any  # the agent's config: buffer_size, batch_size and sequences read here
    extensions: ExtensionStack

    @property
    def memory(self) -> MemoryConfig | None:
        return self.network_args.memory

    @property
    def reader(self) -> Reader:
        return FEED_FORWARD if self.config.sequences is None else self.config.sequences

    @property
    def buffer(self) -> ReplayBuffer | SequenceReplay:
        config = self.config
        return replay_buffer(config.buffer_size, config.batch_size, config.sequences, self.env_args.n_envs)


@dataclass(frozen=True)
class SoftActorCritic(ReplayActorCritic):
    """A squashed Gaussian actor, an ensemble of `config.n_critics` Q-critics, a replay, alpha.

    The actor is a squashed Gaussian PID (`ajax.modules.pid_actor`) when the architecture is a `PIDPolicy`.
    A `SimbaV2Network` architecture builds SimbaV2's hyperspherical actor or critics, whose kernels
    are projected back to unit norm after init and after every step of their network.
    """

    config: SACConfig
    temperature_loss = staticmethod(temperature_loss)  # the temperature's objective (SimbaV2's differs)

    @property
    def actor(self) -> nn.Module:
        architecture = self.network_args.actor_architecture
        if isinstance(architecture, PIDPolicy):
            return pid_actor(architecture, self.env_args, "squashed")
        if self.config.use_sde:
            return StateDependentNoiseActor(
                self.network_args.actor_architecture, self.env_args.action_dim, self.config.log_std_init
            )
        if isinstance(architecture, SimbaV2Network):
            head = HypersphericalActor(architecture, self.env_args.action_dim)
        else:
            head = SquashedGaussianActor(architecture, self.env_args.action_dim)
        return replay_network(head, self.memory, self.network_args.encoder, self.env_args.observation_parts)

    def critic(self, n: int | None = None) -> nn.Module:
        """The ensemble, or a same-shaped one of `n` members for a subset of its parameters."""
        architecture, n = self.network_args.critic_architecture, self.config.n_critics if n is None else n
        if isinstance(architecture, SimbaV2Network):
            head = HypersphericalEnsemble(architecture, n)
        else:
            head = QEnsemble(architecture, n=n)
        return replay_network(head, self.memory, self.network_args.encoder, self.env_args.observation_parts)

    def init(self, key: jax.Array, state_class: type[SoftACState] = SoftACState, **fields: Any) -> SoftACState:
        rng, actor_key, critic_key, env_key, eval_key, noise_key = jax.random.split(key, 6)
        action_dim = self.env_args.action_dim
        log_alpha = {"log_alpha": jnp.log(jnp.asarray(self.config.alpha_init, jnp.float32))}
        alpha_optimizer = make_optimizer(OptimizerConfig(self.config.alpha_learning_rate))
        actor_inputs = example_inputs(self.memory, self.env_args)
        actor_state = projected(new_train_state(self.actor, actor_key, self.actor_optimizer_args, *actor_inputs))
        if self.config.use_sde:
            fields = {**fields, "exploration_noise": self.exploration_noise(actor_state, noise_key)}
        critic_inputs = example_inputs(self.memory, self.env_args, action_dim)
        return state_class(
            rng=rng,
            actor_state=actor_state,
            critic_state=projected(
                new_train_state(
                    self.critic(), critic_key, self.critic_optimizer_args, *critic_inputs, with_target=True
                ),
                with_target=True,
            ),
            collector_state=self.init_collector(env_key),
            eval_rng=eval_key,
            n_updates=jnp.zeros((), jnp.int32),
            n_logs=jnp.zeros((), jnp.int32),
            alpha=LoopTrainState.create(apply_fn=None, params=log_alpha, tx=alpha_optimizer),
            **fields,
        )

    def exploration_noise(self, actor_state: LoopTrainState, key: jax.Array) -> jax.Array:
        """A fresh draw of gSDE's exploration matrices, one per env copy, in units of sigma."""
        shape = actor_state.params["params"]["log_std"].shape
        return jax.random.normal(key, (self.env_args.n_envs, *shape))

    def redraw_noise(self, state: SoftACState) -> SoftACState:
        """gSDE's new exploration matrices for the next round (Stable-Baselines3's sde_sample_freq=-1)."""
        state, (key,) = state.next_keys(1)
        return state.replace(exploration_noise=self.exploration_noise(state.actor_state, key))

    def init_collector(self, key: jax.Array) -> CollectorState:
        """The collector with an empty replay; it counts episode steps if an extension reads them.

        With memory it carries the actor's memory, and a stored-state replay keeps its carry.
        """
        collector = empty_collector(key, self.env_args, self.buffer, self.memory, self.config.sequences)
        if self.extensions.reads_episode_steps:
            collector = collector.replace(episode_steps=jnp.zeros((self.env_args.n_envs,), jnp.int32))
        return collector

    def with_expert_replay(self, state: SoftACState) -> SoftACState:
        """The replay filled with `expert_buffer_n_steps` of the expert's experience, before training.

        The expert acts in copies of the env of their own, started from keys drawn from the
        state; the steps are not counted in the run's timesteps.
        """
        n_steps = self.config.expert_buffer_n_steps
        if not n_steps:
            return state
        expert = self.config.expert
        state, (env_key,) = state.next_keys(1)
        collector = init_collector(env_key, self.env_args, state.collector_state.buffer_state)
        filler = state.replace(collector_state=collector.replace(normalizer=state.collector_state.normalizer))

        def act(state: SoftACState, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, Any]:
            return expert(raw_observation(state.collector_state.normalizer, obs)), ()

        def tick(filler: SoftACState, _: None) -> tuple[SoftACState, None]:
            filler, transition = collect_experience(filler, act, self.env_args)
            return self.buffer.add(filler, transition), None

        ticks = -(-n_steps // self.env_args.n_envs)
        filler, _ = jax.lax.scan(tick, filler, None, length=ticks)
        buffer_state = filler.collector_state.buffer_state
        return state.replace(rng=filler.rng, collector_state=state.collector_state.replace(buffer_state=buffer_state))

    def policy(self, state: SoftACState, obs: jax.Array):
        return self.actor.apply(state.actor_state.params, obs)

    @staticmethod
    def alpha(state: SoftACState) -> jax.Array:
        return jnp.exp(state.alpha.params["log_alpha"])

    def sample(self, state: SoftACState, key: jax.Array) -> Transition | SequenceStep:
        """A minibatch from the replay: transitions, or windows of trajectory with memory; the
        rewards times `reward_scaling` (Brax's), so every descendant's target reads them scaled."""
        batch = self.buffer.sample(state.collector_state.buffer_state, key)
        scaling = self.config.reward_scaling
        if scaling == 1.0:
            return batch
        if isinstance(batch, SequenceStep):
            return batch.replace(transition=batch.transition.replace(reward=batch.transition.reward * scaling))
        return batch.replace(reward=batch.reward * scaling)

    def next_policy(self, state: SoftACState, batch: Transition | SequenceStep):
        """pi(.|s') at every next observation of the minibatch, under the current parameters."""
        return self.reader.at_next_obs(self.actor, state.actor_state.params, batch, actor=True)

    def q_values(self, params: Any, batch: Transition | SequenceStep, action: jax.Array, n: int | None = None):
        """Every critic's Q(s, `action`) at the minibatch's observations: axis 0 is the critic."""
        return self.reader.at_obs(self.critic(n), params, batch, action)

    def next_q_values(self, params: Any, batch: Transition | SequenceStep, action: jax.Array, n: int | None = None):
        """Every critic's Q(s', `action`) at the minibatch's next observations."""
        return self.reader.at_next_obs(self.critic(n), params, batch, action)

    def next_values(
        self, state: SoftACState, batch: Transition | SequenceStep, key: jax.Array, params: Any
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """a' ~ pi(.|s'), log pi(a'|s') and min_i Q_i(s', a') under `params`: what a soft target reads."""
        next_action, next_log_prob = self.next_policy(state, batch).sample_and_log_prob(seed=key)
        return next_action, next_log_prob, jnp.min(self.next_q_values(params, batch, next_action), axis=0)

    @staticmethod
    def critic_loss(q: jax.Array, target: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Half the squared TD error, summed over the ensemble; and the mean Q (TQC's loss differs)."""
        return 0.5 * jnp.sum(jnp.mean(jnp.square(q - target), axis=tuple(range(1, q.ndim)))), jnp.mean(q)

    def critic_update(
        self, state: SoftACState, batch: Transition | SequenceStep, target: jax.Array
    ) -> tuple[LoopTrainState, ValueAuxiliaries, dict[str, jax.Array]]:
        """A critic step of every ensemble member towards `target` on `critic_loss`, then the Polyak update."""
        trained = self.reader.trained(batch)

        def td_loss(params: Any, target: jax.Array) -> tuple[jax.Array, jax.Array]:
            return self.critic_loss(self.q_values(params, batch, trained.action), target)

        critic_state, loss, q_mean, norm, metrics = critic_step(
            state.critic_state, td_loss, target, trained, state, self.extensions
        )
        critic_state = projected(critic_state)  # SimbaV2's kernels back on the sphere; the target is not
        critic_state = critic_state.replace(
            target_params=polyak(critic_state.target_params, critic_state.params, self.config.tau)
        )
        return critic_state, ValueAuxiliaries(loss, q_mean, norm), metrics

    def actor_update(
        self,
        state: SoftACState,
        batch: Transition | SequenceStep,
        key: jax.Array,
        q_value: Callable[[jax.Array], jax.Array],
    ) -> tuple[SoftACState, PolicyAuxiliaries, TemperatureAuxiliaries, dict[str, jax.Array]]:
        """The actor step against `q_value(actions)` at the minibatch's observations, then the
        temperature step on its log-probabilities."""
        alpha = self.alpha(state)
        policy = lambda params: self.reader.at_obs(self.actor, params, batch, actor=True)  # noqa: E731
        actor_state, loss, log_prob, norm, metrics = soft_actor_step(
            state.actor_state, policy, q_value, alpha, self.reader.trained(batch), key, state, self.extensions
        )
        actor_state = projected(actor_state)
        alpha_state, alpha_loss = state.alpha, jnp.zeros(())
        if self.config.learn_alpha:
            alpha_state, alpha_loss = temperature_step(
                state.alpha, log_prob, self.config.target_entropy, self.temperature_loss
            )
        state = state.replace(actor_state=actor_state, alpha=alpha_state)
        return (
            state,
            PolicyAuxiliaries(loss, jnp.mean(log_prob), norm),
            TemperatureAuxiliaries(alpha, alpha_loss),
            metrics,
        )

    def min_q(self, params: Any, batch: Transition | SequenceStep) -> Callable[[jax.Array], jax.Array]:
        """The clipped double-Q estimate min_i Q_i(s, a) under `params`, at the minibatch's observations."""
        return lambda action: jnp.min(self.q_values(params, batch, action), axis=0)

    def value(self, reduce: Callable[[jax.Array], jax.Array]) -> ValueEstimate:
        """The critic's estimate for the evaluation's value bias: `reduce` over the ensemble axis."""
        return lambda state, obs, action: reduce(self.critic().apply(state.critic_state.params, obs, action))

    def evaluation(self, reduce: Callable[[jax.Array], jax.Array] | None) -> EvalPolicy:
        """Greedy actions; `reduce` (over the ensemble axis) None for a critic that does not
        estimate discounted returns."""

        def mode(pi: Any) -> tuple[jax.Array, jax.Array]:
            return pi.mode(), pi.entropy()

        if self.memory is not None:
            return recurrent_evaluation(self.actor, self.critic(), self.memory, mode, reduce, self.config.gamma)

        def greedy(state: SoftACState, obs: jax.Array):
            return mode(self.policy(state, obs))

        execute = self.extensions.fold_env_action if self.extensions.acts_in_evaluation else None
        value = self.value(reduce) if reduce is not None else None
        return EvalPolicy(greedy, value, self.config.gamma, expert=self.config.expert, execute=execute)

    @property
    def pipeline(self) -> ActionPipeline:
        """SAC's action pipeline (`ajax.agents.SAC.action_pipeline`) around a sample of the policy.

        With gSDE the sample is the policy's mean pushed by the round's exploration matrices.
        Guidance without its own horizon decays over the run's, to which the extensions are bound.
        """
        if self.config.use_sde:
            policy = lambda state, obs: (self.policy(state, obs), state.exploration_noise)  # noqa: E731
            sample = lambda pi_and_noise, key, step: pi_and_noise[0].explore(pi_and_noise[1])  # noqa: E731
        else:
            policy, sample = self.policy, sample_policy
        sequences = self.config.sequences
        return self.config.action_pipeline.build(
            self.actor,
            policy,
            sample,
            self.config.learning_starts,
            self.extensions.total_steps,
            stored_state=sequences is not None and sequences.stored_state,
            warmup_expert=self.config.expert,
            extensions=self.extensions,
        )

    def loop(self, run: RunSettings, init: Callable, update: Callable, value: Callable[[jax.Array], jax.Array] | None):
        """The shared off-policy loop around `update`, storing every step in the replay; `value`
        reduces the ensemble axis for the evaluation's value bias."""
        loop = TrainLoop.create(self.env_args, run, self.extensions, self.evaluation(value))
        init_with_expert = lambda key: self.with_expert_replay(init(key))  # noqa: E731
        return loop.off_policy(
            init_with_expert,
            update,
            self.config.learning_starts,
            self.pipeline,
            store=self.buffer.add,
            schedule=self.config.schedule,
            before_updates=self.redraw_noise if self.config.use_sde else None,
        )


def make_train(*, agent_config: SACConfig, run: RunSettings, **settings: Any):
    sac = SoftActorCritic(config=agent_config, **settings)
    config = agent_config

    def update(state: SoftACState, transition: Transition):
        del transition  # SAC learns from replay; the loop has already stored the step
        state, (sample_key, next_key, actor_key) = state.next_keys(3)
        batch = sac.sample(state, sample_key)
        trained = sac.reader.trained(batch)

        _, next_log_prob, next_q = sac.next_values(state, batch, next_key, state.critic_state.target_params)
        target = soft_q_target(
            trained.reward, trained.terminated, next_q, next_log_prob, sac.alpha(state), config.gamma
        )
        critic_state, value_aux, critic_metrics = sac.critic_update(state, batch, target)

        # The actor trains against the critics just updated; the target critics moved already,
        # which leaves the actor's step unchanged since it never reads them.
        state = state.replace(critic_state=critic_state)
        state, policy_aux, temperature_aux, actor_metrics = sac.actor_update(
            state, batch, actor_key, sac.min_q(critic_state.params, batch)
        )
        return state, AuxiliaryLogs(policy_aux, value_aux, temperature_aux, {**critic_metrics, **actor_metrics})

    return sac.loop(run, sac.init, update, lambda q: jnp.min(q, axis=0))
