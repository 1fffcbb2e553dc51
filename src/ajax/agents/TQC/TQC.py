"""TQC: truncated quantile critics (Kuznetsov et al. 2020, arXiv:2005.04269)."""

from __future__ import annotations

from typing import Any, ClassVar

from ajax.agents.base import layer_strings_only, shallow_fields
from ajax.agents.SAC import SAC
from ajax.agents.TQC.state import TQCConfig
from ajax.agents.TQC.train_TQC import make_train
from ajax.deprecation import CLONING_KEYWORDS, removed_keywords
from ajax.extensions import LOOP_PHASES
from ajax.hyperparameters import Hyperparameters, count, keywords


@removed_keywords(*CLONING_KEYWORDS, "pid_actor_config", "use_expert_guidance")
class TQC(SAC):
    """SAC with N distributional critics of M quantiles each and a target that drops the kN largest atoms.

    Defaults: the paper's (and its reference code's, bayesgroup/tqc_pytorch): N = 5 critics of
    M = 25 quantiles, k = 2 dropped per critic, critics of three 512-unit layers, the actor,
    learning rates, batch, discount, tau and temperature of SAC. Everything SAC collects and
    guides with (expert, gSDE, action pipelines) works the same; memory is refused. docs/agents/tqc.md
    has the equations and Ajax's choices.
    """

    name: ClassVar[str] = "TQC"
    supports_memory: ClassVar[bool] = False  # its recurrent quantile critics are not built yet
    # Quantiles, not one discounted value per action: CriticPretrain and ExpertCriticMetrics refuse it.
    discounted_q_critic: ClassVar[bool] = False
    # The phases that read a critic as one value per action (IBRL's target and action
    # proposals) do not fit quantile critics: only the loss phases are folded.
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"critic_loss", "actor_loss"}
    make_train = staticmethod(make_train)
    hyperparameters: ClassVar[Hyperparameters] = layer_strings_only(SAC.hyperparameters).with_defaults(
        critic_architecture=("512", "relu", "512", "relu", "512", "relu")
    ) | keywords(
        n_critics=count(5, doc="the distributional critics (N)"),
        n_quantiles=count(25, doc="quantiles each critic predicts (M)"),
        top_quantiles_to_drop_per_net=count(
            2, 0, doc="atoms dropped per critic from the target's top (k): more, less overestimation"
        ),
    )

    def __init__(self, env_id: str | Any, **settings: Any) -> None:
        super().__init__(env_id, **settings)
        s = self.settings
        if s.top_quantiles_to_drop_per_net >= s.n_quantiles:
            raise ValueError(
                f"top_quantiles_to_drop_per_net={s.top_quantiles_to_drop_per_net} must be below n_quantiles="
                f"{s.n_quantiles}: the target keeps the other atoms of each critic."
            )
        self.agent_config = TQCConfig(
            **{**shallow_fields(self.agent_config), "n_critics": int(s.n_critics)},
            n_quantiles=int(s.n_quantiles),
            drop_per_critic=int(s.top_quantiles_to_drop_per_net),
        )
