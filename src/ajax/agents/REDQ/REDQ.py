"""REDQ: randomized ensembled double Q-learning (Chen et al. 2021, arXiv:2101.05982)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from ajax.agents.base import run_config, shallow_fields, shared_arguments
from ajax.agents.REDQ.state import REDQConfig
from ajax.agents.REDQ.train_REDQ import make_train
from ajax.agents.SAC import SAC
from ajax.agents.SAC.SAC import SEQUENCE_DEFAULTS
from ajax.checks import require_counts
from ajax.deprecation import CLONING_KEYWORDS, removed_keywords
from ajax.extensions import LOOP_PHASES, Extension
from ajax.modules.pid_actor import PIDPolicy
from ajax.schedule import Schedule


@removed_keywords(*CLONING_KEYWORDS, "pid_actor_config")
class REDQ(SAC):
    """SAC with an ensemble of N critics, a target from a random subset of M, G updates per step.

    Defaults: SAC's, with N = 10 critics, M = 2 and G = 20 critic updates per tick, each on
    a fresh minibatch, and one actor update against the ensemble's mean. docs/agents.md
    has the paper, Ajax's choices and the calibrated results.
    """

    name: ClassVar[str] = "REDQ"
    # SAC's action phase is SAC's own: its descendants fold the replay critic's phases only.
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"on_target", "critic_loss", "actor_loss"}
    make_train = staticmethod(make_train)

    def __init__(
        self,
        env_id: str | Any,
        n_envs: int = 1,
        actor_learning_rate: Schedule = 3e-4,
        critic_learning_rate: Schedule = 3e-4,
        alpha_learning_rate: float = 3e-4,
        actor_architecture: Sequence[str] | PIDPolicy = ("256", "relu", "256", "relu"),
        critic_architecture: Sequence[str] = ("256", "relu", "256", "relu"),
        gamma: float = 0.99,
        tau: float = 0.005,
        buffer_size: int = 1_000_000,
        batch_size: int = 256,
        learning_starts: int = 10_000,
        train_freq: int = 1,
        gradient_steps: int = 1,
        alpha_init: float = 1.0,
        learn_alpha: bool = True,
        target_entropy: float | None = None,
        n_critics: int = 10,
        subset_size: int = 2,
        utd_ratio: int = 20,
        max_grad_norm: float | None = None,
        episode_length: int | None = None,
        action_repeat: int = 1,
        env_params: Any = None,
        normalize_observations: bool = False,
        normalize_rewards: bool = False,
        expert_policy: Callable[..., Any] | None = None,
        extensions: Sequence[Extension] = (),
        memory: Any = None,
        sequence_length: int = SEQUENCE_DEFAULTS[0],
        burn_in: int = SEQUENCE_DEFAULTS[1],
        stored_state: bool = False,
    ) -> None:
        config = run_config(locals(), self.name)
        require_counts(n_critics=n_critics, subset_size=subset_size, utd_ratio=utd_ratio)
        if subset_size > n_critics:
            raise ValueError(
                f"subset_size={subset_size} must lie between 1 and n_critics={n_critics}: the target takes "
                "the min over a subset of the ensemble's critics."
            )
        super().__init__(
            **shared_arguments(
                config,
                SAC.__init__,
                expert_buffer_n_steps=0,
                jsrl_curriculum=None,
                use_sde=False,
                log_std_init=-3.0,
                action_pipeline=None,
            )
        )
        self.config = config
        self.agent_config = REDQConfig(
            **{**shallow_fields(self.agent_config), "n_critics": int(n_critics)},
            subset_size=int(subset_size),
            utd_ratio=int(utd_ratio),
        )
