"""`PriorData`: transitions gathered beforehand (an expert's, an earlier run's) in the replay from the start."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import jax

from ajax.buffers.dataset import Dataset, check_dataset
from ajax.buffers.replay import ReplayBuffer
from ajax.environments.interaction import Transition
from ajax.extensions.base import Extension, ExtensionContext
from ajax.state import EnvironmentConfig


class _ByIdentity:
    """A dataset held by identity: hashable, and equal only to itself, so a program compiled with
    one dataset is never reused for another."""

    def __init__(self, dataset: Dataset) -> None:
        self.dataset = dataset


@dataclass(frozen=True)
class PriorData(Extension):
    """Write a `Dataset` into the agent's replay in the fresh state, before the first step.

    The agent then samples the prior transitions beside its own from the first update on,
    and its own steps overwrite them first-in first-out once the buffer is full. For agents
    with a replay (SAC, TD3, REDQ, ASAC, DQN). The dataset is checked against the env at
    construction (shapes, agent units); its observations must be what the agent sees (raw,
    unless the agent normalises them).
    """

    dataset: Any = None

    def __post_init__(self) -> None:
        if self.dataset is None:
            raise TypeError("PriorData needs a dataset: PriorData(ajax.buffers.collect_dataset(env, expert, n_steps)).")
        if not isinstance(self.dataset, _ByIdentity):
            object.__setattr__(self, "dataset", _ByIdentity(self.dataset))

    def bind(self, env_args: EnvironmentConfig) -> PriorData:
        return dataclasses.replace(self, dataset=_ByIdentity(check_dataset(self.dataset.dataset, env_args, self.name)))

    def pretrain(self, ctx: ExtensionContext, agent_state: Any, ext_state: Any) -> tuple[Any, Any]:
        collector = agent_state.collector_state
        if collector.buffer_state is None:
            raise ValueError(
                "PriorData writes into a replay buffer; this agent has none. Use it with SAC, TD3, REDQ, ASAC or DQN."
            )
        data = self.dataset.dataset
        capacity = jax.tree.leaves(collector.buffer_state.experience)[0].shape[1]  # flashbax: (1, capacity, ...)
        if data.size > capacity:
            raise ValueError(f"PriorData's {data.size} transitions exceed the replay's capacity of {capacity}.")
        transitions = Transition(data.obs, data.action, data.reward, data.next_obs, data.terminated, data.truncated)
        return ReplayBuffer(capacity, batch_size=1).add(agent_state, transitions), ext_state
