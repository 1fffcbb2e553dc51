"""TD3: twin delayed deep deterministic policy gradient (Fujimoto et al. 2018, arXiv:1802.09477)."""

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
from ajax.agents.recurrent import checked_sequence_training
from ajax.agents.SAC.action_pipeline import checked_action_pipeline
from ajax.agents.TD3.state import TD3Config
from ajax.agents.TD3.train_TD3 import make_train
from ajax.agents.updates_owed import UpdatesOwed
from ajax.buffers import ReplayBuffer
from ajax.deprecation import CLONING_KEYWORDS, removed_keywords
from ajax.extensions import LOOP_PHASES
from ajax.hyperparameters import Hyperparameters, checked_later, count, flag, keywords, number, schedule

SEQUENCE_DEFAULTS = (20, 10)  # (sequence_length, burn_in): five sequences in TD3's batch of 100


@removed_keywords(*CLONING_KEYWORDS, "pid_actor_config")
class TD3(ActorCritic):
    """Clipped double-Q learning, delayed policy updates and target policy smoothing.

    Defaults: learning rates 1e-3, 400 and 300 relu layers, batches of 100, learning from
    step 10,000, tau 0.005, policy delay 2, target noise 0.2 clipped at 0.5, Gaussian
    exploration noise 0.1 (a Schedule), all in [-1, 1] action units. `memory=` makes the
    actor and the critics recurrent, trained on replayed sequences of `sequence_length`
    steps after `burn_in` (docs/memory.md). `action_pipeline=` takes SAC's
    (`ajax.agents.SAC.action_pipeline`: expert-guided exploration around TD3's own noise).
    docs/agents/td3.md has the paper, Ajax's choices and the calibrated result.
    """

    name: ClassVar[str] = "TD3"
    pid_actor_form: ClassVar[str | None] = "deterministic"
    continuous: ClassVar[bool | None] = True
    supports_memory: ClassVar[bool] = True
    discounted_q_critic: ClassVar[bool] = True
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"on_target", "critic_loss", "actor_loss"}
    make_train = staticmethod(make_train)
    hyperparameters: ClassVar[Hyperparameters] = (
        two_networks(1e-3, ("400", "relu", "300", "relu"), pid=True)
        | keywords(
            gamma=DISCOUNT,
            tau=number(0.005, "(0, 1]", sweep=True, doc="the target networks' Polyak step"),
        )
        | replay(1_000_000, 100, 10_000)
        | keywords(
            policy_delay=count(2, doc="critic updates per actor and target update: the critics settle first"),
            target_policy_noise=number(
                0.2, "[0, inf)", sweep=True, doc="noise on the target action, so the target smooths over a sharp Q"
            ),
            target_noise_clip=number(0.5, "[0, inf)", sweep=True, doc="the target noise's bound, in action units"),
            exploration_noise=schedule(0.1, doc="the Gaussian exploration noise's scale, in [-1, 1] action units"),
        )
        | ENVIRONMENT
        | NORMALIZATION
        | ENCODER
        | keywords(
            expert_policy=checked_later(
                None, "a function of the observation, or None", doc="logs the expert's return beside the agent's"
            ),
            sequence_length=count(SEQUENCE_DEFAULTS[0], doc="with memory: replayed sequence length"),
            burn_in=count(SEQUENCE_DEFAULTS[1], 0, doc="with memory: steps that only warm the memory"),
            stored_state=flag(False, doc="with memory: start sequences from the stored recurrent state"),
            action_pipeline=checked_later(
                None, "make_action_pipeline(...), or None", doc="SAC's: expert-guided exploration around TD3's noise"
            ),
        )
    )

    def __init__(self, env_id: str | Any, **settings: Any) -> None:
        super().__init__(env_id, **settings)
        s = self.settings
        memory = self.network_args.memory
        sequences = checked_sequence_training(memory, s, SEQUENCE_DEFAULTS)
        if sequences is None:
            ReplayBuffer(int(s.buffer_size), s.batch_size)  # rejects a buffer smaller than a batch
        self.agent_config = TD3Config(
            gamma=s.gamma,
            tau=s.tau,
            batch_size=s.batch_size,
            buffer_size=int(s.buffer_size),
            learning_starts=int(s.learning_starts),
            policy_delay=int(s.policy_delay),
            target_policy_noise=float(s.target_policy_noise),
            target_noise_clip=float(s.target_noise_clip),
            exploration_noise=s.exploration_noise,
            schedule=UpdatesOwed.replay(s.train_freq, s.gradient_steps, self.env_args.n_envs),
            expert=expert_in_agent_units(s.expert_policy, self.env_args),
            sequences=sequences,
            action_pipeline=checked_action_pipeline(self.name, s.action_pipeline, self.env_args, memory),
        )
