"""APO: average-reward PPO (Ma et al. 2021, arXiv:2106.03442)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, ClassVar

from ajax.agents.APO.state import APOConfig
from ajax.agents.APO.train_APO import make_train
from ajax.agents.base import ENCODER, NORMALIZATION, ActorCritic, expert_in_agent_units, field_names
from ajax.agents.PPO.PPO import (
    CLIPPED_EPOCHS,
    GAE_LAMBDA,
    INITIALIZERS,
    PROXIMAL_ENVIRONMENT,
    PROXIMAL_NETWORKS,
    check_rollout_split,
    checked_initializers,
)
from ajax.agents.PPO.train_PPO import Minibatch
from ajax.deprecation import CLONING_KEYWORDS, removed_keywords
from ajax.extensions import LOOP_PHASES
from ajax.hyperparameters import Hyperparameters, checked_later, keywords, number


@removed_keywords(*CLONING_KEYWORDS, "pid_actor_config")
class APO(ActorCritic):
    """PPO for the average-reward criterion, for discrete and continuous actions.

    No discount: the critic learns the differential value of r - rho, with rho (the state's
    `average_reward`) averaging the rollouts' mean rewards with step `average_reward_step`
    (0.1), and the penalty `nu` (E[V])^2 (nu = 0.1) keeping its level from drifting. Other
    defaults are PPO's, its initialisers too (`encoder_kernel_init`, `actor_bias_init`,
    `critic_bias_init`; the mean's weights keep PPO's default). docs/agents/apo.md has the
    paper, Ajax's choices and the calibrated result.
    """

    name: ClassVar[str] = "APO"
    pid_actor_form: ClassVar[str | None] = "gaussian"
    continuous: ClassVar[bool | None] = None
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"actor_loss"}
    batch_fields: ClassVar[frozenset[str]] = field_names(Minibatch)  # PPO's clipped epochs
    make_train = staticmethod(make_train)
    # PPO's keywords less the discount (fixed at 1) and the recurrent ones (APO has no memory);
    # of the initialisers, the mean's weights keep PPO's default.
    hyperparameters: ClassVar[Hyperparameters] = (
        PROXIMAL_NETWORKS
        | GAE_LAMBDA
        | CLIPPED_EPOCHS
        | keywords(
            average_reward_step=number(
                0.1, "(0, 1]", sweep=True, doc="the reward rate rho's step towards each rollout's mean reward"
            ),
            nu=number(
                0.1, "[0, inf)", sweep=True, doc="weight of the penalty nu (E[V])^2 that keeps V's level (0: off)"
            ),
        )
        | PROXIMAL_ENVIRONMENT
        | NORMALIZATION
        | ENCODER
        | keywords(
            expert_policy=checked_later(
                None, "a function of the observation, or None", doc="an expert whose return is logged beside APO's"
            ),
        )
        | INITIALIZERS.fixing(mean_kernel_init=None)
    )

    def __init__(self, env_id: str | Any, **settings: Any) -> None:
        super().__init__(env_id, **settings)
        s = self.settings
        check_rollout_split(s.n_steps, s.n_envs, s.batch_size, s.n_epochs)
        # The settings are the keywords of the same names; the discount is fixed at 1.
        own = {f.name: s[f.name] for f in fields(APOConfig) if f.name in self.hyperparameters.declared}
        initializers = checked_initializers(
            self.env_args, s.actor_architecture, **{name: s[name] for name in INITIALIZERS.declared}
        )
        self.agent_config = APOConfig(
            gamma=1.0,
            expert=expert_in_agent_units(s.expert_policy, self.env_args),
            initializers=initializers,
            **own,
        )
