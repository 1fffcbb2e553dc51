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
import optax
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
from ajax.buffers.packed import index_action
from ajax.environments.interaction import Transition, init_collector
from ajax.evaluate import EvalPolicy, PolicyCarry
from ajax.extensions import ExtensionStack
from ajax.modules.pid_actor import PIDPolicy, pid_actor
from ajax.networks.actor_critic import CategoricalActor, GaussianActor, TanhGaussianActor, ValueCritic
from ajax.networks.encoders import encoded
from ajax.networks.initializers import orthogonal
from ajax.networks.memory import MemoryConfig, initial_carry
from ajax.networks.optim import new_train_state
from ajax.networks.recurrent import MemoryCarries, Recurrent, fresh_carries
from ajax.perf_utils import final_aux_scan
from ajax.schedule import at
from ajax.shuffle import take_rows
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
class Segment:
    """What a minibatch of whole segments (`unroll_length`) computes its own advantages from."""

    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    next_obs: jax.Array


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
    segment: Segment | None = None


def make_networks(
    env_args: EnvironmentConfig,
    network_args: NetworkConfig,
    initializers: ProximalInitializers | None = None,
    policy_distribution: str = "gaussian",
):
    """The actor and the critic, each behind its own image encoder when one is set; with memory, each is
    encoder -> memory -> its feed-forward head.

    A `PIDPolicy` architecture makes the actor a Gaussian PID (`ajax.modules.pid_actor`), never with memory.
    `initializers` replace the networks' defaults where set; an initialiser left at None is
    not passed, so the default runs exactly as it did without it. `policy_distribution`
    "tanh_gaussian" makes a continuous actor Brax's (`TanhGaussianActor`).
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
        gaussian = TanhGaussianActor if policy_distribution == "tanh_gaussian" else GaussianActor
        actor = gaussian(actor_layers, env_args.action_dim, **hidden, **actor_head, **mean)
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
        config = self.config
        return make_networks(self.env_args, self.network_args, config.initializers, config.policy_distribution)

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
        if self.config.policy_distribution == "tanh_gaussian":  # keep the draw before tanh; step with tanh of it
            return action, {"log_prob": log_prob}, jnp.tanh(action)
        return action, {"log_prob": log_prob}

    def advantages(
        self, rollout: Transition | Segment, values: jax.Array, next_values: jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        """GAE's advantages and value targets (`generalized_advantages`) on the rewards times
        `reward_scaling`, with the time-limit choice and the estimator the settings make."""
        config = self.config
        reward = rollout.reward if config.reward_scaling == 1.0 else rollout.reward * config.reward_scaling
        return generalized_advantages(
            reward,
            values,
            next_values,
            rollout.terminated,
            rollout.truncated,
            config.gamma,
            config.gae_lambda,
            bootstrap_on_truncation=config.bootstrap_on_truncation,
            estimator=config.advantage_estimator,
        )

    def segment_advantages(self, critic_params: Any, batch: Minibatch) -> Minibatch:
        """The minibatch with advantages and targets computed over each of its segments (L, B)
        from the critic's current parameters, as Brax's loss does: GAE bootstraps from V at the
        state each segment's last step reached. Without bootstrapping at time limits, V(s'_t)
        is V(s_{t+1}) inside a segment (Brax's values[1:]): where the two differ an episode
        ended, and the term is masked."""
        critic = self.networks[1]
        values = critic.apply(critic_params, batch.obs)
        if self.config.bootstrap_on_truncation:
            next_values = critic.apply(critic_params, batch.segment.next_obs)
        else:
            last = critic.apply(critic_params, batch.segment.next_obs[-1])
            next_values = jnp.concatenate([values[1:], last[None]])
        advantages, targets = self.advantages(batch.segment, values, next_values)
        return batch.replace(advantage=advantages, target=targets)

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
        advantages: jax.Array | None,
        targets: jax.Array | None,
        critic_loss: CriticLoss = value_loss,
        start: CollectorState | None = None,
    ) -> tuple[BaseAgentState, AuxiliaryLogs]:
        """`n_epochs` passes over a fresh shuffle of the rollout, in minibatches.

        Each minibatch takes an actor step on the clipped surrogate (eq. 7) less the entropy
        bonus, plus the extensions' actor_loss terms on the minibatch, then a critic step on
        `vf_coef * critic_loss(V(s), targets)`. Feed-forward, a minibatch is `batch_size`
        transitions; with memory it is whole sequences (`recurrent_minibatches`), read from
        the carries they started with (`start`: the collector the rollout began from). With
        `unroll_length` it is whole segments (`segment_minibatches`) whose advantages and
        targets it computes itself (`segment_advantages`; `advantages` and `targets` None).
        A tanh-Gaussian's entropy is sampled, each minibatch with its own key; with
        `shared_optimizer` both networks take one step together (`joint_step`).
        """
        config = self.config
        data = Minibatch(rollout.obs, rollout.action, rollout.extras["log_prob"], advantages, targets)
        if config.unroll_length is not None:
            segment = Segment(rollout.reward, rollout.terminated, rollout.truncated, rollout.next_obs)
            data = data.replace(segment=segment)
        clip_range = at(config.clip_range, state.collector_state.timestep)
        state, (shuffle_key,) = state.next_keys(1)
        sampled_entropy = config.policy_distribution == "tanh_gaussian"

        def minibatch_step(train_states, inputs: Minibatch | tuple[Minibatch, jax.Array]):
            batch, entropy_key = inputs if sampled_entropy else (inputs, None)
            actor_state, critic_state = train_states
            if batch.segment is not None:
                batch = self.segment_advantages(critic_state.params, batch)
            advantage = normalize(batch.advantage) if config.normalize_advantage else batch.advantage

            def policy_loss(params):
                pi = self.read(0, params, batch)
                log_ratio = pi.log_prob(batch.action) - batch.old_log_prob
                entropy = jnp.mean(pi.entropy() if entropy_key is None else pi.entropy(seed=entropy_key))
                loss = clipped_surrogate_loss(log_ratio, advantage, clip_range) - config.ent_coef * entropy
                clip_fraction = jnp.mean(jnp.abs(jnp.exp(log_ratio) - 1.0) > clip_range)
                return loss, (entropy, approx_kl(log_ratio), clip_fraction)

            def value_step_loss(params):
                return config.vf_coef * critic_loss(self.read(1, params, batch), batch.target), ()

            # The extensions read the agent state as the epochs found it (its normaliser, its counters);
            # the actor params they pull on are this minibatch's.
            if config.shared_optimizer:
                steps = joint_step(
                    (actor_state, critic_state),
                    (policy_loss, value_step_loss),
                    batch,
                    state,
                    self.extensions,
                    config.joint_max_grad_norm,
                )
                (actor_state, critic_state), (p_loss, v_loss), ((entropy, kl, clip_fraction), _), norms, metrics = steps
                (actor_norm, critic_norm), extension_metrics = norms, metrics
            else:
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
            if sampled_entropy:
                key, entropy_key = jax.random.split(key)
            if config.unroll_length is not None:
                minibatches = self.segment_minibatches(data, key)
            elif self.memory is None:
                minibatches = self.minibatches(data, key)
            else:
                data_with_starts = data.replace(episode_start=rollout.extras["episode_start"])
                minibatches = self.recurrent_minibatches(train_states, data_with_starts, start.memory, key)
            if sampled_entropy:
                n_minibatches = jax.tree.leaves(minibatches)[0].shape[0]
                minibatches = (minibatches, jax.random.split(entropy_key, n_minibatches))
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

    @property
    def index_actions(self) -> frozenset[str]:
        """A discrete action is an index, exact in float32: the shuffle gathers it with the floats."""
        return index_action(self.env_args.continuous)

    def minibatches(self, data: Minibatch, key: jax.Array) -> Minibatch:
        """The rollout's transitions shuffled into minibatches of `batch_size`."""
        rollout_size = self.config.n_steps * self.env_args.n_envs
        n_minibatches = rollout_size // self.config.batch_size
        permutation = jax.random.permutation(key, rollout_size)
        flat = jax.tree.map(lambda x: x.reshape(rollout_size, *x.shape[2:]), data)
        shuffled = take_rows(flat, permutation, exact_in_float=self.index_actions)
        return jax.tree.map(lambda x: x.reshape(n_minibatches, -1, *x.shape[1:]), shuffled)

    def segment_minibatches(self, data: Minibatch, key: jax.Array) -> Minibatch:
        """Each env's rollout cut into segments of `unroll_length` steps (Brax's unrolls), the
        segments shuffled whole into minibatches of `batch_size` transitions, each (L, B)."""
        length = self.config.unroll_length
        split = jax.tree.map(lambda x: sequences(x, length), data)
        n_segments = split.obs.shape[1]
        n_minibatches = n_segments * length // self.config.batch_size
        permutation = jax.random.permutation(key, n_segments)
        return jax.tree.map(
            lambda x: jnp.swapaxes(x.reshape(length, n_minibatches, -1, *x.shape[2:]), 0, 1),
            take_rows(split, permutation, axis=1, exact_in_float=self.index_actions),
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
            lambda x: jnp.swapaxes(x.reshape(length, n_minibatches, -1, *x.shape[2:]), 0, 1),
            take_rows(split, permutation, axis=1, exact_in_float=self.index_actions),
        )
        starts = jax.tree.map(lambda x: x.reshape(n_minibatches, -1, *x.shape[1:]), take_rows(carries, permutation))
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


def joint_step(
    train_states: tuple[Any, Any],
    losses: tuple[Callable[[Any], tuple[jax.Array, Any]], Callable[[Any], tuple[jax.Array, Any]]],
    batch: Minibatch,
    agent_state: BaseAgentState,
    extensions: ExtensionStack,
    max_grad_norm: float | None,
):
    """One optimiser step over the actor's and the critic's parameters together, as Brax's PPO
    takes one Adam step on the sum of its losses (`shared_optimizer`).

    Each loss gives its network's gradient (the extensions' actor_loss terms folded into the
    actor's); their global norm over both networks is clipped at `max_grad_norm` by optax's
    own rule; then each network's Adam steps. Adam acts elementwise with one step count, so
    two Adams of one learning rate on jointly clipped gradients are one Adam over both.
    Returns the train states, the two losses, their auxiliaries (the actor's with the
    extensions' metrics), the two gradient norms before clipping and the extensions' metrics.
    """
    (actor_state, critic_state), (policy_loss, value_loss) = train_states, losses

    def actor_loss(params: Any) -> tuple[jax.Array, tuple[Any, dict]]:
        base, aux = policy_loss(params)
        extra, metrics = extensions.fold_actor_loss(agent_state, batch, params)
        return base + extra, (aux, metrics)

    (p_loss, (p_aux, metrics)), actor_grads = jax.value_and_grad(actor_loss, has_aux=True)(actor_state.params)
    (v_loss, v_aux), critic_grads = jax.value_and_grad(value_loss, has_aux=True)(critic_state.params)
    norms = (optax.tree.norm(actor_grads), optax.tree.norm(critic_grads))
    grads = (actor_grads, critic_grads)
    if max_grad_norm is not None:
        grads, _ = optax.clip_by_global_norm(max_grad_norm).update(grads, optax.EmptyState())
    stepped = (actor_state.apply_gradients(grads=grads[0]), critic_state.apply_gradients(grads=grads[1]))
    return stepped, (p_loss, v_loss), (p_aux, v_aux), norms, metrics


def make_train(*, agent_config: PPOConfig, run: RunSettings, **settings: Any):
    ppo = ProximalActorCritic(config=agent_config, **settings)
    config = agent_config

    def update(state: BaseAgentState, rollout: Transition, start: CollectorState):
        if config.unroll_length is not None:  # each minibatch of segments takes its own (`segment_advantages`)
            return ppo.clipped_epochs(state, rollout, None, None, start=start)
        if ppo.memory is None:
            # The critic has not changed since collection: its values of the rollout's states and
            # of the states each step reached are computed here, as two batched passes, rather
            # than one small pass per collection step.
            values, next_values = ppo.value(state, rollout.obs), ppo.value(state, rollout.next_obs)
        else:  # a critic with memory read them as it collected, each with the carry it had
            values, next_values = rollout.extras["value"], rollout.extras["next_value"]
        advantages, targets = ppo.advantages(rollout, values, next_values)
        return ppo.clipped_epochs(state, rollout, advantages, targets, start=start)

    return ppo.loop(run, ppo.init, update)
