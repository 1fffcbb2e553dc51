"""Training in stages, each from the last one's controller: Algorithm 2 of Busetto et al. (2024).

A controller for a whole class of systems is hard to find from scratch: the gradient of the
matching cost over a class, through 100 steps of closed loop, is noisy and often explosive.
The paper first fits the nominal system with a fixed reference, then widens the problem
(the class, the references, the initial conditions), each stage starting from the previous
stage's parameters. Each stage here is an agent and a budget; the controller's parameters
carry over, the rest (env copies, optimiser and its schedule, counters) starts afresh, as
each stage is a new problem.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ajax.agents.base import ActorCritic
from ajax.checks import require_counts
from ajax.state import BaseAgentState


@dataclass(frozen=True)
class CurriculumStage:
    """One stage: train `agent` for `n_timesteps` env steps."""

    agent: ActorCritic
    n_timesteps: int

    def __post_init__(self) -> None:
        if not isinstance(self.agent, ActorCritic):
            raise TypeError(f"A CurriculumStage trains an agent, such as APG(...); got {type(self.agent).__name__}.")
        require_counts(n_timesteps=self.n_timesteps)


class CurriculumResult(NamedTuple):
    """`final`: the last stage's (state, metrics); `stages`: every stage's, in order."""

    final: tuple[BaseAgentState, Any]
    stages: list[tuple[BaseAgentState, Any]]


def train_curriculum(stages: Sequence[CurriculumStage], seed: int | Sequence[int] = 0) -> CurriculumResult:
    """Train the stages in order, each starting from the previous stage's actor parameters.

    Returns `((state, metrics), every stage's (state, metrics))`, so
    `(state, aux), *_ = train_curriculum(stages)` reads the final controller.
    """
    stages = list(stages)
    if not stages:
        raise ValueError("train_curriculum needs at least one CurriculumStage.")
    # Every stage's fresh state first, so that a stage that cannot take the last one's
    # controller is refused before anything trains.
    starts = [stage.agent.train(seed=seed, n_timesteps=0)[0] for stage in stages]
    for index in range(1, len(stages)):
        _check_layouts(starts[index - 1], starts[index], index)
    results: list[tuple[BaseAgentState, Any]] = []
    for stage, start in zip(stages, starts, strict=True):
        if results:
            # train() donates its initial state: copy, so the last stage's result stays whole.
            params = jax.tree.map(jnp.copy, results[-1][0].actor_state.params)
            start = start.replace(actor_state=start.actor_state.replace(params=params))
        results.append(stage.agent.train(initial_state=start, n_timesteps=stage.n_timesteps))
    return CurriculumResult(results[-1], results)


def _check_layouts(previous: BaseAgentState, start: BaseAgentState, index: int) -> None:
    """Refuse a stage whose actor's parameters do not have the previous stage's layout."""
    theirs, ours = previous.actor_state.params, start.actor_state.params
    shapes = lambda tree: jax.tree.map(lambda x: (x.shape, x.dtype), tree)  # noqa: E731
    if jax.tree.structure(theirs) != jax.tree.structure(ours) or shapes(theirs) != shapes(ours):
        raise ValueError(
            f"Stage {index} cannot start from stage {index - 1}'s controller: their actors differ in layout "
            "(architecture, memory, PID head or action size). Build every stage's agent with the same actor, "
            "e.g. APG.contextual_controller with the same sizes."
        )
