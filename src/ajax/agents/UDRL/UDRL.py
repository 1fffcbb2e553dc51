"""UDRL: upside-down reinforcement learning (Schmidhuber 2019, arXiv:1912.02875; Srivastava et al. 2019,
arXiv:1912.02877)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ajax.agents.base import ActorCritic, field_names, require_positive_integers, run_config, shared_arguments
from ajax.agents.UDRL.state import UDRLConfig
from ajax.agents.UDRL.train_UDRL import RelabelledBatch, make_train
from ajax.extensions import LOOP_PHASES, Extension


class UDRL(ActorCritic):
    """No critic: a policy conditioned on a command (desired return, desired horizon), learned by
    supervised likelihood on an episode buffer, for discrete and continuous actions.

    Every stored step is a demonstration of the command it fulfilled: the return the rest
    of its episode collected within the steps left (hindsight relabelling). The policy
    learns pi(a | s, c) by maximum likelihood on such steps, and acts on commands drawn from
    the best recent episodes, asking a little more than their mean return.

    Defaults follow Srivastava et al.'s settings where they carry over (their search ranges
    in brackets), and were fitted to learn CartPole-v1 quickly on a CPU (tests/agents/
    test_udrl.py holds the calibration):
      - 2 envs acting `n_steps=250` steps each per iteration (they generate 10-40 whole
        episodes per iteration; a fixed segment keeps one compiled shape). Four envs, or
        125-step segments, learned more slowly per step.
      - `n_updates_per_iter=25` [100-300] minibatches of `batch_size=256` [512-1024]: about
        13 samples per collected step, near their ~20. 50 or 100 updates learned more slowly.
      - `learning_rate=1e-3` [1e-4, 1e-2]; gradients unclipped.
      - `buffer_size=128` episodes [300-700], commands from its `top_k=5` [25-100] best. Their
        buffer keeps the highest-return episodes, so their top 25-100 are the best ever seen;
        this one keeps the most recent, and its top 5 (10 and 25 learned more slowly) play
        that part.
      - `return_scale=horizon_scale=0.02` [0.01-0.03]: CartPole's returns and horizons of
        10-500 reach the network as 0.2-10. Scale to the task: Pendulum's returns of -1,500
        to -100 would reach it as -30 to -2.
      - two 64-unit relu layers, the first the multiplicative gate of observation and
        command (see `CommandConditionedPolicy`).

    Departures, to fit one compiled program: the buffer keeps the most recent episodes, a
    ring per env, where Srivastava et al. keep the highest-return ones. Acting runs in fixed
    segments of `n_steps` per env; episodes continue across segments, each starting from a
    fresh exploratory command drawn from the statistics of the buffer as the last segment
    left it. There are no warm-up episodes of uniform actions: the first episodes come from
    the randomly initialised policy. The buffer holds `buffer_size x max_episode_steps`
    steps: lower `buffer_size` for long episodes or large observations.

    Continuous actions come from a diagonal Gaussian clipped to the agent's [-1, 1], the
    action the env receives and the buffer stores. Evaluation acts greedily on the exploiting
    command (the top-K's mean return and mean length), updated by every reward through the
    episode.
    """

    name: ClassVar[str] = "UDRL"
    continuous: ClassVar[bool | None] = None
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"actor_loss"}
    batch_fields: ClassVar[frozenset[str]] = field_names(RelabelledBatch)
    make_train = staticmethod(make_train)

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
        require_positive_integers(
            n_steps=n_steps, n_updates_per_iter=n_updates_per_iter, batch_size=batch_size, top_k=top_k
        )
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
        if not return_scale > 0 or not horizon_scale > 0:
            raise ValueError(f"return_scale and horizon_scale must be positive, got {return_scale}, {horizon_scale}.")
        self.agent_config = UDRLConfig(
            n_steps=n_steps,
            n_updates_per_iter=n_updates_per_iter,
            batch_size=batch_size,
            buffer_size=buffer_size,
            top_k=top_k,
            return_scale=return_scale,
            horizon_scale=horizon_scale,
        )
