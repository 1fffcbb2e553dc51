"""SAC: soft actor-critic (Haarnoja et al. 2018, arXiv:1801.01290)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from ajax.agents.base import ActorCritic, expert_in_agent_units, run_config, shared_arguments
from ajax.agents.recurrent import checked_sequence_training, refuse_with_memory
from ajax.agents.SAC.action_pipeline import ActionPipelineConfig, checked_action_pipeline
from ajax.agents.SAC.state import SACConfig, checked_expert_buffer
from ajax.agents.SAC.train_SAC import make_train
from ajax.agents.updates_owed import UpdatesOwed
from ajax.buffers import ReplayBuffer
from ajax.checks import require_counts, require_finite_positive, require_in_interval
from ajax.deprecation import CLONING_KEYWORDS, removed_keywords, warn_inert
from ajax.extensions import LOOP_PHASES, Extension
from ajax.modules.pid_actor import PIDPolicy
from ajax.schedule import Schedule

SEQUENCE_DEFAULTS = (16, 8)  # (sequence_length, burn_in): R2D2's burn-in of half a sequence


@removed_keywords(*CLONING_KEYWORDS, "pid_actor_config", "use_expert_guidance")
class SAC(ActorCritic):
    """Soft actor-critic with a squashed Gaussian actor, two critics and a learned temperature.

    Defaults: learning rates 3e-4, two 256-unit relu layers, gamma 0.99, a 1e6 buffer,
    batches of 256, learning from step 10,000 (uniform actions before), tau 0.005,
    temperature 1.0 learned towards an entropy of -1 per action dimension. `use_sde=True`
    explores with gSDE (noise scales from `log_std_init`, redrawn every round of `train_freq`).
    `expert_policy=` and `expert_buffer_n_steps` bring in an expert. `memory=` makes the actor
    and the critics recurrent, trained on replayed sequences of `sequence_length` steps after
    `burn_in` (docs/memory.md). `action_pipeline=` (`make_action_pipeline`) changes how collection
    acts, e.g. expert-guided exploration. docs/agents.md has the paper, Ajax's choices and the
    calibrated results.
    """

    name: ClassVar[str] = "SAC"
    pid_actor_form: ClassVar[str | None] = "squashed"
    continuous: ClassVar[bool | None] = True
    supports_memory: ClassVar[bool] = True
    discounted_q_critic: ClassVar[bool] = True
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {
        "on_target",
        "critic_loss",
        "actor_loss",
        "action",
    }
    make_train = staticmethod(make_train)
    sweepable: ClassVar[frozenset[str]] = frozenset(
        {
            "actor_learning_rate",
            "critic_learning_rate",
            "alpha_learning_rate",
            "gamma",
            "tau",
            "alpha_init",
            "target_entropy",
            "max_grad_norm",
        }
    )

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
        use_sde: bool = False,
        log_std_init: float = -3.0,
        max_grad_norm: float | None = None,
        episode_length: int | None = None,
        action_repeat: int = 1,
        env_params: Any = None,
        normalize_observations: bool = False,
        normalize_rewards: bool = False,
        expert_policy: Callable[..., Any] | None = None,
        expert_buffer_n_steps: int = 0,
        extensions: Sequence[Extension] = (),
        memory: Any = None,
        sequence_length: int = SEQUENCE_DEFAULTS[0],
        burn_in: int = SEQUENCE_DEFAULTS[1],
        stored_state: bool = False,
        action_pipeline: ActionPipelineConfig | None = None,
        jsrl_curriculum: bool | None = None,
    ) -> None:
        warn_inert(
            "SAC",
            "SAC counts each env's steps in its episode when an extension reads them (JSRLCurriculum).",
            2,  # the caller is a frame further out, past removed_keywords' check
            jsrl_curriculum=jsrl_curriculum,
        )
        self.config = run_config(locals(), self.name, exclude=("jsrl_curriculum",))
        super().__init__(**shared_arguments(self.config))
        require_finite_positive(alpha_learning_rate=alpha_learning_rate, alpha_init=alpha_init)
        require_in_interval("(0, 1]", tau=tau)
        if target_entropy is not None:
            require_in_interval("(-inf, inf)", target_entropy=target_entropy)
        require_in_interval("(-inf, inf)", log_std_init=log_std_init)
        if log_std_init != -3.0 and not use_sde:
            raise ValueError("log_std_init sets gSDE's initial noise scale: pass use_sde=True with it.")
        require_counts(buffer_size=buffer_size, batch_size=batch_size)
        require_counts(0, learning_starts=learning_starts, expert_buffer_n_steps=expert_buffer_n_steps)
        if use_sde and isinstance(actor_architecture, PIDPolicy):
            raise ValueError(
                f"{self.name}'s gSDE (use_sde=True) draws its noise through the actor's last hidden features, which a "
                "PID actor has none of. Drop use_sde=True with PIDPolicy; its log_std_init sets the PID's noise."
            )
        memory = self.network_args.memory
        refuse_with_memory(
            self.name, memory, expert_policy=expert_policy, expert_buffer_n_steps=expert_buffer_n_steps, use_sde=use_sde
        )
        sequences = checked_sequence_training(
            memory,
            sequence_length,
            burn_in,
            stored_state,
            defaults=SEQUENCE_DEFAULTS,
            batch_size=batch_size,
            buffer_size=buffer_size,
            learning_starts=learning_starts,
            n_envs=n_envs,
        )
        self.agent_config = SACConfig(
            gamma=gamma,
            tau=tau,
            batch_size=batch_size,
            buffer_size=int(buffer_size),
            learning_starts=int(learning_starts),
            target_entropy=float(-self.env_args.action_dim if target_entropy is None else target_entropy),
            alpha_init=alpha_init,
            learn_alpha=learn_alpha,
            n_critics=2,
            alpha_learning_rate=alpha_learning_rate,
            schedule=UpdatesOwed.replay(train_freq, gradient_steps, self.env_args.n_envs),
            expert=expert_in_agent_units(expert_policy, self.env_args),
            expert_buffer_n_steps=checked_expert_buffer(expert_policy, expert_buffer_n_steps, buffer_size),
            use_sde=bool(use_sde),
            log_std_init=float(log_std_init),
            sequences=sequences,
            action_pipeline=checked_action_pipeline(self.name, action_pipeline, self.env_args, memory),
        )
        if sequences is None:
            ReplayBuffer(self.agent_config.buffer_size, batch_size)  # rejects a buffer smaller than a batch
