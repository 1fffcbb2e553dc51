"""APG: analytic policy gradients through a differentiable simulator (Brax's APG, arXiv:2106.13281)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from ajax.agents.APG.state import APGConfig
from ajax.agents.APG.train_APG import VisitedStates, make_train
from ajax.agents.base import ARCHITECTURE, ENCODER, ENVIRONMENT, ActorCritic, field_names, gradient_clip
from ajax.checks import in_interval
from ajax.environments.differentiable import with_gradients
from ajax.environments.host import HostEnv
from ajax.environments.system_class import SystemClass, SystemClassWrapper
from ajax.extensions import LOOP_PHASES
from ajax.hyperparameters import (
    Hyperparameter,
    Hyperparameters,
    checked_later,
    choice,
    count,
    flag,
    keywords,
    learning_rate,
    number,
)
from ajax.modules.pid_actor import PIDPolicy
from ajax.networks.memory import MemoryConfig

LR_SCHEDULES = (None, "warmup_cosine")


def _betas(name: str, betas: Any) -> None:
    if not (isinstance(betas, tuple | list) and len(betas) == 2 and all(in_interval("[0, 1)", b) for b in betas)):
        raise ValueError(f"{name} must be Adam's two decay rates (b1, b2), each in [0, 1), got {betas!r}.")


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
    `encoder=` puts an image encoder before the feed-forward actor; the return's gradient
    reaches it through the observations the dynamics produced.
    """

    name: ClassVar[str] = "APG"
    pid_actor_form: ClassVar[str | None] = "deterministic"
    continuous: ClassVar[bool | None] = True
    supports_memory: ClassVar[bool] = True
    rollout_keyword: ClassVar[tuple[str, str]] = ("update window", "horizon")
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"actor_loss"}
    batch_fields: ClassVar[frozenset[str]] = field_names(VisitedStates)
    update_metrics: ClassVar[bool] = True
    make_train = staticmethod(make_train)
    networks: ClassVar[dict[str, tuple[str, str]]] = {"actor": ("actor_learning_rate", "actor_architecture")}
    hyperparameters: ClassVar[Hyperparameters] = (
        keywords(
            actor_learning_rate=learning_rate(1e-4, doc="the policy's AdamW peak step size"),
            actor_architecture=checked_later(
                ("32", "silu", "32", "silu", "32", "silu", "32", "silu"),
                f"{ARCHITECTURE}, or PIDPolicy",
                doc="the policy's hidden layers (PIDPolicy: a PID on the env's error terms)",
            ),
            max_grad_norm=gradient_clip(1.0),
        )
        | keywords(
            horizon=count(32, doc="steps each update back-propagates through"),
            lr_schedule=choice(None, LR_SCHEDULES, doc="'warmup_cosine': warm up, then a cosine to a tenth"),
            warmup_updates=count(0, 0, optional=True, doc="the warm-up's updates (None: 5,000, or a tenth of the run)"),
            betas=Hyperparameter((0.7, 0.95), _betas, "two numbers in [0, 1)", doc="AdamW's decay rates (b1, b2)"),
            weight_decay=number(0.0, "[0, inf)", sweep=True, doc="AdamW's decoupled weight decay (0: Adam)"),
            pid_head=flag(False, doc="end the actor in a PID layer with learned gains, carried through each episode"),
        )
        | ENVIRONMENT.with_defaults(n_envs=16)
        | ENCODER
    )

    def __init__(self, env_id: str | Any, **settings: Any) -> None:
        super().__init__(env_id, **settings)
        s = self.settings
        if isinstance(self.env_args.env, HostEnv):
            raise ValueError(
                f"APG back-propagates through its rollouts, and {self.env_args.env.name} steps on the host, where no "
                "gradient flows. Train APG on a JAX environment (a gymnax, Brax or Playground id), or use SAC or PPO."
            )
        if self.network_args.encoder is not None and (self.network_args.memory is not None or s.pid_head):
            raise ValueError(
                "APG's controller with memory= or pid_head=True reads flat observations; behind an encoder only its "
                "feed-forward actor is built. Drop memory= and pid_head, or use encoder='mlp'."
            )
        if s.lr_schedule is not None and callable(s.actor_learning_rate):
            raise ValueError(
                f"lr_schedule={s.lr_schedule!r} schedules actor_learning_rate from its peak: give the peak as a "
                f"number, or drop lr_schedule and keep the schedule {s.actor_learning_rate!r}."
            )
        if s.warmup_updates != 0 and s.lr_schedule is None:
            raise ValueError("warmup_updates warms the learning rate up: pass lr_schedule='warmup_cosine' with it.")
        if s.pid_head and isinstance(s.actor_architecture, PIDPolicy):
            raise ValueError(
                "APG's actor_architecture=PIDPolicy(...) is a PID on the env's error terms already; pid_head=True "
                "ends a network of layer strings in a PID layer. Choose one."
            )
        if s.pid_head and self.extensions.extensions:
            raise ValueError(
                "APG with pid_head=True takes no extensions yet: ImitationLoss reads a feed-forward actor. "
                "Drop pid_head or the extensions."
            )
        self.env_args = dataclasses.replace(self.env_args, env=with_gradients(self.env_args.env))
        b1, b2 = (float(beta) for beta in s.betas)
        self.optimizer_args["actor"] = dataclasses.replace(self.optimizer_args["actor"], b1=b1, b2=b2)
        self.agent_config = APGConfig(
            horizon=int(s.horizon),
            lr_schedule=s.lr_schedule,
            warmup_updates=None if s.warmup_updates is None else int(s.warmup_updates),
            weight_decay=float(s.weight_decay),
            pid_head=s.pid_head,
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
