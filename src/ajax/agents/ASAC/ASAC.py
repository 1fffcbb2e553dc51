"""ASAC: average-reward soft actor-critic (Adamczyk et al. 2025, arXiv:2501.09080)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ajax.agents.ASAC.state import ASACConfig
from ajax.agents.ASAC.train_ASAC import make_train
from ajax.agents.base import run_config, shallow_fields, shared_arguments
from ajax.agents.SAC import SAC
from ajax.agents.SAC.SAC import SEQUENCE_DEFAULTS
from ajax.checks import require_in_interval
from ajax.deprecation import removed_keywords
from ajax.extensions import LOOP_PHASES, Extension
from ajax.extensions.ibrl import IBRLTargets
from ajax.modules.pid_actor import PIDPolicy
from ajax.schedule import Schedule


@removed_keywords("pid_actor_config")
class ASAC(SAC):
    """SAC for the average-reward criterion: no discount, a differential soft critic, a reward rate.

    `state.theta` holds each seed's estimate of the reward per step, entropy term
    included; it starts at 0 and moves by `theta_learning_rate` (0.01) times the mean
    differential TD error of each minibatch. Other defaults are SAC's. docs/agents.md has
    the paper, Ajax's choices and the calibrated result.
    """

    name: ClassVar[str] = "ASAC"
    # SAC's action phase is SAC's own: its descendants fold the replay critic's phases only.
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"on_target", "critic_loss", "actor_loss"}
    discounted_q_critic: ClassVar[bool] = False  # its critic is differential: no discounted return to fit
    make_train = staticmethod(make_train)
    # SAC's, less the discount the average-reward criterion has none of, plus the reward rate's step.
    sweepable: ClassVar[frozenset[str]] = (SAC.sweepable - {"gamma"}) | {"theta_learning_rate"}

    def __init__(
        self,
        env_id: str | Any,
        n_envs: int = 1,
        actor_learning_rate: Schedule = 3e-4,
        critic_learning_rate: Schedule = 3e-4,
        alpha_learning_rate: float = 3e-4,
        theta_learning_rate: float = 1e-2,
        actor_architecture: Sequence[str] | PIDPolicy = ("256", "relu", "256", "relu"),
        critic_architecture: Sequence[str] = ("256", "relu", "256", "relu"),
        tau: float = 0.005,
        buffer_size: int = 1_000_000,
        batch_size: int = 256,
        learning_starts: int = 10_000,
        train_freq: int = 1,
        gradient_steps: int = 1,
        alpha_init: float = 1.0,
        learn_alpha: bool = True,
        target_entropy: float | None = None,
        max_grad_norm: float | None = None,
        episode_length: int | None = None,
        action_repeat: int = 1,
        env_params: Any = None,
        normalize_observations: bool = False,
        normalize_rewards: bool = False,
        extensions: Sequence[Extension] = (),
        memory: Any = None,
        sequence_length: int = SEQUENCE_DEFAULTS[0],
        burn_in: int = SEQUENCE_DEFAULTS[1],
        stored_state: bool = False,
    ) -> None:
        config = run_config(locals(), self.name)
        require_in_interval("(0, 1]", theta_learning_rate=theta_learning_rate)
        super().__init__(
            **shared_arguments(
                config,
                SAC.__init__,
                gamma=1.0,
                expert_policy=None,
                expert_buffer_n_steps=0,
                jsrl_curriculum=None,
                use_sde=False,
                log_std_init=-3.0,
                action_pipeline=None,
            )
        )
        self.config = config
        for extension in self.extensions.extensions:
            if isinstance(extension, IBRLTargets):
                raise ValueError(
                    "IBRLTargets bootstraps a discounted target, r + gamma Q'(s', a_expert); ASAC's differential "
                    "target r - rho + Q'(s', a') has no discount to meet it. Use it with SAC, TD3, REDQ or AVG."
                )
        theta_rate = float(theta_learning_rate)
        self.agent_config = ASACConfig(**shallow_fields(self.agent_config), theta_learning_rate=theta_rate)
