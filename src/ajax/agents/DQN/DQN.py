"""DQN: deep Q-network (Mnih et al. 2015, Nature 518, 529-533)."""

from __future__ import annotations

from typing import Any, ClassVar

from ajax.agents.base import DISCOUNT, ENCODER, ENVIRONMENT, NORMALIZATION, ActorCritic, one_network, replay
from ajax.agents.DQN.state import DQNConfig
from ajax.agents.DQN.train_DQN import make_train
from ajax.agents.updates_owed import UpdatesOwed
from ajax.buffers import ReplayBuffer
from ajax.extensions import LOOP_PHASES
from ajax.hyperparameters import Hyperparameters, count, flag, keywords, number


class DQN(ActorCritic):
    """Q-learning with replay and a periodically copied target network, for discrete actions.

    Defaults: learning rate 1e-3, two 64-unit relu layers, a 1e5 buffer, batches of 64,
    learning from step 1,000, one update per env tick, the target copied every 500 env steps
    (`tau` < 1: Polyak-averaged instead), epsilon 1.0 to 0.05 over the first half of the run,
    the Huber loss, gradients clipped at norm 10. `double_q` (van Hasselt et al. 2016) and
    `dueling` (Wang et al. 2016) are off, as in the paper.
    docs/agents/dqn.md has the paper, Ajax's choices and the calibrated result.
    """

    name: ClassVar[str] = "DQN"
    continuous: ClassVar[bool | None] = False
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"on_target", "critic_loss"}
    make_train = staticmethod(make_train)
    # The Q-network is the critic: the policy is epsilon-greedy in it.
    networks: ClassVar[dict[str, tuple[str, str]]] = {"critic": ("learning_rate", "architecture")}
    hyperparameters: ClassVar[Hyperparameters] = (
        one_network(1e-3, ("64", "relu", "64", "relu"), max_grad_norm=10.0)
        | keywords(
            gamma=DISCOUNT,
            target_update_interval=count(500, doc="env steps between target refreshes, whatever n_envs (SB3's count)"),
        )
        | replay(100_000, 64, 1_000)
        | keywords(
            tau=number(1.0, "(0, 1]", sweep=True, doc="each refresh's Polyak step (1: a hard copy, the paper's)"),
            double_q=flag(False, doc="bootstrap from the online argmax, removing the max's upward bias"),
            dueling=flag(False, doc="a V(s) + A(s, a) head, the advantages centred"),
            exploration_fraction=number(
                0.5, "(0, 1]", doc="share of the run's horizon over which epsilon falls linearly"
            ),
            exploration_initial_eps=number(1.0, "[0, 1]", sweep=True, doc="epsilon at the start"),
            exploration_final_eps=number(0.05, "[0, 1]", sweep=True, doc="epsilon once the fall ends"),
        )
        | ENVIRONMENT
        | NORMALIZATION
        | ENCODER
    )

    def __init__(self, env_id: str | Any, **settings: Any) -> None:
        super().__init__(env_id, **settings)
        s = self.settings
        ReplayBuffer(int(s.buffer_size), s.batch_size)  # rejects a buffer smaller than a batch
        self.agent_config = DQNConfig(
            gamma=s.gamma,
            batch_size=s.batch_size,
            buffer_size=int(s.buffer_size),
            learning_starts=int(s.learning_starts),
            target_update_interval=int(s.target_update_interval),
            exploration_fraction=s.exploration_fraction,
            exploration_initial_eps=s.exploration_initial_eps,
            exploration_final_eps=s.exploration_final_eps,
            tau=float(s.tau),
            double_q=bool(s.double_q),
            dueling=bool(s.dueling),
            schedule=UpdatesOwed.replay(s.train_freq, s.gradient_steps, self.env_args.n_envs),
        )
