"""DAgger: dataset aggregation (Ross, Gordon & Bagnell 2011, AISTATS, arXiv:1011.0686)."""

from __future__ import annotations

from typing import Any, ClassVar

from ajax.agents.base import ENCODER, ENVIRONMENT, ActorCritic, field_names, one_network
from ajax.agents.DAgger.state import DAggerConfig, Labelled
from ajax.agents.DAgger.train_DAgger import make_train
from ajax.environments.utils import ExpertInAgentUnits, require_stateless
from ajax.extensions import LOOP_PHASES
from ajax.hyperparameters import Hyperparameters, checked_later, count, keywords, number


class DAgger(ActorCritic):
    """Imitation of an expert on the states the learner itself visits, for discrete and continuous actions.

    `expert_policy` (required, stateless) maps raw observations to actions. Defaults:
    beta_i = 0.5^(i - 1), 4 envs x 250 steps per iteration, then 250 minibatches of 256,
    Adam at 1e-3, two 256-unit relu layers, an aggregate dataset of up to 1e6 rows.
    Observations and rewards are never normalised: the expert reads raw observations, and so
    does the learner. docs/agents/dagger.md has the paper, Ajax's departures and the calibrated results.
    """

    name: ClassVar[str] = "DAgger"
    continuous: ClassVar[bool | None] = None
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"actor_loss"}
    batch_fields: ClassVar[frozenset[str]] = field_names(Labelled)  # the aggregated dataset's rows
    make_train = staticmethod(make_train)
    # The learner is the actor; there is no critic.
    networks: ClassVar[dict[str, tuple[str, str]]] = {"actor": ("learning_rate", "architecture")}
    hyperparameters: ClassVar[Hyperparameters] = (
        one_network(1e-3, ("256", "relu", "256", "relu"))
        | keywords(
            expert_policy=checked_later(
                None,
                "a stateless function of raw observations (required)",
                doc="the expert imitated: raw observations to actions (env units, or indices)",
            ),
            n_steps=count(250, doc="steps per env copy in each iteration, every state labelled by the expert"),
            n_gradient_steps=count(250, doc="minibatch updates of the learner after each iteration"),
            batch_size=count(256, doc="labelled states per minibatch"),
            buffer_size=count(1_000_000, doc="rows the aggregate dataset keeps (a ring: the oldest go first)"),
            beta_decay=number(
                0.5, "[0, 1]", sweep=True, doc="beta_i = beta_decay^(i-1): the expert's share of iteration i's acting"
            ),
        )
        | ENVIRONMENT.with_defaults(n_envs=4)
        | ENCODER
    )

    def __init__(self, env_id: str | Any, **settings: Any) -> None:
        super().__init__(env_id, **settings)
        s = self.settings
        if s.expert_policy is None:
            raise ValueError(
                "DAgger imitates an expert: pass expert_policy=, a function from a batch of raw observations to "
                "actions (env units for a continuous env, action indices for a discrete one)."
            )
        require_stateless(s.expert_policy, "DAgger")
        expert = ExpertInAgentUnits.for_env(s.expert_policy, self.env_args, "expert_policy=")
        per_iteration = s.n_steps * self.env_args.n_envs
        if s.buffer_size < max(per_iteration, s.batch_size):
            raise ValueError(
                f"buffer_size={s.buffer_size} must hold one iteration's n_steps * n_envs = {per_iteration} labelled "
                f"states and one batch of {s.batch_size}."
            )
        self.agent_config = DAggerConfig(
            expert=expert,
            n_steps=s.n_steps,
            n_gradient_steps=s.n_gradient_steps,
            batch_size=s.batch_size,
            buffer_size=int(s.buffer_size),
            beta_decay=float(s.beta_decay),
        )
