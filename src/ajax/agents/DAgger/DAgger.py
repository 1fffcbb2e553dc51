"""DAgger: dataset aggregation (Ross, Gordon & Bagnell 2011, AISTATS, arXiv:1011.0686)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from ajax.agents.base import ActorCritic, field_names, run_config, shared_arguments
from ajax.agents.DAgger.state import DAggerConfig, Labelled
from ajax.agents.DAgger.train_DAgger import make_train
from ajax.checks import require_counts, require_finite_positive, require_in_interval
from ajax.environments.utils import ExpertInAgentUnits, require_stateless
from ajax.extensions import LOOP_PHASES, Extension


class DAgger(ActorCritic):
    """Imitation of an expert on the states the learner itself visits, for discrete and continuous actions.

    `expert_policy` (required, stateless) maps raw observations to actions. Defaults:
    beta_i = 0.5^(i - 1), 4 envs x 250 steps per iteration, then 250 minibatches of 256,
    Adam at 1e-3, two 256-unit relu layers, an aggregate dataset of up to 1e6 rows.
    docs/agents.md has the paper, Ajax's departures and the calibrated results.
    """

    name: ClassVar[str] = "DAgger"
    continuous: ClassVar[bool | None] = None
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"actor_loss"}
    batch_fields: ClassVar[frozenset[str]] = field_names(Labelled)  # the aggregated dataset's rows
    make_train = staticmethod(make_train)
    sweepable: ClassVar[frozenset[str]] = frozenset(
        {
            "learning_rate",
            "beta_decay",
            "max_grad_norm",
        }
    )

    def __init__(
        self,
        env_id: str | Any,
        expert_policy: Callable[[Any], Any] | None = None,
        n_envs: int = 4,
        learning_rate: float = 1e-3,
        architecture: Sequence[str] = ("256", "relu", "256", "relu"),
        n_steps: int = 250,
        n_gradient_steps: int = 250,
        batch_size: int = 256,
        buffer_size: int = 1_000_000,
        beta_decay: float = 0.5,
        max_grad_norm: float | None = None,
        episode_length: int | None = None,
        action_repeat: int = 1,
        env_params: Any = None,
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
                normalize_observations=False,  # the expert reads raw observations, and so does the learner
                normalize_rewards=False,
            )
        )
        if expert_policy is None:
            raise ValueError(
                "DAgger imitates an expert: pass expert_policy=, a function from a batch of raw observations to "
                "actions (env units for a continuous env, action indices for a discrete one)."
            )
        require_counts(
            n_steps=n_steps, n_gradient_steps=n_gradient_steps, batch_size=batch_size, buffer_size=buffer_size
        )
        require_in_interval("[0, 1]", beta_decay=beta_decay)  # beta_i = beta_decay^(i-1)
        require_stateless(expert_policy, "DAgger")
        expert = ExpertInAgentUnits.for_env(expert_policy, self.env_args)
        per_iteration = n_steps * self.env_args.n_envs
        if buffer_size < max(per_iteration, batch_size):
            raise ValueError(
                f"buffer_size={buffer_size} must hold one iteration's n_steps * n_envs = {per_iteration} labelled "
                f"states and one batch of {batch_size}."
            )
        self.agent_config = DAggerConfig(
            expert=expert,
            n_steps=n_steps,
            n_gradient_steps=n_gradient_steps,
            batch_size=batch_size,
            buffer_size=int(buffer_size),
            beta_decay=float(beta_decay),
        )
