"""APG: analytic policy gradients through a differentiable simulator (Brax's APG, arXiv:2106.13281)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

from ajax.agents.APG.state import APGConfig
from ajax.agents.APG.train_APG import make_train
from ajax.agents.base import ActorCritic, run_config, shared_arguments
from ajax.checks import require_counts
from ajax.environments.differentiable import with_gradients
from ajax.extensions import LOOP_PHASES, Extension

LR_SCHEDULES = (None, "warmup_cosine")


class APG(ActorCritic):
    """A deterministic policy trained on the gradient of its return through the env's dynamics.

    Each update rolls `n_envs` copies `horizon` steps (continuing from the last update) and
    takes one Adam step on minus the return, the gradients clipped to a global norm of
    `max_grad_norm`. The env must have differentiable transitions
    (`ajax.environments.differentiable`: Pendulum-v1, MountainCarContinuous-v0,
    PointRobot-misc, Reacher-misc, Swimmer-misc, or a wrapper around one, such as a
    model-reference tracking task). Defaults are Brax's APG's: horizon 32, learning rate
    1e-4, Adam (0.7, 0.95), four 32-unit silu layers; gradient clipping at 1.0 is on, and 16
    env copies. `lr_schedule="warmup_cosine"` warms the rate up over `warmup_updates` and
    decays it by a cosine to a tenth over the run. Without a LoggingConfig, `train` returns
    each update's metrics (loss, matching loss, M-RMSE) in place of evaluations.
    """

    name: ClassVar[str] = "APG"
    continuous: ClassVar[bool | None] = True
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES
    update_metrics: ClassVar[bool] = True
    make_train = staticmethod(make_train)

    def __init__(
        self,
        env_id: str | Any,
        n_envs: int = 16,
        actor_learning_rate: float = 1e-4,
        actor_architecture: Sequence[str] = ("32", "silu", "32", "silu", "32", "silu", "32", "silu"),
        horizon: int = 32,
        max_grad_norm: float | None = 1.0,
        lr_schedule: str | None = None,
        warmup_updates: int = 0,
        episode_length: int | None = None,
        action_repeat: int = 1,
        env_params: Any = None,
        extensions: Sequence[Extension] = (),
        memory: Any = None,
    ) -> None:
        self.config = run_config(locals(), self.name)
        super().__init__(
            **shared_arguments(
                self.config,
                critic_learning_rate=actor_learning_rate,  # no critic: nothing reads it
                critic_architecture=(),
                normalize_observations=False,
                normalize_rewards=False,
            )
        )
        require_counts(horizon=horizon)
        require_counts(0, warmup_updates=warmup_updates)
        if lr_schedule not in LR_SCHEDULES:
            raise ValueError(f"lr_schedule must be one of {LR_SCHEDULES}, got {lr_schedule!r}.")
        if warmup_updates and lr_schedule is None:
            raise ValueError("warmup_updates warms the learning rate up: pass lr_schedule='warmup_cosine' with it.")
        self.env_args = dataclasses.replace(self.env_args, env=with_gradients(self.env_args.env))
        # Brax's APG: Adam with beta1 0.7, beta2 0.95.
        self.actor_optimizer_args = dataclasses.replace(self.actor_optimizer_args, b1=0.7, b2=0.95)
        self.agent_config = APGConfig(horizon=int(horizon), lr_schedule=lr_schedule, warmup_updates=int(warmup_updates))

    def rollout_steps(self) -> int:
        """Env steps per update, over every copy: APG's budgets are counted as an on-policy agent's."""
        return self.agent_config.horizon * int(self.env_args.n_envs)
