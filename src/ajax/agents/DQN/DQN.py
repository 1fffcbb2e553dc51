"""DQN: deep Q-network (Mnih et al. 2015, Nature 518, 529-533)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ajax.agents.base import ActorCritic, run_config, shared_arguments
from ajax.agents.DQN.state import DQNConfig
from ajax.agents.DQN.train_DQN import make_train
from ajax.agents.updates_owed import UpdatesOwed
from ajax.buffers import ReplayBuffer
from ajax.checks import require_counts, require_finite_positive, require_in_interval
from ajax.extensions import LOOP_PHASES, Extension


class DQN(ActorCritic):
    """Q-learning with replay and a periodically copied target network, for discrete actions.

    Defaults: learning rate 1e-3, two 64-unit relu layers, a 1e5 buffer, batches of 64,
    learning from step 1,000, one update per env tick, the target copied every 500 env steps
    (`tau` < 1: Polyak-averaged instead), epsilon 1.0 to 0.05 over the first half of the run,
    the Huber loss, gradients clipped at norm 10. `double_q` (van Hasselt et al. 2016) and
    `dueling` (Wang et al. 2016) are off, as in the paper.
    docs/agents.md has the paper, Ajax's choices and the calibrated result.
    """

    name: ClassVar[str] = "DQN"
    continuous: ClassVar[bool | None] = False
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"on_target", "critic_loss"}
    make_train = staticmethod(make_train)
    sweepable: ClassVar[frozenset[str]] = frozenset(
        {
            "learning_rate",
            "gamma",
            "tau",
            "exploration_initial_eps",
            "exploration_final_eps",
            "max_grad_norm",
        }
    )

    def __init__(
        self,
        env_id: str | Any,
        n_envs: int = 1,
        learning_rate: float = 1e-3,
        architecture: Sequence[str] = ("64", "relu", "64", "relu"),
        gamma: float = 0.99,
        buffer_size: int = 100_000,
        batch_size: int = 64,
        learning_starts: int = 1_000,
        target_update_interval: int = 500,
        train_freq: int = 1,
        gradient_steps: int = 1,
        tau: float = 1.0,
        double_q: bool = False,
        dueling: bool = False,
        exploration_fraction: float = 0.5,
        exploration_initial_eps: float = 1.0,
        exploration_final_eps: float = 0.05,
        max_grad_norm: float | None = 10.0,
        episode_length: int | None = None,
        action_repeat: int = 1,
        env_params: Any = None,
        normalize_observations: bool = False,
        normalize_rewards: bool = False,
        extensions: Sequence[Extension] = (),
        memory: Any = None,
    ) -> None:
        self.config = run_config(locals(), self.name)
        require_finite_positive(learning_rate=learning_rate)  # the base would name it actor_learning_rate
        super().__init__(
            **shared_arguments(
                self.config,
                actor_learning_rate=learning_rate,
                critic_learning_rate=learning_rate,
                actor_architecture=architecture,
                critic_architecture=architecture,
            )
        )
        require_counts(buffer_size=buffer_size, batch_size=batch_size, target_update_interval=target_update_interval)
        require_counts(0, learning_starts=learning_starts)
        require_in_interval("(0, 1]", exploration_fraction=exploration_fraction, tau=tau)
        require_in_interval(
            "[0, 1]", exploration_initial_eps=exploration_initial_eps, exploration_final_eps=exploration_final_eps
        )
        ReplayBuffer(int(buffer_size), batch_size)  # rejects a buffer smaller than a batch
        self.agent_config = DQNConfig(
            gamma=gamma,
            batch_size=batch_size,
            buffer_size=int(buffer_size),
            learning_starts=int(learning_starts),
            target_update_interval=int(target_update_interval),
            exploration_fraction=exploration_fraction,
            exploration_initial_eps=exploration_initial_eps,
            exploration_final_eps=exploration_final_eps,
            tau=float(tau),
            double_q=bool(double_q),
            dueling=bool(dueling),
            schedule=UpdatesOwed.replay(train_freq, gradient_steps, self.env_args.n_envs),
        )
