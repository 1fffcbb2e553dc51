"""DAgger: dataset aggregation (Ross, Gordon & Bagnell 2011, AISTATS, arXiv:1011.0686)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from ajax.agents.base import ActorCritic, field_names, require_positive_integers, run_config, shared_arguments
from ajax.agents.DAgger.state import DAggerConfig, Labelled
from ajax.agents.DAgger.train_DAgger import make_train
from ajax.environments.utils import ExpertInAgentUnits, require_stateless
from ajax.extensions import LOOP_PHASES, Extension


class DAgger(ActorCritic):
    """Imitation of an expert on the states the learner itself visits, for discrete and continuous actions.

    Behaviour cloning trains on the expert's states only, so the learner's mistakes lead it
    to states it never saw labelled and its errors compound. DAgger (Algorithm 3.1) acts
    with the mixture pi_i = beta_i expert + (1 - beta_i) learner, asks the expert what it
    would have done at every state visited, whoever acted there, aggregates those labels
    into one dataset D and trains the learner on all of D. Every iteration is one rollout
    of `n_steps` per env; its `n_gradient_steps` minibatch steps train the learner.

    `expert_policy` (required) maps a batch of raw observations to actions: torques or
    other env-unit actions for a continuous env, read in the agent's [-1, 1] units through
    `ExpertInAgentUnits`, and action indices for a discrete one. A stateful expert
    (`StatefulExpert`) is refused: a state such as a PID's integral follows the trajectory
    the expert drives, and on the learner's steps it would be a label of a trajectory the
    expert never drove.

    The learner is a deterministic tanh actor regressed on the expert's actions (mean
    squared error) for continuous actions, and a softmax classifier trained by
    cross-entropy for discrete ones; it acts and is evaluated deterministically. There is
    no critic, so `Eval/mean bias` is NaN.

    Defaults:
      - beta_i = `beta_decay`^(i - 1) with `beta_decay=0.5`: beta_1 = 1 (the first
        iteration is the expert's), then halving; the paper's Section 3 suggests this
        exponential decay, and `beta_decay=0` is its beta_i = 1{i = 1}.
      - two 256-unit relu layers (the paper's learners are linear; this is SAC's
        default network), Adam at `learning_rate=1e-3`, gradients unclipped.
      - 4 envs x `n_steps=250` steps per iteration (1,000 labelled states, two CartPole
        episodes of the expert), then `n_gradient_steps=250` minibatches of
        `batch_size=256`, fitted on CartPole-v1 (tests/agents/test_dagger.py holds the
        calibration).
      - D is a ring of `buffer_size=1_000_000` rows, so it holds every visited state of
        runs up to a million steps, as the paper's D does; past that it drops the oldest.

    Observations and rewards are never normalised: the expert reads the env's raw
    observations, and the learner reads the same ones it is labelled on.
    """

    name: ClassVar[str] = "DAgger"
    continuous: ClassVar[bool | None] = None
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"actor_loss"}
    batch_fields: ClassVar[frozenset[str]] = field_names(Labelled)  # the aggregated dataset's rows
    make_train = staticmethod(make_train)

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
        require_stateless(expert_policy, "DAgger")
        expert = ExpertInAgentUnits.for_env(expert_policy, self.env_args)
        require_positive_integers(n_steps=n_steps, n_gradient_steps=n_gradient_steps, batch_size=batch_size)
        per_iteration = n_steps * self.env_args.n_envs
        if buffer_size < max(per_iteration, batch_size):
            raise ValueError(
                f"buffer_size={buffer_size} must hold one iteration's n_steps * n_envs = {per_iteration} labelled "
                f"states and one batch of {batch_size}."
            )
        if not 0.0 <= beta_decay <= 1.0:
            raise ValueError(f"beta_decay must lie in [0, 1] (beta_i = beta_decay^(i-1)), got {beta_decay}.")
        self.agent_config = DAggerConfig(
            expert=expert,
            n_steps=n_steps,
            n_gradient_steps=n_gradient_steps,
            batch_size=batch_size,
            buffer_size=int(buffer_size),
            beta_decay=float(beta_decay),
        )
