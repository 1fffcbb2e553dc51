"""PPO: proximal policy optimisation (Schulman et al. 2017, arXiv:1707.06347)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ajax.agents.base import ActorCritic, field_names, run_config, shared_arguments
from ajax.agents.PPO.state import Initializer, PPOConfig, ProximalInitializers
from ajax.agents.PPO.train_PPO import Minibatch, make_train
from ajax.checks import require_counts, require_in_interval
from ajax.deprecation import removed_keywords, renamed_keywords
from ajax.extensions import LOOP_PHASES, Extension
from ajax.modules.pid_actor import PIDPolicy
from ajax.schedule import Schedule, check_schedule
from ajax.state import EnvironmentConfig


def check_clipped_epochs(
    n_steps: int, n_envs: int, batch_size: int, n_epochs: int, clip_range: Schedule, recurrent: bool = False
) -> None:
    """The rollout and epoch settings PPO and its descendants refuse before anything compiles.

    A recurrent rollout trains as whole sequences, so `batch_size` need not divide it.
    """
    require_counts(n_steps=n_steps, n_epochs=n_epochs, batch_size=batch_size)
    rollout = n_steps * n_envs
    if rollout % batch_size and not recurrent:
        divisors = [d for d in range(1, rollout + 1) if rollout % d == 0 and 16 <= d <= 4096]
        raise ValueError(
            f"batch_size={batch_size} does not divide the rollout of n_steps * n_envs = {n_steps} * {n_envs} "
            f"= {rollout} transitions. Pick a divisor, e.g. one of {divisors[:8]}."
        )
    check_schedule("clip_range", clip_range)


def checked_bptt_length(bptt_length: int | None, n_steps: int, memory: Any) -> int | None:
    """Truncated BPTT's sequence length: with memory only, dividing the rollout."""
    if bptt_length is None:
        return None
    require_counts(bptt_length=bptt_length)
    if memory is None:
        raise ValueError("bptt_length cuts a recurrent PPO's rollouts into sequences: it needs memory=.")
    if n_steps % bptt_length:
        divisors = [d for d in range(1, n_steps + 1) if n_steps % d == 0]
        raise ValueError(
            f"bptt_length={bptt_length} does not divide n_steps={n_steps}: each env's rollout splits into "
            f"n_steps / bptt_length sequences. Pick a divisor, e.g. one of {divisors[-8:]}."
        )
    return int(bptt_length)


def checked_recurrent_minibatches(
    n_minibatches: int, n_envs: int, n_steps: int, bptt_length: int | None, memory: Any
) -> int:
    """How many minibatches a recurrent PPO splits its sequences into: a divisor of their number."""
    require_counts(n_minibatches=n_minibatches)
    if memory is None:
        if n_minibatches != 1:
            raise ValueError(
                "n_minibatches splits a recurrent PPO's sequences; a feed-forward PPO's minibatches are "
                "batch_size transitions. Set batch_size, or pass memory=."
            )
        return 1
    n_sequences = n_envs * (n_steps // (bptt_length or n_steps))
    if n_sequences % n_minibatches:
        divisors = [d for d in range(1, n_sequences + 1) if n_sequences % d == 0]
        raise ValueError(
            f"n_minibatches={n_minibatches} does not divide the rollout's {n_sequences} sequences (n_envs={n_envs} "
            f"times n_steps / bptt_length = {n_sequences // n_envs}): minibatches split whole sequences. "
            f"Pick one of {divisors[:8]}."
        )
    return int(n_minibatches)


def checked_initializers(
    env_args: EnvironmentConfig, actor_architecture: Sequence[str] | PIDPolicy, **initializers: Initializer | None
) -> ProximalInitializers:
    """PPO's and APO's initialisers, refusing one that is no function or that no parameter would take.

    The mean's layer exists only on a Gaussian actor of layer strings, and a PID actor has
    no output layer of its own: it starts from its gains.
    """
    for name, init in initializers.items():
        if init is not None and not callable(init):
            raise TypeError(
                f"{name} takes a flax initialiser, a function of (key, shape, dtype), e.g. "
                f"flax.linen.initializers.zeros or ajax.networks.initializers.orthogonal(1.0); got {init!r}."
            )
    if initializers.get("mean_kernel_init") is not None and not env_args.continuous:
        raise ValueError(
            f"mean_kernel_init starts a Gaussian actor's mean, and {env_args.env.name}'s actions are discrete (a "
            "softmax actor). Drop mean_kernel_init."
        )
    if isinstance(actor_architecture, PIDPolicy):
        for name in ("actor_bias_init", "mean_kernel_init"):
            if initializers.get(name) is not None:
                raise ValueError(f"A PID actor starts from its gains (PIDPolicy), not from {name}. Drop {name}.")
    return ProximalInitializers(**initializers)


# The README's first pages called the recurrent minibatch count num_minibatches; PQN's and PPO's is n_minibatches.
@removed_keywords("pid_actor_config")
@renamed_keywords(num_minibatches="n_minibatches")
class PPO(ActorCritic):
    """Clipped-surrogate PPO with GAE, for discrete and continuous actions.

    Defaults: 4 envs, 2048-step rollouts, minibatches of 64, 10 epochs on a fresh shuffle,
    clip 0.2, GAE lambda 0.95, gamma 0.99, two 128-unit tanh layers, gradient norm clipped
    at 0.5, advantages normalised per minibatch; separate actor and critic networks and
    optimisers. `memory=` (a MemoryConfig or its dict) makes both networks recurrent,
    trained by BPTT over whole rollouts or `bptt_length`-step sequences (batch_size then
    unused: `n_minibatches` splits the sequences). `encoder_kernel_init`, `actor_bias_init`,
    `critic_bias_init` and `mean_kernel_init` replace initialisers (`ProximalInitializers`).
    docs/agents.md has the paper, Ajax's choices and the calibrated result; docs/memory.md
    the recurrent mode.
    """

    name: ClassVar[str] = "PPO"
    pid_actor_form: ClassVar[str | None] = "gaussian"
    continuous: ClassVar[bool | None] = None
    supports_memory: ClassVar[bool] = True
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"actor_loss"}
    batch_fields: ClassVar[frozenset[str]] = field_names(Minibatch)
    make_train = staticmethod(make_train)
    sweepable: ClassVar[frozenset[str]] = frozenset(
        {
            "actor_learning_rate",
            "critic_learning_rate",
            "gamma",
            "gae_lambda",
            "clip_range",
            "ent_coef",
            "vf_coef",
            "max_grad_norm",
        }
    )

    def __init__(
        self,
        env_id: str | Any,
        n_envs: int = 4,
        actor_learning_rate: Schedule = 3e-4,
        critic_learning_rate: Schedule = 3e-4,
        actor_architecture: Sequence[str] | PIDPolicy = ("128", "tanh", "128", "tanh"),
        critic_architecture: Sequence[str] = ("128", "tanh", "128", "tanh"),
        gamma: float = 0.99,
        gae_lambda: float = 0.95,
        n_steps: int = 2048,
        batch_size: int = 64,
        n_epochs: int = 10,
        clip_range: Schedule = 0.2,
        ent_coef: float = 0.0,
        vf_coef: float = 0.5,
        normalize_advantage: bool = True,
        max_grad_norm: float | None = 0.5,
        episode_length: int | None = None,
        action_repeat: int = 1,
        env_params: Any = None,
        normalize_observations: bool = False,
        normalize_rewards: bool = False,
        extensions: Sequence[Extension] = (),
        memory: Any = None,
        bptt_length: int | None = None,
        n_minibatches: int = 1,
        encoder_kernel_init: Initializer | None = None,
        actor_bias_init: Initializer | None = None,
        critic_bias_init: Initializer | None = None,
        mean_kernel_init: Initializer | None = None,
    ) -> None:
        self.config = run_config(locals(), self.name)
        super().__init__(**shared_arguments(self.config))
        check_clipped_epochs(n_steps, n_envs, batch_size, n_epochs, clip_range, recurrent=memory is not None)
        require_in_interval("[0, 1]", gae_lambda=gae_lambda)
        require_in_interval("[0, inf)", ent_coef=ent_coef, vf_coef=vf_coef)
        self.agent_config = PPOConfig(
            n_steps=n_steps,
            batch_size=batch_size,
            n_epochs=n_epochs,
            clip_range=clip_range,
            gamma=gamma,
            gae_lambda=gae_lambda,
            ent_coef=ent_coef,
            vf_coef=vf_coef,
            normalize_advantage=normalize_advantage,
            bptt_length=checked_bptt_length(bptt_length, n_steps, self.network_args.memory),
            n_minibatches=checked_recurrent_minibatches(n_minibatches, n_envs, n_steps, bptt_length, memory),
            initializers=checked_initializers(
                self.env_args,
                actor_architecture,
                encoder_kernel_init=encoder_kernel_init,
                actor_bias_init=actor_bias_init,
                critic_bias_init=critic_bias_init,
                mean_kernel_init=mean_kernel_init,
            ),
        )
