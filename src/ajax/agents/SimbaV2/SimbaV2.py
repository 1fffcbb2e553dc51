"""SimbaV2: hyperspherical networks and a categorical critic (Lee et al. 2025, arXiv:2502.15280)."""

from __future__ import annotations

from typing import Any, ClassVar

from ajax.agents.base import shallow_fields
from ajax.agents.SAC import SAC
from ajax.agents.SimbaV2.state import SimbaV2Config
from ajax.agents.SimbaV2.train_SimbaV2 import make_train
from ajax.deprecation import CLONING_KEYWORDS, removed_keywords
from ajax.extensions import LOOP_PHASES
from ajax.hyperparameters import Hyperparameters, count, keywords, number
from ajax.networks.hyperspherical import SimbaV2Network
from ajax.schedule import linear

# The reference's step size for the actor, the critics and the temperature: 1e-4 falling linearly
# to 5e-5 over the run's updates, here a million (its usual budget); a run of another length
# passes its own `linear(1e-4, 5e-5, n)`.
LEARNING_RATE = linear(1e-4, 5e-5, 1_000_000)


def discount(episode_steps: int) -> float:
    """The reference's discount from an episode's length in agent steps, L: a horizon of a fifth of
    the episode, 1 - 5 / L, kept within [0.95, 0.995] (0.975 for Pendulum's 200 steps, 0.995 for
    MuJoCo's 1,000)."""
    horizon = episode_steps / 5
    return max(min((horizon - 1) / horizon, 0.995), 0.95)


@removed_keywords(*CLONING_KEYWORDS, "pid_actor_config", "use_expert_guidance")
class SimbaV2(SAC):
    """SAC with SimbaV2's hyperspherical actor and critics, a categorical critic of 101 atoms on
    [-5, 5] and rewards scaled so that returns stay on that support.

    Defaults: the reference's (dojeon-ai/SimbaV2, configs/agent/simbaV2.yaml): a discount set by
    the episode's length (`discount`), an actor of one
    128-wide block and two critics of two 512-wide blocks, Adam at 1e-4 falling to 5e-5,
    batches of 256 from step 5,000, tau 0.005, temperature 0.01 learned towards an entropy of
    -0.5 per action dimension, observations and rewards normalised per replayed batch. Per
    update: actor, then temperature, then the critics with the updated actor, then the target.
    docs/agents/simbav2.md has the equations and where Ajax departs (the step sizes' decay over a fixed
    10^6 updates, two critics everywhere).
    """

    name: ClassVar[str] = "SimbaV2"
    supports_memory: ClassVar[bool] = False  # its hyperspherical networks are feed-forward
    normalizes_batches: ClassVar[bool] = True  # the reference's: each replayed batch with today's statistics
    # A distribution over returns in scaled units, not one discounted value per action.
    discounted_q_critic: ClassVar[bool] = False
    # The phases that read a critic as one value per action (IBRL's target and action
    # proposals) do not fit categorical critics: only the loss phases are folded.
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"critic_loss", "actor_loss"}
    make_train = staticmethod(make_train)
    hyperparameters: ClassVar[Hyperparameters] = SAC.hyperparameters.fixing(
        # Its actor's noise scale is its own (bounded), and without memory there are no replayed sequences.
        use_sde=False,
        log_std_init=-3.0,
        jsrl_curriculum=None,
        sequence_length=16,
        burn_in=8,
        stored_state=False,
    ).with_defaults(
        actor_learning_rate=LEARNING_RATE,
        critic_learning_rate=LEARNING_RATE,
        alpha_learning_rate=LEARNING_RATE,
        actor_architecture=SimbaV2Network(128, 1),
        critic_architecture=SimbaV2Network(512, 2),
        learning_starts=5_000,
        alpha_init=0.01,
        gamma=number(
            None,
            "(0, 1]",
            sweep=True,
            optional=True,
            doc="None: clip(1 - 5 / L, 0.95, 0.995), L the episode's agent steps",
        ),
        target_entropy=number(
            None, "(-inf, inf)", sweep=True, optional=True, doc="None: minus half the action dimension"
        ),
        normalize_observations=True,
        normalize_rewards=True,
    ) | keywords(
        n_atoms=count(101, 2, doc="atoms of each critic's categorical distribution"),
        return_bound=number(5.0, doc="the atoms span [-return_bound, return_bound]; scaled returns stay inside"),
    )

    def discount(self, gamma: float | None) -> float:
        return discount(self.env_args.max_episode_steps) if gamma is None else float(gamma)

    def __init__(self, env_id: str | Any, **settings: Any) -> None:
        super().__init__(env_id, **settings)
        s = self.settings
        half_action_dim = -0.5 * self.env_args.action_dim
        self.agent_config = SimbaV2Config(
            **{
                **shallow_fields(self.agent_config),
                "gamma": self.env_args.normalization.gamma,
                "target_entropy": float(half_action_dim if s.target_entropy is None else s.target_entropy),
            },
            n_atoms=int(s.n_atoms),
            return_bound=float(s.return_bound),
        )


__all__ = ["LEARNING_RATE", "SimbaV2", "discount"]
