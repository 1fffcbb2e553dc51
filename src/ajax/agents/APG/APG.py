"""APG: analytic policy gradients through a differentiable simulator (Brax's APG, arXiv:2106.13281)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

from ajax.agents.APG.state import APGConfig
from ajax.agents.APG.train_APG import VisitedStates, make_train
from ajax.agents.base import ActorCritic, field_names, run_config, shared_arguments
from ajax.checks import in_interval, require_counts, require_in_interval
from ajax.environments.differentiable import with_gradients
from ajax.environments.system_class import SystemClass, SystemClassWrapper
from ajax.extensions import LOOP_PHASES, Extension
from ajax.modules.pid_actor import PIDPolicy
from ajax.networks.memory import MemoryConfig
from ajax.schedule import Schedule

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

    `memory=` puts a GRU, LSTM, transformer or Mamba between the layers and the output,
    and `pid_head=True` ends the actor in a PID layer with learned gains (`ajax.modules`);
    either makes the controller carry its state through each episode. `actor_architecture=
    PIDPolicy(...)` makes it a feed-forward PID on the env's error terms instead.
    `APG.contextual_controller` builds Busetto et al.'s in-context controller from both.
    """

    name: ClassVar[str] = "APG"
    pid_actor_form: ClassVar[str | None] = "deterministic"
    continuous: ClassVar[bool | None] = True
    supports_memory: ClassVar[bool] = True
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"actor_loss"}
    batch_fields: ClassVar[frozenset[str]] = field_names(VisitedStates)
    update_metrics: ClassVar[bool] = True
    make_train = staticmethod(make_train)
    sweepable: ClassVar[frozenset[str]] = frozenset(
        {
            "actor_learning_rate",
            "max_grad_norm",
            "weight_decay",
        }
    )

    def __init__(
        self,
        env_id: str | Any,
        n_envs: int = 16,
        actor_learning_rate: Schedule = 1e-4,
        actor_architecture: Sequence[str] | PIDPolicy = ("32", "silu", "32", "silu", "32", "silu", "32", "silu"),
        horizon: int = 32,
        max_grad_norm: float | None = 1.0,
        lr_schedule: str | None = None,
        warmup_updates: int | None = 0,
        betas: tuple[float, float] = (0.7, 0.95),
        weight_decay: float = 0.0,
        pid_head: bool = False,
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
        if warmup_updates is not None:
            require_counts(0, warmup_updates=warmup_updates)
        if lr_schedule not in LR_SCHEDULES:
            raise ValueError(f"lr_schedule must be one of {LR_SCHEDULES}, got {lr_schedule!r}.")
        if lr_schedule is not None and callable(actor_learning_rate):
            raise ValueError(
                f"lr_schedule={lr_schedule!r} schedules actor_learning_rate from its peak: give the peak as a number, "
                f"or drop lr_schedule and keep the schedule {actor_learning_rate!r}."
            )
        if warmup_updates != 0 and lr_schedule is None:
            raise ValueError("warmup_updates warms the learning rate up: pass lr_schedule='warmup_cosine' with it.")
        if not (isinstance(betas, tuple | list) and len(betas) == 2 and all(in_interval("[0, 1)", b) for b in betas)):
            raise ValueError(f"betas must be Adam's two decay rates (b1, b2), each in [0, 1), got {betas!r}.")
        require_in_interval("[0, inf)", weight_decay=weight_decay)
        if not isinstance(pid_head, bool):
            raise ValueError(f"pid_head must be True or False, got {pid_head!r}.")
        if pid_head and isinstance(actor_architecture, PIDPolicy):
            raise ValueError(
                "APG's actor_architecture=PIDPolicy(...) is a PID on the env's error terms already; pid_head=True "
                "ends a network of layer strings in a PID layer. Choose one."
            )
        if pid_head and self.extensions.extensions:
            raise ValueError(
                "APG with pid_head=True takes no extensions yet: ImitationLoss reads a feed-forward actor. "
                "Drop pid_head or the extensions."
            )
        self.env_args = dataclasses.replace(self.env_args, env=with_gradients(self.env_args.env))
        self.actor_optimizer_args = dataclasses.replace(
            self.actor_optimizer_args, b1=float(betas[0]), b2=float(betas[1])
        )
        self.agent_config = APGConfig(
            horizon=int(horizon),
            lr_schedule=lr_schedule,
            warmup_updates=None if warmup_updates is None else int(warmup_updates),
            weight_decay=float(weight_decay),
            pid_head=pid_head,
        )

    def rollout_steps(self) -> int:
        """Env steps per update, over every copy: APG's budgets are counted as an on-policy agent's."""
        return self.agent_config.horizon * int(self.env_args.n_envs)

    @classmethod
    def contextual_controller(
        cls,
        task: Any,
        system_class: SystemClass,
        env_params: Any = None,
        *,
        n_envs: int = 32,
        horizon: int | None = None,
        learning_rate: float = 5e-4,
        num_layers: int = 8,
        num_heads: int = 4,
        hidden_size: int = 128,
        context: int = 100,
        warmup_updates: int | None = None,
        weight_decay: float = 0.0,
        max_grad_norm: float | None = 1.0,
    ) -> APG:
        """Busetto et al.'s contextual controller (2024, arXiv:2411.06482) on `task` across `system_class`.

        Every episode of every copy runs a system drawn from the class; the controller reads
        the tracking error and its previous input (a `ModelReferenceWrapper` task's
        observation) through a transformer that sees the last `context` steps, and a PID
        layer maps its output to the input. The paper's settings: 8 layers, 4 heads, width
        128, context 100; AdamW (0.9, 0.95), rate 5e-4, no weight decay, a warm-up
        (its 5,000 iterations, or a tenth of a shorter run) then a cosine to a tenth;
        gradients clipped to a global norm of 1 (without it, back-propagation over 100
        steps across a class diverged in an earlier re-implementation). The horizon is the
        task's episode (`task.reference.horizon`), so each update is one whole episode of
        every copy, and the episode's time limit is the task's, whatever `env_params` set. `n_envs`,
        the batch of episodes per update, is Ajax's choice.
        """
        reference = getattr(task, "reference", None)
        if horizon is None:
            if reference is None:
                raise ValueError(
                    "contextual_controller takes its horizon from a ModelReferenceWrapper task's reference; "
                    f"{type(task).__name__} has none, so pass horizon= (the episode's length)."
                )
            horizon = reference.horizon
        memory = MemoryConfig(
            kind="transformer", hidden_size=hidden_size, num_layers=num_layers, num_heads=num_heads, window=context
        )
        return cls(
            SystemClassWrapper(task, system_class),
            n_envs=n_envs,
            actor_learning_rate=learning_rate,
            actor_architecture=(),
            horizon=horizon,
            max_grad_norm=max_grad_norm,
            lr_schedule="warmup_cosine",
            warmup_updates=warmup_updates,
            betas=(0.9, 0.95),
            weight_decay=weight_decay,
            pid_head=True,
            # The task's episode, whatever limit the plant's own params set.
            episode_length=None if reference is None else reference.horizon,
            env_params=env_params,
            memory=memory,
        )
