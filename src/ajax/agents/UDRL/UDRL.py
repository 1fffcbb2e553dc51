"""UDRL: upside-down reinforcement learning (Schmidhuber 2019, arXiv:1912.02875; Srivastava et al. 2019,
arXiv:1912.02877)."""

from __future__ import annotations

from typing import Any, ClassVar

from ajax.agents.base import ENCODER, ENVIRONMENT, ActorCritic, field_names, one_network
from ajax.agents.UDRL.state import UDRLConfig
from ajax.agents.UDRL.train_UDRL import RelabelledBatch, make_train
from ajax.extensions import LOOP_PHASES
from ajax.hyperparameters import Hyperparameters, count, keywords, number


class UDRL(ActorCritic):
    """Upside-down RL: a policy conditioned on a command (desired return, desired horizon),
    learned by supervised likelihood on an episode buffer; no critic. Discrete and continuous.

    Defaults: 2 envs acting 250 steps each per iteration, 25 minibatches of 256 per
    iteration, learning rate 1e-3, a buffer of the 128 most recent episodes, commands from
    its top 5, return and horizon scales 0.02, two 64-unit relu layers. Observations and
    rewards are never normalised: commands are returns in the env's units. docs/agents/udrl.md has
    the papers, Ajax's departures and the calibrated result.
    """

    name: ClassVar[str] = "UDRL"
    continuous: ClassVar[bool | None] = None
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"actor_loss"}
    batch_fields: ClassVar[frozenset[str]] = field_names(RelabelledBatch)
    make_train = staticmethod(make_train)
    # The command-conditioned policy is the actor; there is no critic.
    networks: ClassVar[dict[str, tuple[str, str]]] = {"actor": ("learning_rate", "architecture")}
    hyperparameters: ClassVar[Hyperparameters] = (
        one_network(1e-3, ("64", "relu", "64", "relu"))
        | keywords(
            n_steps=count(250, doc="steps per env copy in each iteration (one compiled segment)"),
            n_updates_per_iter=count(25, doc="minibatch updates after each iteration"),
            batch_size=count(256, doc="relabelled steps per minibatch"),
            buffer_size=count(128, doc="most recent episodes kept, each of the env's longest length"),
            top_k=count(5, doc="best recent episodes the exploratory commands are drawn from"),
            return_scale=number(0.02, sweep=True, doc="brings the desired return to the network's input range"),
            horizon_scale=number(0.02, sweep=True, doc="brings the desired horizon to the network's input range"),
        )
        | ENVIRONMENT.with_defaults(n_envs=2)
        | ENCODER
    )

    def __init__(self, env_id: str | Any, **settings: Any) -> None:
        super().__init__(env_id, **settings)
        s = self.settings
        if not s.architecture:
            raise ValueError(
                "architecture needs at least one layer: the first is the gate of observation and command, "
                "e.g. ('64', 'relu', '64', 'relu')."
            )
        if s.buffer_size < 2 * s.n_envs:
            raise ValueError(
                f"buffer_size={s.buffer_size} must hold at least 2 episodes per env (each env keeps a ring of its "
                f"own, one slot of it filling): at least {2 * s.n_envs} with n_envs={s.n_envs}."
            )
        if s.top_k > s.buffer_size - s.n_envs:
            raise ValueError(
                f"top_k={s.top_k} exceeds the {s.buffer_size - s.n_envs} finished episodes a buffer of "
                f"{s.buffer_size} holds with {s.n_envs} envs filling a slot each; lower top_k or raise buffer_size."
            )
        self.agent_config = UDRLConfig(
            n_steps=s.n_steps,
            n_updates_per_iter=s.n_updates_per_iter,
            batch_size=s.batch_size,
            buffer_size=s.buffer_size,
            top_k=s.top_k,
            return_scale=s.return_scale,
            horizon_scale=s.horizon_scale,
        )

    def replay_size(self) -> None:
        """UDRL's buffer keeps whole episodes, each slot the env's longest: a slot count, not a
        count of transitions to allocate for the run's horizon."""
        return None
