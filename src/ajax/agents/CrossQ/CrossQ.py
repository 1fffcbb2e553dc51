"""CrossQ: batch-normalised critics without target networks (Bhatt et al., ICLR 2024, arXiv:1902.05605)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from ajax.agents.base import layer_strings_only, shallow_fields
from ajax.agents.CrossQ.state import CrossQConfig
from ajax.agents.CrossQ.train_CrossQ import make_train
from ajax.agents.SAC import SAC
from ajax.deprecation import CLONING_KEYWORDS, removed_keywords
from ajax.extensions import LOOP_PHASES
from ajax.hyperparameters import Hyperparameters, count, keywords, number


@removed_keywords(*CLONING_KEYWORDS, "pid_actor_config", "use_expert_guidance")
class CrossQ(SAC):
    """SAC with batch-renormalised actor and critics, no target critics, and a joint (s, s') critic pass.

    Defaults: the paper's and its reference code's (adityab/CrossQ): learning rates 1e-3 with
    Adam's b1 = 0.5, critics of two 2048-unit relu layers, the actor of two 256-unit layers,
    batch renormalisation (momentum 0.99) of every network's input and hidden layers, plain
    batch normalisation for the first 100,000 training passes of each network, one update
    per env step, the actor and temperature every 3rd, learning from step 5,000. The rest is
    SAC's. docs/agents/crossq.md has the equations and Ajax's choices.
    """

    name: ClassVar[str] = "CrossQ"
    pid_actor_form: ClassVar[str | None] = None  # a PID has no hidden layers to renormalise
    supports_memory: ClassVar[bool] = False  # statistics over replayed sequences are not built
    # No target critics (IBRL's on_target reads them), and its critics normalise by their
    # batch, which CriticPretrain's and ExpertCriticMetrics' passes do not: the loss phases only.
    discounted_q_critic: ClassVar[bool] = False
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"critic_loss", "actor_loss"}
    make_train = staticmethod(make_train)
    hyperparameters: ClassVar[Hyperparameters] = (
        layer_strings_only(SAC.hyperparameters)
        .with_defaults(
            actor_learning_rate=1e-3,
            critic_learning_rate=1e-3,
            alpha_learning_rate=1e-3,
            critic_architecture=("2048", "relu", "2048", "relu"),
            learning_starts=5_000,
        )
        # No target critics to move (the reference's tau = 1); exploration is the squashed Gaussian's,
        # without gSDE; no memory, so no replayed sequences: keywords it has no use for are not taken.
        .fixing(tau=1.0, use_sde=False, log_std_init=-3.0, sequence_length=16, burn_in=8, stored_state=False)
        | keywords(
            policy_delay=count(3, doc="critic updates per actor and temperature update"),
            adam_b1=number(0.5, "[0, 1)", doc="Adam's first-moment decay for the actor and critics"),
            batch_norm_momentum=number(0.99, "[0, 1)", doc="the running statistics' decay per training pass"),
            renorm_warmup_steps=count(
                100_000, 0, doc="training passes of each network in plain batch norm before renormalising"
            ),
        )
    )

    def __init__(self, env_id: str | Any, **settings: Any) -> None:
        super().__init__(env_id, **settings)
        s = self.settings
        if self.network_args.encoder is not None:
            raise ValueError(
                "CrossQ's networks renormalise a flat observation; an image or dict encoder is not built for them "
                "yet. Use encoder='mlp' (flat observations), or SAC."
            )
        self.agent_config = CrossQConfig(
            **shallow_fields(self.agent_config),
            policy_delay=int(s.policy_delay),
            momentum=float(s.batch_norm_momentum),
            renorm_warmup=int(s.renorm_warmup_steps),
        )
        self.optimizer_args = {
            role: dataclasses.replace(args, b1=float(s.adam_b1)) for role, args in self.optimizer_args.items()
        }
