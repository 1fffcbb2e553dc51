"""PQN: parallelised Q-learning (Gallici et al. 2024, arXiv:2407.04811)."""

from __future__ import annotations

from typing import Any, ClassVar

from ajax.agents.base import DISCOUNT, ENCODER, ENVIRONMENT, NORMALIZATION, ActorCritic, one_network
from ajax.agents.PQN.state import PQNConfig
from ajax.agents.PQN.train_PQN import make_train
from ajax.extensions import LOOP_PHASES
from ajax.hyperparameters import Hyperparameters, count, keywords, number


class PQN(ActorCritic):
    """On-policy Q(lambda) with LayerNorm: no replay buffer and no target network.

    Defaults: 8 envs, 128-step rollouts, lambda 0.65, 4 epochs of 4 minibatches, learning
    rate 2.5e-4, gradients clipped at norm 10, two 128-unit relu layers with LayerNorm,
    epsilon 1.0 to 0.05 over the first half of the run. docs/agents/pqn.md has the paper,
    Ajax's choices and the calibrated result.
    """

    name: ClassVar[str] = "PQN"
    continuous: ClassVar[bool | None] = False
    encoder_layer_norm: ClassVar[bool] = True  # LayerNorm in every layer, the image encoder's too (the paper's)
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES
    make_train = staticmethod(make_train)
    networks: ClassVar[dict[str, tuple[str, str]]] = {"critic": ("learning_rate", "architecture")}
    hyperparameters: ClassVar[Hyperparameters] = (
        one_network(2.5e-4, ("128", "relu", "128", "relu"), 10.0)
        | keywords(
            gamma=DISCOUNT,
            q_lambda=number(0.65, "[0, 1]", sweep=True, doc="Q(lambda)'s lambda: lower trades variance for bias"),
            n_steps=count(128, doc="steps each env copy collects per rollout"),
            n_epochs=count(4, doc="passes over each rollout"),
            n_minibatches=count(4, doc="minibatches per epoch (must divide n_steps * n_envs)"),
            exploration_fraction=number(0.5, "(0, 1]", doc="the run's share over which epsilon falls"),
            exploration_initial_eps=number(1.0, "[0, 1]", sweep=True, doc="epsilon at the start: all random"),
            exploration_final_eps=number(0.05, "[0, 1]", sweep=True, doc="epsilon once the fall ends"),
        )
        | ENVIRONMENT.with_defaults(n_envs=8)
        | NORMALIZATION
        | ENCODER
    )

    def __init__(self, env_id: str | Any, **settings: Any) -> None:
        super().__init__(env_id, **settings)
        s = self.settings
        rollout = s.n_steps * s.n_envs
        if rollout % s.n_minibatches:
            raise ValueError(
                f"n_minibatches={s.n_minibatches} does not divide the rollout of n_steps * n_envs = {s.n_steps} * "
                f"{s.n_envs} = {rollout} transitions. Pick n_steps and n_minibatches so that it does."
            )
        self.agent_config = PQNConfig(
            n_steps=s.n_steps,
            n_epochs=s.n_epochs,
            n_minibatches=s.n_minibatches,
            gamma=s.gamma,
            q_lambda=s.q_lambda,
            exploration_fraction=s.exploration_fraction,
            exploration_initial_eps=s.exploration_initial_eps,
            exploration_final_eps=s.exploration_final_eps,
        )
