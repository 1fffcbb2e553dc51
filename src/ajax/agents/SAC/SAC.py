"""SAC: soft actor-critic (Haarnoja et al. 2018, arXiv:1801.01290)."""

from __future__ import annotations

from typing import Any, ClassVar

from ajax.agents.base import (
    DISCOUNT,
    ENCODER,
    ENVIRONMENT,
    NORMALIZATION,
    ActorCritic,
    expert_in_agent_units,
    replay,
    two_networks,
)
from ajax.agents.recurrent import checked_sequence_training, refuse_with_memory
from ajax.agents.SAC.action_pipeline import checked_action_pipeline
from ajax.agents.SAC.state import SACConfig, checked_expert_buffer
from ajax.agents.SAC.train_SAC import make_train
from ajax.agents.updates_owed import UpdatesOwed
from ajax.buffers import ReplayBuffer
from ajax.deprecation import CLONING_KEYWORDS, removed_keywords, warn_inert
from ajax.extensions import LOOP_PHASES
from ajax.hyperparameters import Hyperparameters, checked_later, count, flag, keywords, learning_rate, number
from ajax.modules.pid_actor import PIDPolicy
from ajax.networks.hyperspherical import SimbaV2Network

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
    acts, e.g. expert-guided exploration. docs/agents/sac.md has the paper, Ajax's choices and the
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
    hyperparameters: ClassVar[Hyperparameters] = (
        two_networks(3e-4, ("256", "relu", "256", "relu"), pid=True, hyperspherical=True)
        | keywords(
            alpha_learning_rate=learning_rate(3e-4, doc="the temperature's Adam step size"),
            gamma=DISCOUNT,
            tau=number(0.005, "(0, 1]", sweep=True, doc="the target critics' Polyak step"),
            reward_scaling=number(1.0, doc="replayed rewards are multiplied by this in the critics' target (Brax's)"),
        )
        | replay(1_000_000, 256, 10_000)
        | keywords(
            alpha_init=number(1.0, sweep=True, doc="the temperature's initial value"),
            learn_alpha=flag(True, doc="learn the temperature towards target_entropy (False: hold alpha_init)"),
            target_entropy=number(
                None, "(-inf, inf)", sweep=True, optional=True, doc="None: minus the action dimension"
            ),
            use_sde=flag(False, doc="explore with gSDE: noise through the actor's last features"),
            log_std_init=number(-3.0, "(-inf, inf)", doc="gSDE's initial log noise scale (with use_sde=True)"),
        )
        | ENVIRONMENT
        | NORMALIZATION
        | ENCODER
        | keywords(
            expert_policy=checked_later(None, "a function of the observation, or None", doc="docs/extensions.md"),
            expert_buffer_n_steps=count(0, 0, doc="the expert's steps put in the replay before training"),
            sequence_length=count(SEQUENCE_DEFAULTS[0], doc="with memory: replayed sequence length"),
            burn_in=count(SEQUENCE_DEFAULTS[1], 0, doc="with memory: steps that only warm the memory"),
            stored_state=flag(False, doc="with memory: start sequences from the stored recurrent state"),
            action_pipeline=checked_later(None, "make_action_pipeline(...), or None", doc="how collection acts"),
            jsrl_curriculum=checked_later(None, "None", doc="inert: warns, and will be removed"),
        )
    )

    def __init__(self, env_id: str | Any, **settings: Any) -> None:
        super().__init__(env_id, **settings)
        s = self.settings
        warn_inert(
            "SAC",
            "SAC counts each env's steps in its episode when an extension reads them (JSRLCurriculum).",
            2,  # the caller is a frame further out, past removed_keywords' check
            jsrl_curriculum=s.jsrl_curriculum,
        )
        self.config.pop("jsrl_curriculum", None)
        if s.log_std_init != -3.0 and not s.use_sde:
            raise ValueError("log_std_init sets gSDE's initial noise scale: pass use_sde=True with it.")
        if s.use_sde and isinstance(s.actor_architecture, PIDPolicy):
            raise ValueError(
                f"{self.name}'s gSDE (use_sde=True) draws its noise through the actor's last hidden features, which a "
                "PID actor has none of. Drop use_sde=True with PIDPolicy; its log_std_init sets the PID's noise."
            )
        if s.use_sde and isinstance(s.actor_architecture, SimbaV2Network):
            raise ValueError(
                f"{self.name}'s gSDE (use_sde=True) draws its noise through an MLP actor's last hidden features; a "
                "SimbaV2Network actor has its own bounded noise scale. Drop use_sde=True, or give actor_architecture "
                "as layer strings."
            )
        if s.use_sde and self.network_args.encoder is not None:
            raise ValueError(
                f"{self.name}'s gSDE (use_sde=True) draws its noise through the actor's last hidden features, not "
                "through an image encoder's yet. Drop use_sde=True, or use encoder='mlp'."
            )
        memory = self.network_args.memory
        refuse_with_memory(
            self.name,
            memory,
            expert_policy=s.expert_policy,
            expert_buffer_n_steps=s.expert_buffer_n_steps,
            use_sde=s.use_sde,
        )
        sequences = checked_sequence_training(memory, s, SEQUENCE_DEFAULTS)
        self.agent_config = SACConfig(
            gamma=s.gamma,
            tau=s.tau,
            batch_size=s.batch_size,
            buffer_size=int(s.buffer_size),
            learning_starts=int(s.learning_starts),
            target_entropy=float(-self.env_args.action_dim if s.target_entropy is None else s.target_entropy),
            alpha_init=s.alpha_init,
            learn_alpha=s.learn_alpha,
            n_critics=2,
            alpha_learning_rate=s.alpha_learning_rate,
            schedule=UpdatesOwed.replay(s.train_freq, s.gradient_steps, self.env_args.n_envs),
            expert=expert_in_agent_units(s.expert_policy, self.env_args),
            expert_buffer_n_steps=checked_expert_buffer(s.expert_policy, s.expert_buffer_n_steps, s.buffer_size),
            use_sde=bool(s.use_sde),
            log_std_init=float(s.log_std_init),
            sequences=sequences,
            action_pipeline=checked_action_pipeline(self.name, s.action_pipeline, self.env_args, memory),
            reward_scaling=float(s.reward_scaling),
        )
        if sequences is None:
            ReplayBuffer(self.agent_config.buffer_size, s.batch_size)  # rejects a buffer smaller than a batch

    def replay_rows(self, timestep: int) -> int:
        """The expert's steps fill the replay before the run's first, uncounted in its timesteps."""
        return int(timestep) + self.agent_config.expert_buffer_n_steps
