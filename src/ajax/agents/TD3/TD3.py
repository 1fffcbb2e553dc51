"""TD3: twin delayed deep deterministic policy gradient (Fujimoto et al. 2018, arXiv:1802.09477)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from ajax.agents.base import ActorCritic, expert_in_agent_units, run_config, shared_arguments
from ajax.agents.recurrent import checked_sequence_training
from ajax.agents.SAC.action_pipeline import ActionPipelineConfig, checked_action_pipeline
from ajax.agents.TD3.state import TD3Config
from ajax.agents.TD3.train_TD3 import make_train
from ajax.agents.updates_owed import UpdatesOwed
from ajax.buffers import ReplayBuffer
from ajax.checks import require_counts, require_in_interval
from ajax.deprecation import CLONING_KEYWORDS, removed_keywords
from ajax.extensions import LOOP_PHASES, Extension
from ajax.modules.pid_actor import PIDPolicy
from ajax.schedule import Schedule, check_schedule

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
    docs/agents.md has the paper, Ajax's choices and the calibrated result.
    """

    name: ClassVar[str] = "TD3"
    pid_actor_form: ClassVar[str | None] = "deterministic"
    continuous: ClassVar[bool | None] = True
    supports_memory: ClassVar[bool] = True
    discounted_q_critic: ClassVar[bool] = True
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"on_target", "critic_loss", "actor_loss"}
    make_train = staticmethod(make_train)
    sweepable: ClassVar[frozenset[str]] = frozenset(
        {
            "actor_learning_rate",
            "critic_learning_rate",
            "gamma",
            "tau",
            "target_policy_noise",
            "target_noise_clip",
            "exploration_noise",
            "max_grad_norm",
        }
    )

    def __init__(
        self,
        env_id: str | Any,
        n_envs: int = 1,
        actor_learning_rate: Schedule = 1e-3,
        critic_learning_rate: Schedule = 1e-3,
        actor_architecture: Sequence[str] | PIDPolicy = ("400", "relu", "300", "relu"),
        critic_architecture: Sequence[str] = ("400", "relu", "300", "relu"),
        gamma: float = 0.99,
        tau: float = 0.005,
        buffer_size: int = 1_000_000,
        batch_size: int = 100,
        learning_starts: int = 10_000,
        train_freq: int = 1,
        gradient_steps: int = 1,
        policy_delay: int = 2,
        target_policy_noise: float = 0.2,
        target_noise_clip: float = 0.5,
        exploration_noise: Schedule = 0.1,
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
        action_pipeline: ActionPipelineConfig | None = None,
    ) -> None:
        self.config = run_config(locals(), self.name)
        super().__init__(**shared_arguments(self.config))
        require_counts(buffer_size=buffer_size, batch_size=batch_size, policy_delay=policy_delay)
        require_counts(0, learning_starts=learning_starts)
        require_in_interval("(0, 1]", tau=tau)
        require_in_interval("[0, inf)", target_policy_noise=target_policy_noise, target_noise_clip=target_noise_clip)
        check_schedule("exploration_noise", exploration_noise)
        memory = self.network_args.memory
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
        if sequences is None:
            ReplayBuffer(int(buffer_size), batch_size)  # rejects a buffer smaller than a batch
        self.agent_config = TD3Config(
            gamma=gamma,
            tau=tau,
            batch_size=batch_size,
            buffer_size=int(buffer_size),
            learning_starts=int(learning_starts),
            policy_delay=int(policy_delay),
            target_policy_noise=float(target_policy_noise),
            target_noise_clip=float(target_noise_clip),
            exploration_noise=exploration_noise,
            schedule=UpdatesOwed.replay(train_freq, gradient_steps, self.env_args.n_envs),
            expert=expert_in_agent_units(expert_policy, self.env_args),
            sequences=sequences,
            action_pipeline=checked_action_pipeline(self.name, action_pipeline, self.env_args, memory),
        )
