"""ASAC: average-reward soft actor-critic (Adamczyk et al. 2025, arXiv:2501.09080)."""

from __future__ import annotations

from typing import Any, ClassVar

from ajax.agents.ASAC.state import ASACConfig
from ajax.agents.ASAC.train_ASAC import make_train
from ajax.agents.base import layer_strings_only, shallow_fields
from ajax.agents.SAC import SAC
from ajax.deprecation import removed_keywords
from ajax.extensions import LOOP_PHASES
from ajax.extensions.ibrl import IBRLTargets
from ajax.hyperparameters import Hyperparameters, keywords, number


@removed_keywords("pid_actor_config")
class ASAC(SAC):
    """SAC for the average-reward criterion: no discount, a differential soft critic, a reward rate.

    `state.theta` holds each seed's estimate of the reward per step, entropy term
    included; it starts at 0 and moves by `theta_learning_rate` (0.01) times the mean
    differential TD error of each minibatch. Other defaults are SAC's. docs/agents/asac.md has
    the paper, Ajax's choices and the calibrated result.
    """

    name: ClassVar[str] = "ASAC"
    # SAC's action phase is SAC's own: its descendants fold the replay critic's phases only.
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"on_target", "critic_loss", "actor_loss"}
    discounted_q_critic: ClassVar[bool] = False  # its critic is differential: no discounted return to fit
    make_train = staticmethod(make_train)
    # SAC's keywords less the discount, which the average-reward criterion has none of, and the
    # expert's and SAC's own collection features; plus the reward rate's step.
    hyperparameters: ClassVar[Hyperparameters] = layer_strings_only(SAC.hyperparameters).fixing(
        gamma=1.0,
        expert_policy=None,
        expert_buffer_n_steps=0,
        jsrl_curriculum=None,
        use_sde=False,
        log_std_init=-3.0,
        action_pipeline=None,
    ) | keywords(
        theta_learning_rate=number(
            1e-2, "(0, 1]", sweep=True, doc="the reward rate's step towards each minibatch's mean differential TD error"
        ),
    )

    def __init__(self, env_id: str | Any, **settings: Any) -> None:
        super().__init__(env_id, **settings)
        for extension in self.extensions.extensions:
            if isinstance(extension, IBRLTargets):
                raise ValueError(
                    "IBRLTargets bootstraps a discounted target, r + gamma Q'(s', a_expert); ASAC's differential "
                    "target r - rho + Q'(s', a') has no discount to meet it. Use it with SAC, TD3, REDQ or AVG."
                )
        theta_rate = float(self.settings.theta_learning_rate)
        self.agent_config = ASACConfig(**shallow_fields(self.agent_config), theta_learning_rate=theta_rate)
