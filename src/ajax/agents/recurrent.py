"""Memory for the replay agents (SAC, ASAC, REDQ, TD3): R2D2's sequence replay, shared.

With `memory=` an actor or critic is `Recurrent`: its memory reads each observation, and
its feed-forward head reads the memory's output beside the observation (and a critic's
action). The replay keeps each env's trajectory (`SequenceReplay`) and an update trains on
windows of `burn_in + sequence_length` consecutive steps, as Kapturowski et al. (2019,
R2D2) do: each network starts a window from a zero carry and runs the `burn_in` steps to
warm it up under `stop_gradient`, then the `sequence_length` steps with back-propagation
through time. With `stored_state=True` the collector stores the actor's carry at every
step, and an actor starts the trained steps from the carry it had when the first of them
was collected instead (R2D2's stored state). Episode starts inside a window reset the
carries, as they did when acting.

An agent's update reads its networks through a reader, so one update serves both forms:
`FEED_FORWARD` reads a batch of transitions, `SequenceTraining` a batch of windows, at the
observations (`at_obs`) or at the observations each step reached (`at_next_obs`: with the
carry the step left, so at a time limit the bootstrap reads the final observation with the
memory of its own episode). Critics never run when acting, so they always burn in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
from flax import struct

from ajax.buffers.sequence import SequenceReplay, SequenceStep
from ajax.environments.interaction import ActionPipeline, Explore, Transition, init_collector
from ajax.environments.utils import ExpertInAgentUnits, uniform_action
from ajax.evaluate import EvalPolicy, PolicyCarry
from ajax.networks.encoders import encoded
from ajax.networks.memory import MemoryConfig, initial_carry
from ajax.networks.recurrent import MemoryCarries, Recurrent, fresh_carries
from ajax.state import BaseAgentState, CollectorState, EnvironmentConfig, ObservationPart

NETWORKS = ("actor", "critic")  # the networks with a memory, as PPO collects and every agent evaluates


@struct.dataclass
class EvalMemory:
    """What an evaluation episode carries: the memories, and the critic's value of the last observation."""

    memory: MemoryCarries
    value: jax.Array


def replay_network(
    head: nn.Module,
    memory: MemoryConfig | None,
    encoder: nn.Module | None = None,
    parts: tuple[ObservationPart, ...] | None = None,
) -> nn.Module:
    """A replay agent's network: `head` itself, behind an image `encoder` reading observations kept
    as `parts`, and with the memory reading the encoder's features (or the observation) first."""
    if memory is not None:
        return Recurrent((), memory, head, skip=True, image_encoder=encoder, parts=parts)
    return encoded(head, encoder, parts)


def example_inputs(memory: MemoryConfig | None, env_args: EnvironmentConfig, *arg_dims: int) -> tuple[jax.Array, ...]:
    """What a network built by `replay_network` is initialised on: one step of one env."""
    inputs = (env_args.observation_zeros(1), *(jnp.zeros((1, dim)) for dim in arg_dims))
    if memory is None:
        return inputs
    return (initial_carry(memory, 1), inputs[0][None], jnp.ones((1, 1), bool), *(x[None] for x in inputs[1:]))


@dataclass(frozen=True)
class FeedForward:
    """The reader of a batch of transitions."""

    def trained(self, batch: Transition) -> Transition:
        return batch

    def at_obs(self, network: nn.Module, params: Any, batch: Transition, *args: Any, actor: bool = False) -> Any:
        return network.apply(params, batch.obs, *args)

    def at_next_obs(self, network: nn.Module, params: Any, batch: Transition, *args: Any, actor: bool = False) -> Any:
        return network.apply(params, batch.next_obs, *args)


FEED_FORWARD = FeedForward()


@dataclass(frozen=True)
class SequenceTraining:
    """The reader of a batch of replayed windows (`SequenceStep`s, time-major (W, N)), and its sizes.

    `actor=True` names a network that acted, whose window may start from the stored carry.
    """

    memory: MemoryConfig
    sequence_length: int
    burn_in: int
    stored_state: bool = False

    @property
    def window(self) -> int:
        return self.burn_in + self.sequence_length

    def trained(self, batch: SequenceStep) -> Transition:
        """The steps the losses train on: the window after its burn-in, (sequence_length, N)."""
        return jax.tree.map(lambda x: x[self.burn_in :], batch.transition)

    def warm(self, network: nn.Module, params: Any, batch: SequenceStep, actor: bool = False) -> Any:
        """The carry at the first trained step, without gradient: an actor's stored one with
        stored-state replay, else zero warmed up over the burn-in."""
        if actor and self.stored_state:
            return jax.lax.stop_gradient(jax.tree.map(lambda x: x[self.burn_in], batch.carry))
        carry = initial_carry(self.memory, batch.episode_start.shape[1])
        if self.burn_in:
            obs, starts = batch.transition.obs[: self.burn_in], batch.episode_start[: self.burn_in]
            carry, _ = network.apply(params, carry, obs, starts, method=Recurrent.remember)
        return jax.lax.stop_gradient(carry)

    def at_obs(self, network: nn.Module, params: Any, batch: SequenceStep, *args: Any, actor: bool = False) -> Any:
        """The network at each trained step's observation, through time from the warmed carry."""
        carry = self.warm(network, params, batch, actor)
        obs, starts = batch.transition.obs[self.burn_in :], batch.episode_start[self.burn_in :]
        return network.apply(params, carry, obs, starts, *args)[1]

    def at_next_obs(self, network: nn.Module, params: Any, batch: SequenceStep, *args: Any, actor: bool = False) -> Any:
        """The network at each trained step's next observation, read with the carry that step left.

        The carry runs along the window's observations; at each step the next observation is
        read once more from the carry after it, with no reset, so the final observation of an
        episode meets that episode's memory and the next one starts afresh.
        """
        trained = self.trained(batch)
        starts = batch.episode_start[self.burn_in :]

        def step(carry: Any, inputs: tuple[jax.Array, jax.Array, jax.Array]) -> tuple[Any, jax.Array]:
            obs, start, next_obs = inputs
            carry, _ = network.apply(params, carry, obs[None], start[None], method=Recurrent.remember)
            _, features = network.apply(
                params, carry, next_obs[None], jnp.zeros_like(start)[None], method=Recurrent.remember
            )
            return carry, features[0]

        carry = self.warm(network, params, batch, actor)
        _, features = jax.lax.scan(step, carry, (trained.obs, starts, trained.next_obs))
        return network.apply(params, features, *args, method=Recurrent.read)


Reader = FeedForward | SequenceTraining


def checked_sequence_training(
    memory: MemoryConfig | None, settings: Mapping[str, Any], defaults: tuple[int, int]
) -> SequenceTraining | None:
    """The sequence replay a recurrent replay agent trains with, refused where its settings'
    sizes (`sequence_length`, `burn_in`, `stored_state`, `batch_size`, `buffer_size`,
    `learning_starts`, `n_envs`, each already checked alone) do not fit together.

    With memory `batch_size` still counts the transitions an update trains on: batch_size /
    sequence_length windows, so an update costs about what a feed-forward one does per step.
    """
    sequence_length, burn_in, stored_state = (settings[name] for name in ("sequence_length", "burn_in", "stored_state"))
    batch_size, buffer_size = settings["batch_size"], settings["buffer_size"]
    learning_starts, n_envs = settings["learning_starts"], settings["n_envs"]
    if memory is None:
        if (sequence_length, burn_in) != defaults or stored_state:
            raise ValueError(
                "sequence_length, burn_in and stored_state shape the sequence replay of an agent with memory: "
                "pass memory= with them, or drop them."
            )
        return None
    if batch_size % sequence_length:
        below = batch_size - batch_size % sequence_length
        options = " or ".join(str(n) for n in (below, below + sequence_length) if n > 0)
        raise ValueError(
            f"With memory, an update trains on batch_size / sequence_length sequences, but batch_size={batch_size} "
            f"is not a multiple of sequence_length={sequence_length}: set batch_size={options}, or a "
            "sequence_length that divides it."
        )
    training = SequenceTraining(memory, int(sequence_length), int(burn_in), stored_state)
    if learning_starts < n_envs * training.window:
        raise ValueError(
            f"learning_starts={learning_starts} leaves the replay without one whole window to sample: each of the "
            f"{n_envs} env copies needs burn_in + sequence_length = {training.window} steps first. Set "
            f"learning_starts >= {n_envs * training.window}, or shorten the window."
        )
    SequenceReplay(int(buffer_size), n_envs, batch_size // training.sequence_length, training.window)
    return training


def refuse_with_memory(agent: str, memory: MemoryConfig | None, **features: Any) -> None:
    """Refuse, with memory, the features that assume a feed-forward policy (expert guidance, gSDE)."""
    used = [name for name, value in features.items() if value not in (None, 0, False)]
    if memory is not None and used:
        raise ValueError(
            f"{agent} with memory= does not take {', '.join(used)}: an expert acting or filling the replay, and "
            "gSDE's features, assume a feed-forward policy. Drop memory= or them."
        )


def recurrent_collector(
    key: jax.Array, env_args: EnvironmentConfig, buffer: SequenceReplay, training: SequenceTraining
) -> CollectorState:
    """The collector of a replay agent with memory: an empty trajectory replay (holding one
    env's carry per step with stored state) and the actor's fresh memory."""
    stored = jax.tree.map(lambda x: x[0], initial_carry(training.memory, 1)) if training.stored_state else ()
    collector = init_collector(key, env_args, buffer.init(env_args, stored))
    return collector.replace(memory=fresh_carries(training.memory, ("actor",), env_args.n_envs))


def recurrent_pipeline(
    actor: nn.Module,
    explore: Explore,
    env_args: EnvironmentConfig,
    warmup: Callable[[BaseAgentState], jax.Array],
    stored_state: bool,
) -> ActionPipeline:
    """Act from the actor's memory, uniformly during the warm-up.

    The actor reads every observation, warm-up included, so its carry always holds the
    episode so far. The extras hand collection the carries after the step and the replay
    the episode starts (and, for stored-state replay, the carry before the step).
    """

    def act(state: BaseAgentState, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, dict[str, Any]]:
        memory = state.collector_state.memory
        policy_key, uniform_key = jax.random.split(key)
        carry = memory.carries["actor"]
        after, pi = actor.apply(state.actor_state.params, carry, obs[None], memory.episode_start[None])
        action = explore(pi, policy_key, state.collector_state.timestep)[0]
        action = jnp.where(warmup(state), uniform_action(uniform_key, env_args, env_args.n_envs), action)
        extras = {"memory": memory.replace(carries={"actor": after}), "episode_start": memory.episode_start}
        return action, {**extras, "carry": carry} if stored_state else extras

    return act


def recurrent_evaluation(
    actor: nn.Module,
    critic: nn.Module,
    memory: MemoryConfig,
    greedy: Callable[[Any], tuple[jax.Array, jax.Array]],
    value: Callable[[jax.Array], jax.Array] | None,
    gamma: float,
    expert: ExpertInAgentUnits | None = None,
) -> EvalPolicy:
    """Greedy actions with the actor's memory carried through each evaluation episode.

    `greedy(pi) -> (actions, entropies)` reads the actor's output; with `value` (the
    reduction of the critic's ensemble axis) the critic carries its memory too and values
    the greedy action. An `expert` plays its own episodes beside, for comparison.
    """

    def init(state: BaseAgentState, n: int) -> EvalMemory:
        return EvalMemory(fresh_carries(memory, NETWORKS, n), jnp.zeros((n,)))

    def act(state: BaseAgentState, obs: jax.Array, carry: EvalMemory):
        carries, starts = carry.memory.carries, carry.memory.episode_start[None]
        actor_carry, pi = actor.apply(state.actor_state.params, carries["actor"], obs[None], starts)
        action, entropy = greedy(pi)
        critic_carry, estimate = carries["critic"], carry.value
        if value is not None:
            critic_carry, q = critic.apply(state.critic_state.params, critic_carry, obs[None], starts, action)
            estimate = value(q)[0]
        # one episode per env: no reset after the first step
        after = MemoryCarries({"actor": actor_carry, "critic": critic_carry}, jnp.zeros_like(starts[0]))
        return action[0], entropy[0], EvalMemory(after, estimate)

    def estimate(state: BaseAgentState, obs: jax.Array, action: jax.Array, carry: EvalMemory) -> jax.Array:
        return carry.value

    return EvalPolicy(
        act,
        estimate if value is not None else None,
        gamma,
        carry=PolicyCarry(init, advance=lambda carry, reward: carry),
        expert=expert,
    )
