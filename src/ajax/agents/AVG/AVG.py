"""AVG: action value gradient, deep RL without batches, targets or replay (Vasan et al. 2024)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from ajax.agents.AVG.state import AVGConfig
from ajax.agents.AVG.train_AVG import make_train
from ajax.agents.base import ActorCritic, expert_in_agent_units, run_config, shared_arguments
from ajax.checks import require_in_interval
from ajax.deprecation import removed_keywords
from ajax.extensions import LOOP_PHASES, Extension
from ajax.modules.pid_actor import PIDPolicy
from ajax.schedule import Schedule


@removed_keywords("pid_actor_config")
class AVG(ActorCritic):
    """Incremental soft actor-critic: one update per sample, no replay buffer, no target network.

    Defaults: one env, actor learning rate 6.3e-3, critic 8.7e-3, Adam with beta1 = 0, a
    fixed entropy coefficient of 0.07, gamma 0.99, two 256-unit leaky-relu layers, and the
    paper's observation normalisation, unit-norm penultimate features and scaled TD error.
    docs/agents.md has the paper, Ajax's choices and the calibrated result.
    """

    name: ClassVar[str] = "AVG"
    pid_actor_form: ClassVar[str | None] = "squashed"
    continuous: ClassVar[bool | None] = True
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"on_target", "critic_loss", "actor_loss"}
    make_train = staticmethod(make_train)
    sweepable: ClassVar[frozenset[str]] = frozenset(
        {
            "actor_learning_rate",
            "critic_learning_rate",
            "gamma",
            "alpha",
            "max_grad_norm",
        }
    )

    def __init__(
        self,
        env_id: str | Any,
        n_envs: int = 1,
        actor_learning_rate: Schedule = 6.3e-3,
        critic_learning_rate: Schedule = 8.7e-3,
        actor_architecture: Sequence[str] | PIDPolicy = ("256", "leaky_relu", "256", "leaky_relu"),
        critic_architecture: Sequence[str] = ("256", "leaky_relu", "256", "leaky_relu"),
        gamma: float = 0.99,
        alpha: float = 0.07,
        max_grad_norm: float | None = None,
        episode_length: int | None = None,
        action_repeat: int = 1,
        env_params: Any = None,
        expert_policy: Callable[..., Any] | None = None,
        extensions: Sequence[Extension] = (),
        memory: Any = None,
    ) -> None:
        self.config = run_config(locals(), self.name)
        # AVG normalises observations and scales its TD error itself, as its paper does (state.py, core.py).
        super().__init__(**shared_arguments(self.config, normalize_observations=False, normalize_rewards=False))
        require_in_interval("[0, inf)", alpha=alpha)
        # Single-sample gradients: momentum would average over correlated consecutive steps.
        self.actor_optimizer_args = dataclasses.replace(self.actor_optimizer_args, b1=0.0)
        self.critic_optimizer_args = dataclasses.replace(self.critic_optimizer_args, b1=0.0)
        self.agent_config = AVGConfig(
            gamma=float(gamma), alpha=float(alpha), expert=expert_in_agent_units(expert_policy, self.env_args)
        )
