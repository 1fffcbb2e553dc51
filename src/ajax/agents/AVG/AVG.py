"""AVG: action value gradient, deep RL without batches, targets or replay (Vasan et al. 2024)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from ajax.agents.AVG.state import AVGConfig
from ajax.agents.AVG.train_AVG import make_train
from ajax.agents.base import DISCOUNT, ENCODER, ENVIRONMENT, ActorCritic, expert_in_agent_units, two_networks
from ajax.deprecation import removed_keywords
from ajax.extensions import LOOP_PHASES
from ajax.hyperparameters import Hyperparameters, checked_later, keywords, number


@removed_keywords("pid_actor_config")
class AVG(ActorCritic):
    """Incremental soft actor-critic: one update per sample, no replay buffer, no target network.

    Defaults: one env, actor learning rate 6.3e-3, critic 8.7e-3, Adam with beta1 = 0, a
    fixed entropy coefficient of 0.07, gamma 0.99, two 256-unit leaky-relu layers, and the
    paper's observation normalisation, unit-norm penultimate features and scaled TD error.
    docs/agents/avg.md has the paper, Ajax's choices and the calibrated result.
    """

    name: ClassVar[str] = "AVG"
    pid_actor_form: ClassVar[str | None] = "squashed"
    continuous: ClassVar[bool | None] = True
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"on_target", "critic_loss", "actor_loss"}
    make_train = staticmethod(make_train)
    # AVG normalises observations and scales its TD error itself, as its paper does (state.py,
    # core.py): it takes no normalize_observations or normalize_rewards.
    hyperparameters: ClassVar[Hyperparameters] = (
        two_networks((6.3e-3, 8.7e-3), ("256", "leaky_relu", "256", "leaky_relu"), pid=True)
        | keywords(
            gamma=DISCOUNT,
            alpha=number(0.07, "[0, inf)", sweep=True, doc="the entropy weight, held fixed: AVG learns no temperature"),
        )
        | ENVIRONMENT
        | ENCODER
        | keywords(
            expert_policy=checked_later(
                None, "a function of the observation, or None", doc="logs the expert's return beside the agent's"
            ),
        )
    )

    def __init__(self, env_id: str | Any, **settings: Any) -> None:
        super().__init__(env_id, **settings)
        s = self.settings
        # Single-sample gradients: momentum would average over correlated consecutive steps.
        self.optimizer_args = {role: dataclasses.replace(args, b1=0.0) for role, args in self.optimizer_args.items()}
        self.agent_config = AVGConfig(
            gamma=float(s.gamma), alpha=float(s.alpha), expert=expert_in_agent_units(s.expert_policy, self.env_args)
        )
