"""UDRL: upside-down reinforcement learning (Schmidhuber 2019, arXiv:1912.02875; Srivastava et al. 2019,
arXiv:1912.02877)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ajax.agents.base import ActorCritic, field_names, run_config, shared_arguments
from ajax.agents.UDRL.state import UDRLConfig
from ajax.agents.UDRL.train_UDRL import RelabelledBatch, make_train
from ajax.checks import require_counts, require_finite_positive
from ajax.extensions import LOOP_PHASES, Extension


class UDRL(ActorCritic):
    """Upside-down RL: a policy conditioned on a command (desired return, desired horizon),
    learned by supervised likelihood on an episode buffer; no critic. Discrete and continuous.

    Defaults: 2 envs acting 250 steps each per iteration, 25 minibatches of 256 per
    iteration, learning rate 1e-3, a buffer of the 128 most recent episodes, commands from
    its top 5, return and horizon scales 0.02, two 64-unit relu layers. docs/agents.md has
    the papers, Ajax's departures and the calibrated result.
    """

    name: ClassVar[str] = "UDRL"
    continuous: ClassVar[bool | None] = None
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"actor_loss"}
    batch_fields: ClassVar[frozenset[str]] = field_names(RelabelledBatch)
    make_train = staticmethod(make_train)
    sweepable: ClassVar[frozenset[str]] = frozenset(
        {
            "learning_rate",
            "return_scale",
            "horizon_scale",
            "max_grad_norm",
        }
    )

    def __init__(
        self,
        env_id: str | Any,
        n_envs: int = 2,
        learning_rate: float = 1e-3,
        architecture: Sequence[str] = ("64", "relu", "64", "relu"),
        n_steps: int = 250,
        n_updates_per_iter: int = 25,
        batch_size: int = 256,
        buffer_size: int = 128,
        top_k: int = 5,
        return_scale: float = 0.02,
        horizon_scale: float = 0.02,
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
                normalize_observations=False,  # commands are returns in the env's units: its rewards stay raw
                normalize_rewards=False,
            )
        )
        if not architecture:
            raise ValueError(
                "architecture needs at least one layer: the first is the gate of observation and command, "
                "e.g. ('64', 'relu', '64', 'relu')."
            )
        require_counts(
            n_steps=n_steps,
            n_updates_per_iter=n_updates_per_iter,
            batch_size=batch_size,
            buffer_size=buffer_size,
            top_k=top_k,
        )
        require_finite_positive(return_scale=return_scale, horizon_scale=horizon_scale)
        if buffer_size < 2 * n_envs:
            raise ValueError(
                f"buffer_size={buffer_size} must hold at least 2 episodes per env (each env keeps a ring of its own, "
                f"one slot of it filling): at least {2 * n_envs} with n_envs={n_envs}."
            )
        if top_k > buffer_size - n_envs:
            raise ValueError(
                f"top_k={top_k} exceeds the {buffer_size - n_envs} finished episodes a buffer of {buffer_size} "
                f"holds with {n_envs} envs filling a slot each; lower top_k or raise buffer_size."
            )
        self.agent_config = UDRLConfig(
            n_steps=n_steps,
            n_updates_per_iter=n_updates_per_iter,
            batch_size=batch_size,
            buffer_size=buffer_size,
            top_k=top_k,
            return_scale=return_scale,
            horizon_scale=horizon_scale,
        )
