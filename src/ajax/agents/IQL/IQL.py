"""IQL: implicit Q-learning (Kostrikov, Nair & Levine 2021, arXiv:2110.06169)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ajax.agents.base import ActorCritic, run_config, shared_arguments
from ajax.agents.IQL.state import IQLConfig
from ajax.agents.IQL.train_IQL import make_train
from ajax.buffers.dataset import Dataset, check_dataset
from ajax.checks import require_counts, require_finite_positive, require_in_interval
from ajax.extensions import LOOP_PHASES, Extension
from ajax.schedule import Schedule
from ajax.state import OptimizerConfig


class IQL(ActorCritic):
    """Offline RL from a fixed dataset: expectile value learning and advantage-weighted regression.

    `IQL(env_id, dataset=collect_dataset(env_id, expert, n_steps, seed))`; training steps no
    environment, and `n_timesteps` counts gradient steps. Defaults: expectile 0.7, beta 3.0
    with weights clipped at 100, gamma 0.99, tau 0.005, Adam at 3e-4, two 256-unit relu
    layers, batches of 256. docs/agents.md has the paper, Ajax's departures and the
    calibrated result.
    """

    name: ClassVar[str] = "IQL"
    continuous: ClassVar[bool | None] = True
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"on_target", "critic_loss", "actor_loss"}
    make_train = staticmethod(make_train)
    sweepable: ClassVar[frozenset[str]] = frozenset(
        {
            "actor_learning_rate",
            "critic_learning_rate",
            "value_learning_rate",
            "gamma",
            "tau",
            "expectile",
            "beta",
            "max_weight",
            "max_grad_norm",
        }
    )

    def __init__(
        self,
        env_id: str | Any,
        dataset: Dataset | None = None,
        actor_learning_rate: Schedule = 3e-4,
        critic_learning_rate: Schedule = 3e-4,
        value_learning_rate: float = 3e-4,
        actor_architecture: Sequence[str] = ("256", "relu", "256", "relu"),
        critic_architecture: Sequence[str] = ("256", "relu", "256", "relu"),
        gamma: float = 0.99,
        tau: float = 0.005,
        expectile: float = 0.7,
        beta: float = 3.0,
        max_weight: float = 100.0,
        batch_size: int = 256,
        max_grad_norm: float | None = None,
        episode_length: int | None = None,
        action_repeat: int = 1,
        env_params: Any = None,
        extensions: Sequence[Extension] = (),
        memory: Any = None,
    ) -> None:
        self.config = run_config(locals(), self.name, exclude=("dataset",))
        super().__init__(
            **shared_arguments(
                self.config,
                n_envs=1,  # only the evaluation steps the env, with its own copies
                normalize_observations=False,  # the dataset's observations are raw and fixed
                normalize_rewards=False,
            )
        )
        require_finite_positive(value_learning_rate=value_learning_rate, beta=beta, max_weight=max_weight)
        require_in_interval("(0, 1)", expectile=expectile)
        require_in_interval("(0, 1]", tau=tau)
        require_counts(batch_size=batch_size)
        if dataset is None:
            raise ValueError(
                "IQL learns offline from a dataset: pass dataset=collect_dataset(env_id, expert, n_steps, seed) "
                "(ajax.buffers.dataset) or a Dataset of your own transitions."
            )
        self.dataset = check_dataset(dataset, self.env_args, self.name)
        self.config["dataset_size"] = self.dataset.size
        self.value_optimizer_args = OptimizerConfig(value_learning_rate, max_grad_norm)
        self.agent_config = IQLConfig(
            gamma=gamma,
            tau=tau,
            expectile=float(expectile),
            beta=float(beta),
            max_weight=float(max_weight),
            batch_size=batch_size,
        )

    def train_kwargs(self) -> dict[str, Any]:
        return {**super().train_kwargs(), "value_optimizer_args": self.value_optimizer_args, "dataset": self.dataset}
