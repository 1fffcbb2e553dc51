"""PPO on the shared on-policy loop: rollout, GAE, clipped epochs of minibatches.

The update reads top to bottom in the order the algorithm runs: values of the rollout's
observations and of the states each step reached, GAE, then `n_epochs` passes over a fresh
shuffle of the rollout in minibatches, each an actor and a critic gradient step.

`ProximalActorCritic` holds the parts PPO's descendants reuse unchanged (the networks, the
initial state, the rollout policy, the clipped minibatch epochs, the evaluation), so APO's
update holds only what its paper changes: the advantages and the critic's loss. The actor's
step is the shared loop's `actor_step`, so the extensions' actor_loss phase (ImitationLoss)
folds into the clipped surrogate on every minibatch, as it does into a replay agent's actor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from ajax.agents.loop import RunSettings, TrainLoop, actor_step, gradient_step
from ajax.agents.PPO.core import (
    approx_kl,
    clipped_surrogate_loss,
    generalized_advantages,
    normalize,
    value_loss,
)
from ajax.agents.PPO.state import Initializer, PPOConfig, ProximalInitializers
from ajax.agents.recurrent import NETWORKS, EvalMemory
from ajax.environments.interaction import Transition, init_collector
from ajax.evaluate import EvalPolicy, PolicyCarry
from ajax.extensions import ExtensionStack
from ajax.modules.pid_actor import PIDPolicy, pid_actor
from ajax.networks.actor_critic import CategoricalActor, GaussianActor, ValueCritic
from ajax.networks.encoders import encoded
from ajax.networks.initializers import orthogonal
from ajax.networks.memory import MemoryConfig, initial_carry
from ajax.networks.optim import new_train_state
from ajax.networks.recurrent import MemoryCarries, Recurrent, fresh_carries
from ajax.perf_utils import final_aux_scan
from ajax.schedule import at
from ajax.state import BaseAgentState, CollectorState, EnvironmentConfig, NetworkConfig, OptimizerConfig

# (values of a minibatch's observations, their targets) -> the critic's loss before vf_coef
CriticLoss = Callable[[jax.Array, jax.Array], jax.Array]


@struct.dataclass
class PolicyAuxiliaries:
    policy_loss: jax.Array
    entropy: jax.Array
    approx_kl: jax.Array
    clip_fraction: jax.Array
    actor_grad_norm: jax.Array


@struct.dataclass
class ValueAuxiliaries:
    critic_loss: jax.Array
    critic_grad_norm: jax.Array


@struct.dataclass
class AuxiliaryLogs:
    policy: PolicyAuxiliaries
    value: ValueAuxiliaries
    extensions: dict  # the actor_loss extensions' metrics (imitation/loss), logged under their own names


@struct.dataclass
class Minibatch:
    """What one clipped-surrogate step reads of the rollout; an actor_loss extension reads its `obs`.

    With memory the fields are (L, B) sequences, read from `carries` (each network's carry
    at the sequences' starts) with `episode_start` marking where episodes begin.
    """

    obs: jax.Array
    action: jax.Array
    old_log_prob: jax.Array
    advantage: jax.Array
    target: jax.Array
    episode_start: jax.Array | None = None
    carries: Any = None


def make_networks(
    env_args: EnvironmentConfig, network_args: NetworkConfig, initializers: ProximalInitializers | None = None
):
    """The actor and the critic, each behind its own image encoder when one is set; with memory, each is
    encoder -> memory -> its feed-forward head.

    A `PIDPolicy` architecture makes the actor a Gaussian PID (`ajax.modules.pid_actor`), never with memory.
    `initializers` replace the networks' defaults where set; an initialiser left at None is
    not passed, so the default runs exactly as it did without it.
    """
    initializers = initializers or ProximalInitializers()
    memory = network_args.memory
    hidden = given(hidden_init=initializers.encoder_kernel_init)
    critic_head = given(head_bias_init=initializers.critic_bias_init)
    if isinstance(network_args.actor_architecture, PIDPolicy):
        actor = pid_actor(network_args.actor_architecture, env_args, "gaussian")
        return actor, ValueCritic(network_args.critic_architecture, **hidden, **critic_head)
    actor_layers = () if memory is not None else network_args.actor_architecture
    actor_head = given(head_bias_init=initializers.actor_bias_init)
    if env_args.continuous:
        mean = given(head_init=initializers.mean_kernel_init)
        actor = GaussianActor(actor_layers, env_args.action_dim, **hidden, **actor_head, **mean)
    else:
        actor = CategoricalActor(actor_layers, env_args.action_dim, **hidden, **actor_head)
    critic = ValueCritic(() if memory is not None else network_args.critic_architecture, **hidden, **critic_head)
    if memory is None:
        parts, masked = env_args.observation_parts, env_args.action_masked
        return encoded(actor, network_args.encoder, parts, masked), encoded(critic, network_args.encoder, parts)
    hidden_init = initializers.encoder_kernel_init or orthogonal(np.sqrt(2))
    image = {"image_encoder": network_args.encoder, "parts": env_args.observation_parts}
    return (
        Recurrent(network_args.actor_architecture, memory, actor, hidden_init, **image),
        Recurrent(network_args.critic_architecture, memory, critic, hidden_init, **image),
    )


def given(**initializers: Initializer | None) -> dict[str, Initializer]:
    """The initialisers that are set, for a module's keywords: an unset one leaves the module's default."""
    return {name: init for name, init in initializers.items() if init is not None}


def sequences(x: jax.Array, length: int) -> jax.Array:
    """A time-major (T, N, ...) rollout as (length, T / length * N, ...) contiguous sequences.

    Sequence c * N + n is env n's steps [c * length, (c + 1) * length). Reshaping (T, N)
    straight to (length, -1) would interleave steps `T / length` apart instead.
    """
    n_chunks = x.shape[0] // length
    chunks = x.reshape(n_chunks, length, *x.shape[1:])
    return jnp.swapaxes(chunks, 0, 1).reshape(length, n_chunks * x.shape[1], *x.shape[2:])


def chunk_starts(
    network: nn.Module, params: Any, carry: Any, obs: jax.Array, episode_start: jax.Array, length: int
) -> Any:
    """The carry at each `length`-step chunk's start, run over the rollout from `carry`.

    Returned in `sequences`' order: chunk c of env n at index c * N + n.
    """
    n_chunks = obs.shape[0] // length

    def chunk(carry: Any, inputs: tuple[jax.Array, jax.Array]) -> tuple[Any, Any]:
        after, _ = network.apply(params, carry, *inputs)
        return after, carry

    chunked = (obs.reshape(n_chunks, length, *obs.shape[1:]), episode_start.reshape(n_chunks, length, -1))
    _, starts = jax.lax.scan(chunk, carry, chunked)
    return jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), starts)


@dataclass(frozen=True)
class ProximalActorCritic:
    """A stochastic actor and a state-value critic, trained by clipped minibatch epochs."""

    env_args: EnvironmentConfig
    network_args: NetworkConfig
    actor_optimizer_args: OptimizerConfig
    critic_optimizer_args: OptimizerConfig
    config: PPOConfig
    extensions: ExtensionStack

    @property
    def networks(self) -> tuple[nn.Module, nn.Module]:
        return make_networks(self.env_args, self.network_args, self.config.initializers)

    @property
    def memory(self) -> MemoryConfig | None:
        return self.network_args.memory

    def init(self, key: jax.Array, state_class: type[BaseAgentState] = BaseAgentState, **fields: Any):
        rng, actor_key, critic_key, env_key, eval_key = jax.random.split(key, 5)
        actor, critic = self.networks
        inputs = (self.env_args.observation_zeros(1),)
        collector = init_collector(env_key, self.env_args)
        if self.memory is not None:
            inputs = (initial_carry(self.memory, 1), inputs[0][None], jnp.ones((1, 1), bool))
            collector = collector.replace(memory=fresh_carries(self.memory, NETWORKS, self.env_args.n_envs))
        return state_class(
            rng=rng,
            actor_state=new_train_state(actor, actor_key, self.actor_optimizer_args, *inputs),
            critic_state=new_train_state(critic, critic_key, self.critic_optimizer_args, *inputs),
            collector_state=collector,
            eval_rng=eval_key,
            n_updates=jnp.zeros((), jnp.int32),
            n_logs=jnp.zeros((), jnp.int32),
            **fields,
        )

    def policy(self, state: BaseAgentState, obs: jax.Array):
        return self.networks[0].apply(state.actor_state.params, obs)

    def value(self, state: BaseAgentState, obs: jax.Array) -> jax.Array:
        return self.networks[1].apply(state.critic_state.params, obs)

    def act(self, state: BaseAgentState, obs: jax.Array, key: jax.Array):
        action, log_prob = self.policy(state, obs).sample_and_log_prob(seed=key)
        return action, {"log_prob": log_prob}

    def step_memories(
        self, state: BaseAgentState, memory: MemoryCarries, obs: jax.Array
    ) -> tuple[MemoryCarries, Any, jax.Array]:
        """One step of both networks with their memories: the carries after `obs`, pi(.|obs)
        (over a time axis of 1) and V(obs)."""
        actor, critic = self.networks
        starts = memory.episode_start[None]
        actor_carry, pi = actor.apply(state.actor_state.params, memory.carries["actor"], obs[None], starts)
        critic_carry, value = critic.apply(state.critic_state.params, memory.carries["critic"], obs[None], starts)
        return memory.replace(carries={"actor": actor_carry, "critic": critic_carry}), pi, value[0]

    def recurrent_act(self, state: BaseAgentState, obs: jax.Array, key: jax.Array):
        """Sample with the actor's memory; step the critic's too and keep its value of `obs`."""
        memory = state.collector_state.memory
        after, pi, value = self.step_memories(state, memory, obs)
        action, log_prob = pi.sample_and_log_prob(seed=key)
        extras = {"log_prob": log_prob[0], "value": value, "episode_start": memory.episode_start}
        return action[0], {**extras, "memory": after}

    def recurrent_bootstrap(self, state: BaseAgentState, final_obs: jax.Array) -> dict[str, jax.Array]:
        """V(s') with the critic's carry the step left, before any reset: a time limit's bootstrap."""
        memory = state.collector_state.memory
        no_start = jnp.zeros_like(memory.episode_start)[None]
        _, value = self.networks[1].apply(
            state.critic_state.params, memory.carries["critic"], final_obs[None], no_start
        )
        return {"next_value": value[0]}

    def clipped_epochs(
        self,
        state: BaseAgentState,
        rollout: Transition,
        advantages: jax.Array,
        targets: jax.Array,
        critic_loss: CriticLoss = value_loss,
        start: CollectorState | None = None,
    ) -> tuple[BaseAgentState, AuxiliaryLogs]:
        """`n_epochs` passes over a fresh shuffle of the rollout, in minibatches.

        Each minibatch takes an actor step on the clipped surrogate (eq. 7) less the entropy
        bonus, plus the extensions' actor_loss terms on the minibatch, then a critic step on
        `vf_coef * critic_loss(V(s), targets)`. Feed-forward, a minibatch is `batch_size`
        transitions; with memory it is whole sequences (`recurrent_minibatches`), read from
        the carries they started with (`start`: the collector the rollout began from).
        """
        config = self.config
        data = Minibatch(rollout.obs, rollout.action, rollout.extras["log_prob"], advantages, targets)
        clip_range = at(config.clip_range, state.collector_state.timestep)
        state, (shuffle_key,) = state.next_keys(1)

        def minibatch_step(train_states, batch: Minibatch):
            actor_state, critic_state = train_states
            advantage = normalize(batch.advantage) if config.normalize_advantage else batch.advantage

            def policy_loss(params):
                pi = self.read(0, params, batch)
                log_ratio = pi.log_prob(batch.action) - batch.old_log_prob
                entropy = jnp.mean(pi.entropy())
                loss = clipped_surrogate_loss(log_ratio, advantage, clip_range) - config.ent_coef * entropy
                clip_fraction = jnp.mean(jnp.abs(jnp.exp(log_ratio) - 1.0) > clip_range)
                return loss, (entropy, approx_kl(log_ratio), clip_fraction)

            def value_step_loss(params):
                return config.vf_coef * critic_loss(self.read(1, params, batch), batch.target), ()

            # The extensions read the agent state as the epochs found it (its normaliser, its counters);
            # the actor params they pull on are this minibatch's.
            actor_state, p_loss, (entropy, kl, clip_fraction), actor_norm, extension_metrics = actor_step(
                actor_state, policy_loss, batch, state, self.extensions
            )
            critic_state, v_loss, _, critic_norm = gradient_step(critic_state, value_step_loss)
            aux = AuxiliaryLogs(
                PolicyAuxiliaries(p_loss, entropy, kl, clip_fraction, actor_norm),
                ValueAuxiliaries(v_loss, critic_norm),
                extension_metrics,
            )
            return (actor_state, critic_state), aux

        def epoch(train_states, key):
            if self.memory is None:
                minibatches = self.minibatches(data, key)
            else:
                data_with_starts = data.replace(episode_start=rollout.extras["episode_start"])
                minibatches = self.recurrent_minibatches(train_states, data_with_starts, start.memory, key)
            return final_aux_scan(minibatch_step, train_states, minibatches)

        (actor_state, critic_state), aux = final_aux_scan(
            epoch, (state.actor_state, state.critic_state), jax.random.split(shuffle_key, config.n_epochs)
        )
        return state.replace(actor_state=actor_state, critic_state=critic_state), aux

    def read(self, which: int, params: Any, batch: Minibatch) -> Any:
        """The actor's distribution (`which` 0) or the critic's values (1) over a minibatch."""
        network = self.networks[which]
        if self.memory is None:
            return network.apply(params, batch.obs)
        return network.apply(params, batch.carries[NETWORKS[which]], batch.obs, batch.episode_start)[1]

    def minibatches(self, data: Minibatch, key: jax.Array) -> Minibatch:
        """The rollout's transitions shuffled into minibatches of `batch_size`."""
        rollout_size = self.config.n_steps * self.env_args.n_envs
        n_minibatches = rollout_size // self.config.batch_size
        permutation = jax.random.permutation(key, rollout_size)
        return jax.tree.map(
            lambda x: x.reshape(rollout_size, *x.shape[2:])[permutation].reshape(n_minibatches, -1, *x.shape[2:]),
            data,
        )

    def recurrent_minibatches(
        self, train_states: tuple[Any, Any], data: Minibatch, start: MemoryCarries, key: jax.Array
    ) -> Minibatch:
        """Each env's rollout as sequences of `bptt_length` steps, shuffled into `n_minibatches`.

        The sequences start from the carries the rollout started with; cut shorter, every
        later sequence starts from the carry the current parameters reach at its first step,
        run over the rollout from that start (so never from zeros mid-episode). Minibatches
        split sequences, never time.
        """
        length = self.config.bptt_length or self.config.n_steps
        carries = start.carries
        if length < self.config.n_steps:
            carries = {
                name: chunk_starts(network, trained.params, start.carries[name], data.obs, data.episode_start, length)
                for name, network, trained in zip(NETWORKS, self.networks, train_states, strict=True)
            }
        split = jax.tree.map(lambda x: sequences(x, length), data)
        n_sequences, n_minibatches = split.obs.shape[1], self.config.n_minibatches
        permutation = jax.random.permutation(key, n_sequences)
        batches = jax.tree.map(
            lambda x: jnp.swapaxes(x[:, permutation].reshape(length, n_minibatches, -1, *x.shape[2:]), 0, 1), split
        )
        starts = jax.tree.map(lambda x: x[permutation].reshape(n_minibatches, -1, *x.shape[1:]), carries)
        return batches.replace(carries=starts)

    def evaluation(self, discounted: bool = True) -> EvalPolicy:
        """Greedy actions; the value bias only for a critic of discounted returns."""
        if self.memory is not None:
            return self.recurrent_evaluation(discounted)

        def greedy(state: BaseAgentState, obs: jax.Array):
            pi = self.policy(state, obs)
            return pi.mode(), pi.entropy()

        def value(state: BaseAgentState, obs: jax.Array, action: jax.Array) -> jax.Array:
            return self.value(state, obs)

        return EvalPolicy(greedy, value if discounted else None, self.config.gamma, expert=self.config.expert)

    def recurrent_evaluation(self, discounted: bool) -> EvalPolicy:
        """Greedy actions with both memories carried through each evaluation episode."""

        def init(state: BaseAgentState, n: int) -> EvalMemory:
            return EvalMemory(fresh_carries(self.memory, NETWORKS, n), jnp.zeros((n,)))

        def greedy(state: BaseAgentState, obs: jax.Array, carry: EvalMemory):
            after, pi, value = self.step_memories(state, carry.memory, obs)
            after = after.replace(episode_start=jnp.zeros_like(after.episode_start))  # one episode per env
            return pi.mode()[0], pi.entropy()[0], EvalMemory(after, value)

        def value(state: BaseAgentState, obs: jax.Array, action: jax.Array, carry: EvalMemory) -> jax.Array:
            return carry.value

        carry = PolicyCarry(init, advance=lambda carry, reward: carry)
        return EvalPolicy(
            greedy, value if discounted else None, self.config.gamma, carry=carry, expert=self.config.expert
        )

    def loop(self, run: RunSettings, init: Callable, update: Callable, discounted: bool = True):
        """The shared on-policy loop around `update`, collecting `n_steps` per env with `act`."""
        loop = TrainLoop.create(self.env_args, run, self.extensions, self.evaluation(discounted))
        if self.memory is not None:
            return loop.on_policy(init, update, self.config.n_steps, self.recurrent_act, self.recurrent_bootstrap)
        return loop.on_policy(init, update, self.config.n_steps, self.act)


def make_train(
    *,
    env_args: EnvironmentConfig,
    network_args: NetworkConfig,
    actor_optimizer_args: OptimizerConfig,
    critic_optimizer_args: OptimizerConfig,
    agent_config: PPOConfig,
    extensions: ExtensionStack,
    run: RunSettings,
):
    ppo = ProximalActorCritic(
        env_args, network_args, actor_optimizer_args, critic_optimizer_args, agent_config, extensions
    )
    config = agent_config

    def update(state: BaseAgentState, rollout: Transition, start: CollectorState):
        if ppo.memory is None:
            # The critic has not changed since collection: its values of the rollout's states and
            # of the states each step reached are computed here, as two batched passes, rather
            # than one small pass per collection step.
            values, next_values = ppo.value(state, rollout.obs), ppo.value(state, rollout.next_obs)
        else:  # a critic with memory read them as it collected, each with the carry it had
            values, next_values = rollout.extras["value"], rollout.extras["next_value"]
        advantages, targets = generalized_advantages(
            rollout.reward,
            values,
            next_values,
            rollout.terminated,
            rollout.truncated,
            config.gamma,
            config.gae_lambda,
        )
        return ppo.clipped_epochs(state, rollout, advantages, targets, start=start)

    return ppo.loop(run, ppo.init, update)
