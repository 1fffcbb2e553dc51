"""APO: average-reward PPO (Ma et al. 2021, arXiv:2106.03442)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import Any, ClassVar

from ajax.agents.APO.state import APOConfig
from ajax.agents.APO.train_APO import make_train
from ajax.agents.base import ActorCritic, expert_in_agent_units, field_names, run_config, shared_arguments
from ajax.agents.PPO.PPO import check_clipped_epochs, checked_initializers
from ajax.agents.PPO.state import Initializer
from ajax.agents.PPO.train_PPO import Minibatch
from ajax.checks import require_in_interval
from ajax.deprecation import CLONING_KEYWORDS, removed_keywords
from ajax.extensions import LOOP_PHASES, Extension
from ajax.modules.pid_actor import PIDPolicy
from ajax.schedule import Schedule


@removed_keywords(*CLONING_KEYWORDS, "pid_actor_config")
class APO(ActorCritic):
    """PPO for the average-reward criterion, for discrete and continuous actions.

    No discount: the critic learns the differential value of r - rho, with rho (the state's
    `average_reward`) averaging the rollouts' mean rewards with step `average_reward_step`
    (0.1), and the penalty `nu` (E[V])^2 (nu = 0.1) keeping its level from drifting. Other
    defaults are PPO's, its initialisers too (`encoder_kernel_init`, `actor_bias_init`,
    `critic_bias_init`; the mean's weights keep PPO's default). docs/agents.md has the
    paper, Ajax's choices and the calibrated result.
    """

    name: ClassVar[str] = "APO"
    pid_actor_form: ClassVar[str | None] = "gaussian"
    continuous: ClassVar[bool | None] = None
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"actor_loss"}
    batch_fields: ClassVar[frozenset[str]] = field_names(Minibatch)  # PPO's clipped epochs
    make_train = staticmethod(make_train)
    sweepable: ClassVar[frozenset[str]] = frozenset(
        {
            "actor_learning_rate",
            "critic_learning_rate",
            "gae_lambda",
            "clip_range",
            "ent_coef",
            "vf_coef",
            "average_reward_step",
            "nu",
            "max_grad_norm",
        }
    )

    def __init__(
        self,
        env_id: str | Any,
        n_envs: int = 4,
        actor_learning_rate: Schedule = 3e-4,
        critic_learning_rate: Schedule = 3e-4,
        actor_architecture: Sequence[str] | PIDPolicy = ("128", "tanh", "128", "tanh"),
        critic_architecture: Sequence[str] = ("128", "tanh", "128", "tanh"),
        gae_lambda: float = 0.95,
        n_steps: int = 2048,
        batch_size: int = 64,
        n_epochs: int = 10,
        clip_range: Schedule = 0.2,
        ent_coef: float = 0.0,
        vf_coef: float = 0.5,
        normalize_advantage: bool = True,
        average_reward_step: float = 0.1,
        nu: float = 0.1,
        max_grad_norm: float | None = 0.5,
        episode_length: int | None = None,
        action_repeat: int = 1,
        env_params: Any = None,
        normalize_observations: bool = False,
        normalize_rewards: bool = False,
        expert_policy: Callable[..., Any] | None = None,
        extensions: Sequence[Extension] = (),
        memory: Any = None,
        encoder_kernel_init: Initializer | None = None,
        actor_bias_init: Initializer | None = None,
        critic_bias_init: Initializer | None = None,
    ) -> None:
        self.config = run_config(locals(), self.name)
        super().__init__(**shared_arguments(self.config))
        check_clipped_epochs(n_steps, n_envs, batch_size, n_epochs, clip_range)
        require_in_interval("[0, 1]", gae_lambda=gae_lambda)
        # The step of rho <- rho + step * (mean rollout reward - rho); nu weighs nu * (E[V])^2 (0 turns it off).
        require_in_interval("(0, 1]", average_reward_step=average_reward_step)
        require_in_interval("[0, inf)", ent_coef=ent_coef, vf_coef=vf_coef, nu=nu)
        # The settings are the constructor's own arguments; the discount is fixed at 1.
        settings = {
            f.name: self.config[f.name]
            for f in fields(APOConfig)
            if f.name not in ("gamma", "expert", "bptt_length", "n_minibatches", "initializers")
        }
        initializers = checked_initializers(
            self.env_args,
            actor_architecture,
            encoder_kernel_init=encoder_kernel_init,
            actor_bias_init=actor_bias_init,
            critic_bias_init=critic_bias_init,
        )
        self.agent_config = APOConfig(
            gamma=1.0,
            expert=expert_in_agent_units(expert_policy, self.env_args),
            initializers=initializers,
            **settings,
        )
