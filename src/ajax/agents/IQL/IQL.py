"""IQL: implicit Q-learning (Kostrikov, Nair & Levine 2021, arXiv:2110.06169)."""

from __future__ import annotations

from typing import Any, ClassVar

from ajax.agents.base import DISCOUNT, ENCODER, ENVIRONMENT, ActorCritic, two_networks
from ajax.agents.IQL.state import IQLConfig
from ajax.agents.IQL.train_IQL import make_train
from ajax.buffers.dataset import check_dataset
from ajax.extensions import LOOP_PHASES
from ajax.hyperparameters import Hyperparameters, checked_later, count, keywords, learning_rate, number
from ajax.state import OptimizerConfig


class IQL(ActorCritic):
    """Offline RL from a fixed dataset: expectile value learning and advantage-weighted regression.

    `IQL(env_id, dataset=collect_dataset(env_id, expert, n_steps, seed))`; training steps no
    environment, and `n_timesteps` counts gradient steps. Defaults: expectile 0.7, beta 3.0
    with weights clipped at 100, gamma 0.99, tau 0.005, Adam at 3e-4, two 256-unit relu
    layers, batches of 256. It takes no `n_envs` (only the evaluation steps the env, with its
    own copies) and never normalises (the dataset's observations are raw and fixed).
    docs/agents/iql.md has the paper, Ajax's departures and the calibrated result.
    """

    name: ClassVar[str] = "IQL"
    continuous: ClassVar[bool | None] = True
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"on_target", "critic_loss", "actor_loss"}
    make_train = staticmethod(make_train)
    hyperparameters: ClassVar[Hyperparameters] = (
        two_networks(3e-4, ("256", "relu", "256", "relu"))
        | keywords(
            dataset=checked_later(
                None,
                "an ajax.buffers.Dataset that fits the env (required)",
                doc="the fixed transitions learned from, e.g. collect_dataset(env, expert, n_steps)",
            ),
            value_learning_rate=learning_rate(3e-4, doc="V's Adam step size (V has critic_architecture's layers)"),
            gamma=DISCOUNT,
            tau=number(0.005, "(0, 1]", sweep=True, doc="the target critics' Polyak step"),
            expectile=number(0.7, "(0, 1)", sweep=True, doc="V's expectile of Q: above 0.5 leans to the best actions"),
            beta=number(
                3.0, sweep=True, doc="weights exp(beta (Q - V)): higher follows the best dataset actions closer"
            ),
            max_weight=number(100.0, sweep=True, doc="the weights' clip, so a few transitions cannot dominate a batch"),
            batch_size=count(256, doc="transitions per minibatch"),
        )
        | ENVIRONMENT.fixing(n_envs=1)  # only the evaluation steps the env, with its own copies
        | ENCODER
    )

    def __init__(self, env_id: str | Any, **settings: Any) -> None:
        super().__init__(env_id, **settings)
        s = self.settings
        if s.dataset is None:
            raise ValueError(
                "IQL learns offline from a dataset: pass dataset=collect_dataset(env_id, expert, n_steps, seed) "
                "(ajax.buffers.dataset) or a Dataset of your own transitions."
            )
        self.dataset = check_dataset(s.dataset, self.env_args, self.name)
        del self.config["dataset"]  # config.json records its size, not its arrays
        self.config["dataset_size"] = self.dataset.size
        # V, the third network, is IQL's own: built from critic_architecture and its own step size.
        self.optimizer_args["value"] = OptimizerConfig(s.value_learning_rate, s.max_grad_norm)
        self.agent_config = IQLConfig(
            gamma=s.gamma,
            tau=s.tau,
            expectile=float(s.expectile),
            beta=float(s.beta),
            max_weight=float(s.max_weight),
            batch_size=s.batch_size,
        )

    def train_kwargs(self) -> dict[str, Any]:
        return {**super().train_kwargs(), "dataset": self.dataset}
