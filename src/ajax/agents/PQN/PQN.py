"""PQN: parallelised Q-learning (Gallici et al. 2024, arXiv:2407.04811)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ajax.agents.base import ActorCritic, run_config, shared_arguments
from ajax.agents.PQN.state import PQNConfig
from ajax.agents.PQN.train_PQN import make_train
from ajax.checks import require_counts, require_finite_positive, require_in_interval
from ajax.extensions import LOOP_PHASES, Extension


class PQN(ActorCritic):
    """On-policy Q(lambda) with LayerNorm: no replay buffer and no target network.

    Defaults: 8 envs, 128-step rollouts, lambda 0.65, 4 epochs of 4 minibatches, learning
    rate 2.5e-4, gradients clipped at norm 10, two 128-unit relu layers with LayerNorm,
    epsilon 1.0 to 0.05 over the first half of the run. docs/agents.md has the paper,
    Ajax's choices and the calibrated result.
    """

    name: ClassVar[str] = "PQN"
    continuous: ClassVar[bool | None] = False
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES
    make_train = staticmethod(make_train)
    sweepable: ClassVar[frozenset[str]] = frozenset(
        {
            "learning_rate",
            "gamma",
            "q_lambda",
            "exploration_initial_eps",
            "exploration_final_eps",
            "max_grad_norm",
        }
    )

    def __init__(
        self,
        env_id: str | Any,
        n_envs: int = 8,
        learning_rate: float = 2.5e-4,
        architecture: Sequence[str] = ("128", "relu", "128", "relu"),
        gamma: float = 0.99,
        q_lambda: float = 0.65,
        n_steps: int = 128,
        n_epochs: int = 4,
        n_minibatches: int = 4,
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
        require_counts(n_steps=n_steps, n_epochs=n_epochs, n_minibatches=n_minibatches)
        rollout = n_steps * n_envs
        if rollout % n_minibatches:
            raise ValueError(
                f"n_minibatches={n_minibatches} does not divide the rollout of n_steps * n_envs = {n_steps} * "
                f"{n_envs} = {rollout} transitions. Pick n_steps and n_minibatches so that it does."
            )
        require_in_interval("[0, 1]", q_lambda=q_lambda)
        require_in_interval("(0, 1]", exploration_fraction=exploration_fraction)
        require_in_interval(
            "[0, 1]", exploration_initial_eps=exploration_initial_eps, exploration_final_eps=exploration_final_eps
        )
        self.agent_config = PQNConfig(
            n_steps=n_steps,
            n_epochs=n_epochs,
            n_minibatches=n_minibatches,
            gamma=gamma,
            q_lambda=q_lambda,
            exploration_fraction=exploration_fraction,
            exploration_initial_eps=exploration_initial_eps,
            exploration_final_eps=exploration_final_eps,
        )
