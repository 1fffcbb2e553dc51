"""TD-MPC2 (Hansen, Su, Wang, ICLR 2024, arXiv:2310.16828), following nicklashansen/tdmpc2."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from ajax.agents.base import ENCODER, ENVIRONMENT, ActorCritic
from ajax.agents.TDMPC2.core import default_seed_steps, discount_from_episode_length
from ajax.agents.TDMPC2.networks import SIZES, Architecture, ModelSize
from ajax.agents.TDMPC2.planner import PlannerConfig
from ajax.agents.TDMPC2.state import LossCoefficients, TDMPC2Config
from ajax.agents.TDMPC2.train_TDMPC2 import make_train
from ajax.environments.terminations import can_terminate
from ajax.extensions import LOOP_PHASES
from ajax.hyperparameters import Hyperparameter, Hyperparameters, Settings, checked_later, count, flag, keywords, number

WIDE_ACTIONS = 20  # from this many action dimensions the planner iterates twice more (the reference's heuristic)


def _model_size(name: str, value: Any) -> None:
    if isinstance(value, bool) or value not in SIZES:
        sizes = ", ".join(map(str, SIZES))
        raise ValueError(f"{name} must be one of {sizes} (millions of parameters), got {value!r}.")


def _no_memory(name: str, value: Any) -> None:
    if value is not None:
        raise ValueError(
            "TDMPC2 takes no memory=: its latent is read from each observation alone, as the reference's is. "
            "Drop memory=."
        )


WIDTHS = ("enc_dim", "mlp_dim", "latent_dim", "num_enc_layers", "num_q")


class TDMPC2(ActorCritic):
    """A latent world model trained by temporal differences, and MPPI planning with it at every step.

    Continuous actions. `model_size` (1, 5, 19, 48 or 317, millions of parameters) fixes
    the widths, as the reference's presets do; `enc_dim`, `mlp_dim`, `latent_dim`,
    `num_enc_layers` and `num_q` override single widths (smaller models for a CPU). Every
    other default is the reference's (`config.yaml`): batches of 256 windows of `horizon` 3
    steps, Adam at 3e-4 (the encoder at 0.3 times it), gradients clipped at 20, rho 0.5,
    tau 0.01, loss weights 20 / 0.1 / 0.1 (consistency, reward, value), 101 two-hot bins
    over [-10, 10] in symlog space; the planner's 512 samples, 24 of them from the policy
    prior, 64 elites, 6 iterations, temperature 0.5, std in [0.05, 2]. `gamma` defaults
    to the reference's heuristic from the episode length, `seed_steps` to max(1000, 5 T).
    `episodic` (a termination head, used by the planner and trained on the true
    terminations) defaults to whether the env's episodes can terminate, read from its step
    function. docs/agents/tdmpc2.md lists where Ajax departs from the reference.
    """

    name: ClassVar[str] = "TDMPC2"
    continuous: ClassVar[bool | None] = True
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES
    make_train = staticmethod(make_train)
    # One world model and a policy prior, with TD-MPC2's own optimisers: no network the base builds.
    networks: ClassVar[dict[str, tuple[str, str]]] = {}
    hyperparameters: ClassVar[Hyperparameters] = keywords(
        model_size=Hyperparameter(
            5, _model_size, ", ".join(map(str, SIZES)), doc="the reference's presets (millions of parameters)"
        ),
        batch_size=count(256, doc="windows per update"),
        buffer_size=count(1_000_000, doc="transitions over all env copies, each copy's time line a share"),
        learning_rate=number(3e-4, sweep=True, doc="Adam's step size, for the model and the policy prior"),
        enc_lr_scale=number(0.3, sweep=True, doc="the encoder's step size, as a fraction of learning_rate"),
        grad_clip_norm=number(
            20.0, sweep=True, doc="the model's and the policy's gradients clipped to this global norm"
        ),
        tau=number(0.01, "(0, 1]", sweep=True, doc="the target Q-functions' and the Q scale's Polyak step"),
        rho=number(0.5, "(0, 1]", sweep=True, doc="each later step of a window weighs rho times less"),
        entropy_coef=number(1e-4, "[0, inf)", sweep=True, doc="the policy prior's scaled entropy bonus"),
        consistency_coef=number(20.0, "[0, inf)", sweep=True, doc="the latent consistency loss's weight"),
        reward_coef=number(0.1, "[0, inf)", sweep=True, doc="the reward loss's weight"),
        value_coef=number(0.1, "[0, inf)", sweep=True, doc="the value loss's weight"),
        termination_coef=number(1.0, "[0, inf)", sweep=True, doc="the termination loss's weight (episodic)"),
        horizon=count(3, doc="transitions per window, and the planner's look-ahead"),
        iterations=count(6, doc="MPPI iterations (two more from 20 action dimensions)"),
        num_samples=count(512, doc="action sequences the planner scores"),
        num_elites=count(64, doc="the best sequences the planner refits to"),
        num_pi_trajs=count(24, 0, doc="sequences drawn from the policy prior"),
        min_std=number(0.05, sweep=True, doc="the planner's smallest sampling spread"),
        max_std=number(2.0, sweep=True, doc="the planner's largest (and first) sampling spread"),
        temperature=number(0.5, sweep=True, doc="the MPPI weights' temperature"),
        mpc=flag(True, doc="plan at every step (False: the policy prior alone)"),
        seed_steps=count(None, optional=True, doc="uniform steps before the first updates (None: max(1000, 5 T))"),
        gamma=number(None, "(0, 1]", sweep=True, optional=True, doc="the discount (None: from the episode length T)"),
        episodic=checked_later(
            None, "True, False, or None", doc="a termination head (None: whether the env's episodes can end)"
        ),
        num_bins=count(101, doc="two-hot bins of the reward and value heads"),
        vmin=number(-10.0, "(-inf, inf)", doc="the lowest bin, in symlog units"),
        vmax=number(10.0, "(-inf, inf)", doc="the highest bin, in symlog units"),
        simnorm_dim=count(8, doc="the latent's SimNorm group size"),
        dropout=number(0.01, "[0, 1)", doc="the Q-functions' dropout"),
        enc_dim=count(None, optional=True, doc="overrides the preset's encoder width (None: the preset's)"),
        mlp_dim=count(None, optional=True, doc="overrides the preset's hidden width"),
        latent_dim=count(None, optional=True, doc="overrides the preset's latent width"),
        num_enc_layers=count(None, optional=True, doc="overrides the preset's encoder depth"),
        num_q=count(None, optional=True, doc="overrides the preset's number of Q-functions"),
    ) | ENVIRONMENT.with_defaults(
        memory=Hyperparameter(None, _no_memory, "None", doc="none: the latent is read from each observation")
    ) | ENCODER

    def __init__(self, env_id: str | Any, **settings: Any) -> None:
        super().__init__(env_id, **settings)
        s = self.settings
        size = resolved_size(s)
        buffer_size, seed_steps = self._replay(s)
        check_settings(s, size, buffer_size)
        discount, seed_steps, episodic = self._from_env(s, seed_steps)
        planner = planner_config(s, self.env_args.action_dim)
        self.env_args.one_array(f"{self.name}'s image encoder")
        arch = Architecture(
            size=size,
            observation_dim=self.env_args.observation_dim,
            action_dim=self.env_args.action_dim,
            num_bins=s.num_bins,
            simnorm_dim=s.simnorm_dim,
            dropout=float(s.dropout),
            episodic=episodic,
            image_encoder=self.network_args.encoder,
            parts=self.env_args.observation_parts,
        )
        self.agent_config = agent_config(s, arch, planner, buffer_size, discount, seed_steps)
        self.config["resolved"] = {
            "discount": discount,
            "seed_steps": seed_steps,
            "episodic": episodic,
            "iterations": planner.iterations,
            **dataclasses.asdict(size),
        }

    def first_update(self) -> tuple[str, int, int]:
        """The burst of updates on the seed data comes when the collected steps reach seed_steps."""
        seed_steps = self.agent_config.seed_steps
        return "seed_steps", seed_steps, seed_steps

    def with_replay(self, capacity: int) -> TDMPC2Config:
        return dataclasses.replace(self.agent_config, capacity=capacity)

    def _replay(self, s: Settings) -> tuple[int, int | None]:
        """The replay's size and the uniform steps before the first updates (None: the env's default)."""
        return s.buffer_size, s.seed_steps

    def _from_env(self, s: Settings, seed_steps: int | None) -> tuple[float, int, bool]:
        """The settings whose defaults the env decides: (discount, seed_steps, episodic).

        They are read once the env is built (`self.env_args`), from its episode length and
        whether its step function can terminate, as the reference's heuristics do.
        """
        episode_steps = self.env_args.max_episode_steps
        discount = discount_from_episode_length(episode_steps) if s.gamma is None else float(s.gamma)
        seed_steps = default_seed_steps(episode_steps) if seed_steps is None else seed_steps
        if seed_steps < s.n_envs * s.horizon:
            raise ValueError(
                f"seed_steps={seed_steps} leaves the replay shorter than one window of horizon={s.horizon} steps per "
                f"env copy when the first updates sample it: use at least n_envs * horizon = {s.n_envs * s.horizon}."
            )
        # An explicit False is the user's word (targets still stop at true terminals); None reads the env.
        episodic = can_terminate(self.env_args) if s.episodic is None else bool(s.episodic)
        return discount, seed_steps, episodic


def resolved_size(s: Settings) -> ModelSize:
    """The preset widths of `model_size`, with each width the user names (`WIDTHS`) replacing the preset's."""
    return dataclasses.replace(SIZES[s.model_size], **{name: s[name] for name in WIDTHS if s[name] is not None})


def check_settings(s: Settings, size: ModelSize, buffer_size: int) -> None:
    """Refuse settings the model, the planner or the replay cannot run with together, before anything compiles.

    Each keyword alone is checked by its declaration; `size` is the resolved widths, `buffer_size` the replay's.
    """
    n_envs, horizon, num_samples, num_bins, vmin, vmax = s.n_envs, s.horizon, s.num_samples, s.num_bins, s.vmin, s.vmax
    if size.num_q < 2:
        raise ValueError(f"num_q={size.num_q}: TD-MPC2 draws two different Q-functions per target; use >= 2.")
    if num_bins < 2 or not vmin < vmax:
        raise ValueError(
            f"The two-hot bins need num_bins >= 2 and vmin < vmax (symlog units), got {num_bins} over [{vmin}, {vmax}]."
        )
    if size.latent_dim % s.simnorm_dim:
        raise ValueError(
            f"latent_dim={size.latent_dim} must divide into SimNorm groups of simnorm_dim={s.simnorm_dim}: use a "
            f"multiple of {s.simnorm_dim}."
        )
    if s.num_pi_trajs > num_samples or s.num_elites > num_samples:
        raise ValueError(
            f"The planner draws num_samples={num_samples} sequences in all, num_pi_trajs={s.num_pi_trajs} of them "
            f"from the policy, and keeps num_elites={s.num_elites}: neither may exceed num_samples."
        )
    if s.min_std > s.max_std:
        raise ValueError(f"min_std={s.min_std} exceeds max_std={s.max_std}.")
    if buffer_size % n_envs or buffer_size // n_envs < horizon:
        raise ValueError(
            f"buffer_size={buffer_size} must split evenly among the n_envs={n_envs} copies' time lines, each "
            f"holding at least one window of horizon={horizon} steps: use a multiple of {n_envs} of at least "
            f"{n_envs * horizon}."
        )


def planner_config(s: Settings, action_dim: int) -> PlannerConfig:
    """The MPPI planner's settings; wide action spaces iterate twice more (the reference's heuristic)."""
    return PlannerConfig(
        horizon=s.horizon,
        iterations=s.iterations + 2 * (action_dim >= WIDE_ACTIONS),
        num_samples=s.num_samples,
        num_elites=s.num_elites,
        num_pi_trajs=s.num_pi_trajs,
        min_std=float(s.min_std),
        max_std=float(s.max_std),
        temperature=float(s.temperature),
    )


def agent_config(
    s: Settings, arch: Architecture, planner: PlannerConfig, capacity: int, discount: float, seed_steps: int
) -> TDMPC2Config:
    """The update's and the collection's settings, numbers as floats."""
    return TDMPC2Config(
        arch=arch,
        planner=planner,
        batch_size=s.batch_size,
        capacity=capacity,
        learning_rate=float(s.learning_rate),
        enc_lr_scale=float(s.enc_lr_scale),
        grad_clip_norm=float(s.grad_clip_norm),
        tau=float(s.tau),
        rho=float(s.rho),
        entropy_coef=float(s.entropy_coef),
        discount=discount,
        seed_steps=seed_steps,
        mpc=bool(s.mpc),
        vmin=float(s.vmin),
        vmax=float(s.vmax),
        coefficients=LossCoefficients(
            float(s.consistency_coef), float(s.reward_coef), float(s.value_coef), float(s.termination_coef)
        ),
    )
