"""PPO: proximal policy optimisation (Schulman et al. 2017, arXiv:1707.06347)."""

from __future__ import annotations

import dataclasses
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from ajax.agents.base import DISCOUNT, ENCODER, ENVIRONMENT, NORMALIZATION, ActorCritic, field_names, two_networks
from ajax.agents.PPO.state import Initializer, PPOConfig, ProximalInitializers
from ajax.agents.PPO.train_PPO import Minibatch, make_train
from ajax.deprecation import removed_keywords, renamed_keywords
from ajax.extensions import LOOP_PHASES
from ajax.hyperparameters import Hyperparameter, Hyperparameters, choice, count, flag, keywords, number, schedule
from ajax.modules.pid_actor import PIDPolicy
from ajax.state import EnvironmentConfig


def _initializer(name: str, value: Any) -> None:
    if value is not None and not callable(value):
        raise TypeError(
            f"{name} takes a flax initialiser, a function of (key, shape, dtype), e.g. "
            f"flax.linen.initializers.zeros or ajax.networks.initializers.orthogonal(1.0); got {value!r}."
        )


def initializer(doc: str) -> Hyperparameter:
    """A flax initialiser replacing one of PPO's (`ProximalInitializers`); None keeps PPO's own."""
    return Hyperparameter(None, _initializer, "a function of (key, shape, dtype), or None", doc=doc)


# What PPO and APO share: their networks, GAE's lambda, the clipped epochs over each rollout,
# the env copies and the initialisers (APO's keywords are these, less the discount).
PROXIMAL_NETWORKS = two_networks(3e-4, ("128", "tanh", "128", "tanh"), 0.5, pid=True)
GAE_LAMBDA = keywords(
    gae_lambda=number(0.95, "[0, 1]", sweep=True, doc="GAE's lambda: lower trades the advantages' variance for bias"),
)
CLIPPED_EPOCHS = keywords(
    n_steps=count(2048, doc="steps each env copy collects per rollout"),
    batch_size=count(64, doc="transitions per minibatch (must divide n_steps * n_envs)"),
    n_epochs=count(10, doc="passes over each rollout, each on a fresh shuffle"),
    clip_range=schedule(0.2, doc="how far the probability ratio may move before the surrogate stops rewarding it"),
    ent_coef=number(0.0, "[0, inf)", sweep=True, doc="weight of the entropy bonus, which keeps the policy exploring"),
    vf_coef=number(0.5, "[0, inf)", sweep=True, doc="weight of the critic's squared value error"),
    normalize_advantage=flag(True, doc="advantages standardised per minibatch, so the step size ignores reward scale"),
)
PROXIMAL_ENVIRONMENT = ENVIRONMENT.with_defaults(n_envs=4)
# Brax's PPO settings (brax.training.agents.ppo.train), each at the value that keeps Ajax's PPO as
# it was; docs/brax.md maps every key of Brax's trainer onto Ajax's.
BRAX_SETTINGS = keywords(
    reward_scaling=number(1.0, doc="rewards are multiplied by this before GAE and the value targets (Brax's)"),
    unroll_length=count(
        None,
        optional=True,
        doc="Brax's segments: each env's rollout cut into pieces of this many steps, GAE bootstrapping at each "
        "piece's end, minibatches of whole pieces whose advantages are computed from the critic as it stands "
        "(divides n_steps and batch_size; None: GAE over whole rollouts, minibatches of transitions)",
    ),
    bootstrap_on_truncation=flag(
        True, doc="at a time limit, bootstrap from the final observation (False: Brax's, the step's advantage is 0)"
    ),
    advantage_estimator=choice(
        "gae",
        ("gae", "vtrace"),
        doc="'gae': sum of (gamma lambda)^k delta; 'vtrace': r + gamma v' - V with v' the next lambda-return (Brax's)",
    ),
    policy_distribution=choice(
        "gaussian",
        ("gaussian", "tanh_gaussian"),
        doc="continuous actions: 'gaussian' with a state-independent deviation, or Brax's 'tanh_gaussian' (the "
        "network outputs the deviation, softplus + 0.001, and the sample is squashed)",
    ),
    shared_optimizer=flag(
        False, doc="one Adam over actor and critic, their gradients' norm clipped together (Brax's); one learning rate"
    ),
)
INITIALIZERS = keywords(
    encoder_kernel_init=initializer("every hidden layer's weights (None: orthogonal, gain sqrt 2)"),
    actor_bias_init=initializer("the actor's output bias (None: zeros)"),
    critic_bias_init=initializer("the critic's value bias (None: zeros)"),
    mean_kernel_init=initializer("the Gaussian mean's weights (None: orthogonal, gain 0.01); continuous actions"),
)


# Sequential minibatch steps per rollout, n_epochs * n_steps * n_envs / batch_size, above which
# construction warns. batch_size counts transitions, so the minibatches per epoch grow with n_envs:
# every one is an update that waits for the one before, and once they outnumber the rollout's
# n_steps sequential env steps several times over, the update, not the env, sets the pace. The
# defaults make 1,280 (10 epochs of 4 * 2048 / 64 = 128), the most of any setting in the repo's
# tests, docs, examples and benchmarks; 10,000 lets the defaults run 16 env copies (5,120) and
# warns from 32 (10,240, five update steps per env step), well short of the 655,360 that made
# 2,048 copies train at 178k steps/s on a TPU (issue 58).
SEQUENTIAL_MINIBATCH_LIMIT = 10_000
# Minibatches per epoch in the batch_size the warning suggests: PureJaxRL's and Brax's convention of
# a fixed count (32 in their continuous-control settings) rather than a fixed size, so the sequential
# steps stay n_epochs * 32 whatever n_envs.
SUGGESTED_MINIBATCHES = 32
_PACKAGE = str(Path(__file__).parents[2]) + os.sep


def _user_stacklevel() -> int:
    """warnings.warn's stacklevel, for the caller of this function, that points at the first line
    outside ajax: the user's call, whatever subclasses and keyword-checking wrappers lie between
    (what Python 3.12's skip_file_prefixes does, on 3.11)."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def suggested_batch_size(rollout: int) -> int:
    """The batch_size that splits `rollout` into the most minibatches up to SUGGESTED_MINIBATCHES:
    rollout // 32 when 32 divides it, else the nearest divisor above, so it always divides the
    rollout and never makes more minibatches per epoch than 32."""
    return rollout // next(m for m in range(SUGGESTED_MINIBATCHES, 0, -1) if rollout % m == 0)


def check_rollout_split(n_steps: int, n_envs: int, batch_size: int, n_epochs: int, recurrent: bool = False) -> None:
    """Refuse a batch_size that does not divide the rollout, PPO's and APO's, before anything compiles,
    and warn when it makes more than SEQUENTIAL_MINIBATCH_LIMIT sequential minibatch steps per rollout.

    The warning comes at construction because nothing else would say it: a run with the
    SB3-sized batch_size of 64 and thousands of env copies trains, only hundreds of times slower.
    A recurrent rollout trains as whole sequences, so `batch_size` need not divide it and sets
    no minibatch count (`n_minibatches` does).
    """
    if recurrent:
        return
    rollout = n_steps * n_envs
    if rollout % batch_size:
        divisors = [d for d in range(1, rollout + 1) if rollout % d == 0 and 16 <= d <= 4096]
        raise ValueError(
            f"batch_size={batch_size} does not divide the rollout of n_steps * n_envs = {n_steps} * {n_envs} "
            f"= {rollout} transitions. Pick a divisor, e.g. one of {divisors[:8]}."
        )
    per_epoch = rollout // batch_size
    if n_epochs * per_epoch > SEQUENTIAL_MINIBATCH_LIMIT:
        suggested = suggested_batch_size(rollout)
        warnings.warn(
            f"batch_size={batch_size} makes {n_epochs * per_epoch:,} sequential minibatch steps per rollout, over "
            f"{SEQUENTIAL_MINIBATCH_LIMIT:,}: the rollout of n_steps * n_envs = {n_steps} * {n_envs} = {rollout:,} "
            f"transitions splits into {per_epoch:,} minibatches per epoch, times n_epochs={n_epochs}. Each step "
            "waits for the one before, so the update, not the env, sets the pace and training crawls. Keep the "
            f"number of minibatches fixed as n_envs grows: batch_size={suggested} makes {rollout // suggested} "
            "per epoch (docs/training.md, 'Seeds and n_envs').",
            UserWarning,
            stacklevel=_user_stacklevel(),
        )


def checked_batch_size(settings: Any, given_batch_size: int | None, recurrent: bool) -> int:
    """The transitions per minibatch: `batch_size`, or the rollout split into `n_minibatches`
    (feed-forward); both may be given only when they agree."""
    n_minibatches = settings.n_minibatches
    if recurrent or n_minibatches is None:
        return int(settings.batch_size)
    rollout = settings.n_steps * settings.n_envs
    if rollout % n_minibatches:
        divisors = [d for d in range(1, min(rollout, 512) + 1) if rollout % d == 0]
        raise ValueError(
            f"n_minibatches={n_minibatches} does not divide the rollout of n_steps * n_envs = {settings.n_steps} * "
            f"{settings.n_envs} = {rollout} transitions. Pick a divisor, e.g. one of {divisors[-8:]}."
        )
    batch_size = rollout // n_minibatches
    if given_batch_size is not None and given_batch_size != batch_size:
        raise ValueError(
            f"batch_size={given_batch_size} and n_minibatches={n_minibatches} both set the minibatches (a size and a "
            f"count; n_minibatches={n_minibatches} makes them {batch_size} transitions each). Give one of them."
        )
    return batch_size


def checked_unroll_length(unroll_length: int, n_steps: int, batch_size: int, memory: Any) -> None:
    """Brax's segments must tile each env's rollout and fill each minibatch whole."""
    if memory is not None:
        raise ValueError(
            "unroll_length cuts a feed-forward PPO's rollouts into segments; with memory= the sequences are "
            "bptt_length's. Drop unroll_length, or memory=."
        )
    if n_steps % unroll_length:
        divisors = [d for d in range(1, n_steps + 1) if n_steps % d == 0]
        raise ValueError(
            f"unroll_length={unroll_length} does not divide n_steps={n_steps}: each env's rollout is cut into "
            f"n_steps / unroll_length segments. Pick a divisor, e.g. one of {divisors[:8]}."
        )
    if batch_size % unroll_length:
        raise ValueError(
            f"unroll_length={unroll_length} does not divide batch_size={batch_size}: minibatches are whole segments, "
            "so each holds a multiple of unroll_length transitions. Change batch_size (or n_minibatches)."
        )


def checked_bptt_length(bptt_length: int | None, n_steps: int, memory: Any) -> int | None:
    """Truncated BPTT's sequence length: with memory only, dividing the rollout."""
    if bptt_length is None:
        return None
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
    n_minibatches: int | None, n_envs: int, n_steps: int, bptt_length: int | None, memory: Any
) -> int:
    """How many minibatches a recurrent PPO splits its sequences into: a divisor of their number
    (None: 1). A feed-forward PPO's count is `checked_batch_size`'s."""
    if memory is None or n_minibatches is None:
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
    """PPO's and APO's initialisers, refusing one that no parameter would take (`initializer`
    refuses one that is no function).

    The mean's layer exists only on a Gaussian actor of layer strings, and a PID actor has
    no output layer of its own: it starts from its gains.
    """
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
    optimisers. `batch_size` is a size, so raising `n_envs` multiplies the sequential
    minibatch steps; construction warns past SEQUENTIAL_MINIBATCH_LIMIT of them per rollout
    and suggests a batch_size of 32 minibatches per epoch. `memory=` (a MemoryConfig or its
    dict) makes both networks recurrent, trained by BPTT over whole rollouts or
    `bptt_length`-step sequences (batch_size then unused: `n_minibatches` splits the
    sequences). `encoder_kernel_init`, `actor_bias_init`, `critic_bias_init` and
    `mean_kernel_init` replace initialisers (`ProximalInitializers`). `n_minibatches` counts
    the minibatches instead of `batch_size` sizing them. Brax's settings (`BRAX_SETTINGS`:
    `reward_scaling`, `unroll_length`, `bootstrap_on_truncation`, `advantage_estimator`,
    `policy_distribution`, `shared_optimizer`) are off by default; docs/brax.md maps Brax's
    trainer onto them. docs/agents/ppo.md has the paper, Ajax's choices and the calibrated
    result; docs/memory.md the recurrent mode.
    """

    name: ClassVar[str] = "PPO"
    pid_actor_form: ClassVar[str | None] = "gaussian"
    continuous: ClassVar[bool | None] = None
    supports_memory: ClassVar[bool] = True
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES | {"actor_loss"}
    batch_fields: ClassVar[frozenset[str]] = field_names(Minibatch)
    make_train = staticmethod(make_train)
    hyperparameters: ClassVar[Hyperparameters] = (
        PROXIMAL_NETWORKS
        | keywords(gamma=DISCOUNT)
        | GAE_LAMBDA
        | CLIPPED_EPOCHS
        | PROXIMAL_ENVIRONMENT
        | NORMALIZATION
        | ENCODER
        | keywords(
            bptt_length=count(
                None, optional=True, doc="with memory: sequence length, a divisor of n_steps (None: whole)"
            ),
            n_minibatches=count(
                None,
                optional=True,
                doc="minibatches per epoch, in place of batch_size (None: n_steps * n_envs / batch_size); with "
                "memory, of whole sequences (None: 1)",
            ),
        )
        | INITIALIZERS
        | BRAX_SETTINGS
    )

    def __init__(self, env_id: str | Any, **settings: Any) -> None:
        super().__init__(env_id, **settings)
        s = self.settings
        memory = self.network_args.memory
        batch_size = checked_batch_size(s, given_batch_size=settings.get("batch_size"), recurrent=memory is not None)
        self.config["batch_size"] = batch_size  # what n_minibatches made it, so the config builds this PPO again
        check_rollout_split(s.n_steps, s.n_envs, batch_size, s.n_epochs, recurrent=memory is not None)
        self.agent_config = PPOConfig(
            n_steps=s.n_steps,
            batch_size=batch_size,
            n_epochs=s.n_epochs,
            clip_range=s.clip_range,
            gamma=s.gamma,
            gae_lambda=s.gae_lambda,
            ent_coef=s.ent_coef,
            vf_coef=s.vf_coef,
            normalize_advantage=s.normalize_advantage,
            bptt_length=checked_bptt_length(s.bptt_length, s.n_steps, memory),
            n_minibatches=checked_recurrent_minibatches(s.n_minibatches, s.n_envs, s.n_steps, s.bptt_length, memory),
            initializers=checked_initializers(
                self.env_args, s.actor_architecture, **{name: s[name] for name in INITIALIZERS.declared}
            ),
            **self.brax_settings(batch_size),
        )

    def brax_settings(self, batch_size: int) -> dict[str, Any]:
        """`BRAX_SETTINGS`' fields of PPOConfig, refusing what they cannot be combined with; with
        `shared_optimizer` the networks' own optimisers stop clipping, the joint step clips."""
        s, memory = self.settings, self.network_args.memory
        settings = {name: s[name] for name in BRAX_SETTINGS.declared}
        if s.unroll_length is not None:
            checked_unroll_length(s.unroll_length, s.n_steps, batch_size, memory)
        if s.policy_distribution == "tanh_gaussian":
            if not self.env_args.continuous:
                raise ValueError(
                    f"policy_distribution='tanh_gaussian' squashes continuous actions, and {self.env_args.env.name}'s "
                    "are discrete (a softmax actor). Drop policy_distribution."
                )
            if memory is not None or isinstance(s.actor_architecture, PIDPolicy):
                raise ValueError(
                    "policy_distribution='tanh_gaussian' is built for a feed-forward actor of layer strings; drop "
                    "memory= or the PIDPolicy, or keep policy_distribution='gaussian'."
                )
        if s.shared_optimizer:
            if s.actor_learning_rate != s.critic_learning_rate:
                raise ValueError(
                    "shared_optimizer=True takes one Adam over both networks, so one learning rate: got "
                    f"actor_learning_rate={s.actor_learning_rate!r} and "
                    f"critic_learning_rate={s.critic_learning_rate!r}. Set them equal."
                )
            self.optimizer_args = {
                role: dataclasses.replace(args, max_grad_norm=None) for role, args in self.optimizer_args.items()
            }
            settings["joint_max_grad_norm"] = s.max_grad_norm
        return settings
