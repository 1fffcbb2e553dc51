"""REDQ: randomized ensembled double Q-learning (Chen et al. 2021, arXiv:2101.05982)."""

from __future__ import annotations

from typing import Any, ClassVar

from ajax.agents.base import layer_strings_only, shallow_fields
from ajax.agents.REDQ.state import REDQConfig
from ajax.agents.REDQ.train_REDQ import make_train
from ajax.agents.SAC import SAC
from ajax.deprecation import CLONING_KEYWORDS, removed_keywords
from ajax.extensions import LOOP_PHASES
from ajax.hyperparameters import Hyperparameters, count, keywords


@removed_keywords(*CLONING_KEYWORDS, "pid_actor_config")
class REDQ(SAC):
    """SAC with an ensemble of N critics, a target from a random subset of M, G updates per step.

    Defaults: SAC's, with N = 10 critics, M = 2 and G = 20 critic updates per tick, each on
    a fresh minibatch, and one actor update against the ensemble's mean. docs/agents/redq.md
    has the paper, Ajax's choices and the calibrated results.
    """

    name: ClassVar[str] = "REDQ"
    # SAC's action phase is SAC's own: its descendants fold the replay critic's phases only.
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"on_target", "critic_loss", "actor_loss"}
    make_train = staticmethod(make_train)

    # SAC's keywords less those of the features REDQ leaves out (the expert's replay, gSDE, SAC's
    # action pipeline), then the ensemble's.
    hyperparameters: ClassVar[Hyperparameters] = layer_strings_only(SAC.hyperparameters).fixing(
        expert_buffer_n_steps=0, jsrl_curriculum=None, use_sde=False, log_std_init=-3.0, action_pipeline=None
    ) | keywords(
        n_critics=count(10, doc="the ensemble's critics (N): more critics, a less biased mean"),
        subset_size=count(2, doc="critics the target's min is taken over (M): controls the overestimation"),
        utd_ratio=count(20, doc="critic updates per env step (G): the ensemble allows many without overfitting"),
    )

    def __init__(self, env_id: str | Any, **settings: Any) -> None:
        super().__init__(env_id, **settings)
        s = self.settings
        if s.subset_size > s.n_critics:
            raise ValueError(
                f"subset_size={s.subset_size} must lie between 1 and n_critics={s.n_critics}: the target takes "
                "the min over a subset of the ensemble's critics."
            )
        self.agent_config = REDQConfig(
            **{**shallow_fields(self.agent_config), "n_critics": int(s.n_critics)},
            subset_size=int(s.subset_size),
            utd_ratio=int(s.utd_ratio),
        )
