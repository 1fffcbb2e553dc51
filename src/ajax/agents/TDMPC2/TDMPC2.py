"""TD-MPC2 (Hansen, Su, Wang, ICLR 2024, arXiv:2310.16828), following nicklashansen/tdmpc2."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

from ajax.agents.base import ActorCritic, run_config, shared_arguments
from ajax.agents.TDMPC2.core import default_seed_steps, discount_from_episode_length
from ajax.agents.TDMPC2.networks import SIZES, Architecture, ModelSize
from ajax.agents.TDMPC2.planner import PlannerConfig
from ajax.agents.TDMPC2.state import LossCoefficients, TDMPC2Config
from ajax.agents.TDMPC2.train_TDMPC2 import make_train
from ajax.checks import require_counts, require_finite_positive, require_in_interval
from ajax.environments.terminations import can_terminate
from ajax.extensions import LOOP_PHASES, Extension

WIDE_ACTIONS = 20  # from this many action dimensions the planner iterates twice more (the reference's heuristic)


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
    function. docs/agents.md lists where Ajax departs from the reference.
    """

    name: ClassVar[str] = "TDMPC2"
    continuous: ClassVar[bool | None] = True
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES
    make_train = staticmethod(make_train)
    sweepable: ClassVar[frozenset[str]] = frozenset(
        {
            "learning_rate",
            "enc_lr_scale",
            "grad_clip_norm",
            "tau",
            "rho",
            "entropy_coef",
            "consistency_coef",
            "reward_coef",
            "value_coef",
            "termination_coef",
            "min_std",
            "max_std",
            "temperature",
            "gamma",
        }
    )

    def __init__(
        self,
        env_id: str | Any,
        model_size: int = 5,
        n_envs: int = 1,
        batch_size: int = 256,
        buffer_size: int = 1_000_000,
        learning_rate: float = 3e-4,
        enc_lr_scale: float = 0.3,
        grad_clip_norm: float = 20.0,
        tau: float = 0.01,
        rho: float = 0.5,
        entropy_coef: float = 1e-4,
        consistency_coef: float = 20.0,
        reward_coef: float = 0.1,
        value_coef: float = 0.1,
        termination_coef: float = 1.0,
        horizon: int = 3,
        iterations: int = 6,
        num_samples: int = 512,
        num_elites: int = 64,
        num_pi_trajs: int = 24,
        min_std: float = 0.05,
        max_std: float = 2.0,
        temperature: float = 0.5,
        mpc: bool = True,
        seed_steps: int | None = None,
        gamma: float | None = None,
        episodic: bool | None = None,
        num_bins: int = 101,
        vmin: float = -10.0,
        vmax: float = 10.0,
        simnorm_dim: int = 8,
        dropout: float = 0.01,
        enc_dim: int | None = None,
        mlp_dim: int | None = None,
        latent_dim: int | None = None,
        num_enc_layers: int | None = None,
        num_q: int | None = None,
        episode_length: int | None = None,
        action_repeat: int = 1,
        env_params: Any = None,
        extensions: Sequence[Extension] = (),
        memory: Any = None,
    ) -> None:
        self.config = run_config(locals(), self.name)
        if memory is not None:
            raise ValueError(
                "TDMPC2 takes no memory=: its latent is read from each observation alone, as the reference's is. "
                "Drop memory=."
            )
        size = resolved_size(
            model_size,
            enc_dim=enc_dim,
            mlp_dim=mlp_dim,
            latent_dim=latent_dim,
            num_enc_layers=num_enc_layers,
            num_q=num_q,
        )
        check_settings(self.config, size)
        super().__init__(
            **shared_arguments(
                self.config,
                actor_learning_rate=learning_rate,
                critic_learning_rate=learning_rate,
                actor_architecture=(),
                critic_architecture=(),
                max_grad_norm=grad_clip_norm,
                normalize_observations=False,
                normalize_rewards=False,  # two-hot rewards over symlog bins instead
                memory=None,
            )
        )
        discount, seed_steps, episodic = self._from_env(gamma, seed_steps, episodic, n_envs, horizon)
        planner = planner_config(self.config, self.env_args.action_dim)
        self.agent_config = TDMPC2Config(
            arch=Architecture(
                size=size,
                observation_dim=self.env_args.observation_dim,
                action_dim=self.env_args.action_dim,
                num_bins=num_bins,
                simnorm_dim=simnorm_dim,
                dropout=float(dropout),
                episodic=episodic,
            ),
            planner=planner,
            batch_size=batch_size,
            capacity=buffer_size,
            learning_rate=float(learning_rate),
            enc_lr_scale=float(enc_lr_scale),
            grad_clip_norm=float(grad_clip_norm),
            tau=float(tau),
            rho=float(rho),
            entropy_coef=float(entropy_coef),
            discount=discount,
            seed_steps=seed_steps,
            mpc=bool(mpc),
            vmin=float(vmin),
            vmax=float(vmax),
            coefficients=LossCoefficients(
                float(consistency_coef), float(reward_coef), float(value_coef), float(termination_coef)
            ),
        )
        self.config["resolved"] = {
            "discount": discount,
            "seed_steps": seed_steps,
            "episodic": episodic,
            "iterations": planner.iterations,
            **dataclasses.asdict(size),
        }

    def _from_env(
        self, gamma: float | None, seed_steps: int | None, episodic: bool | None, n_envs: int, horizon: int
    ) -> tuple[float, int, bool]:
        """The settings whose defaults the env decides: (discount, seed_steps, episodic).

        They are read once the env is built (`self.env_args`), from its episode length and
        whether its step function can terminate, as the reference's heuristics do.
        """
        episode_steps = self.env_args.max_episode_steps
        discount = discount_from_episode_length(episode_steps) if gamma is None else float(gamma)
        seed_steps = default_seed_steps(episode_steps) if seed_steps is None else seed_steps
        require_counts(seed_steps=seed_steps)
        if seed_steps < n_envs * horizon:
            raise ValueError(
                f"seed_steps={seed_steps} leaves the replay shorter than one window of horizon={horizon} steps per "
                f"env copy when the first updates sample it: use at least n_envs * horizon = {n_envs * horizon}."
            )
        # An explicit False is the user's word (targets still stop at true terminals); None reads the env.
        episodic = can_terminate(self.env_args) if episodic is None else bool(episodic)
        return discount, seed_steps, episodic


def resolved_size(model_size: int, **overrides: int | None) -> ModelSize:
    """The preset widths of `model_size`, with each width the user names in `overrides` replacing the preset's."""
    if isinstance(model_size, bool) or model_size not in SIZES:
        sizes = ", ".join(map(str, SIZES))
        raise ValueError(f"model_size must be one of {sizes} (millions of parameters), got {model_size!r}.")
    return dataclasses.replace(SIZES[model_size], **{k: v for k, v in overrides.items() if v is not None})


def check_settings(settings: dict[str, Any], size: ModelSize) -> None:
    """Refuse, before anything is built, settings the model, the planner or the replay cannot run with.

    `settings` is the constructor's run config (its arguments by name), `size` the resolved widths.
    """
    n_envs, horizon, buffer_size = settings["n_envs"], settings["horizon"], settings["buffer_size"]
    num_samples, num_elites, num_pi_trajs = (
        settings["num_samples"],
        settings["num_elites"],
        settings["num_pi_trajs"],
    )
    num_bins, vmin, vmax, simnorm_dim = (
        settings["num_bins"],
        settings["vmin"],
        settings["vmax"],
        settings["simnorm_dim"],
    )
    min_std, max_std = settings["min_std"], settings["max_std"]
    require_counts(
        n_envs=n_envs,
        batch_size=settings["batch_size"],
        buffer_size=buffer_size,
        horizon=horizon,
        iterations=settings["iterations"],
        num_samples=num_samples,
        num_elites=num_elites,
        num_bins=num_bins,
        simnorm_dim=simnorm_dim,
        **dataclasses.asdict(size),
    )
    require_counts(0, num_pi_trajs=num_pi_trajs)
    positive = ("learning_rate", "enc_lr_scale", "grad_clip_norm", "min_std", "max_std", "temperature")
    require_finite_positive(**{name: settings[name] for name in positive})
    require_in_interval("(0, 1]", tau=settings["tau"], rho=settings["rho"])
    require_in_interval("[0, 1)", dropout=settings["dropout"])
    require_in_interval("(-inf, inf)", vmin=vmin, vmax=vmax)
    coefficients = ("entropy_coef", "consistency_coef", "reward_coef", "value_coef", "termination_coef")
    require_in_interval("[0, inf)", **{name: settings[name] for name in coefficients})
    if size.num_q < 2:
        raise ValueError(f"num_q={size.num_q}: TD-MPC2 draws two different Q-functions per target; use >= 2.")
    if num_bins < 2 or not vmin < vmax:
        raise ValueError(
            f"The two-hot bins need num_bins >= 2 and vmin < vmax (symlog units), got {num_bins} over [{vmin}, {vmax}]."
        )
    if size.latent_dim % simnorm_dim:
        raise ValueError(
            f"latent_dim={size.latent_dim} must divide into SimNorm groups of simnorm_dim={simnorm_dim}: use a "
            f"multiple of {simnorm_dim}."
        )
    if num_pi_trajs > num_samples or num_elites > num_samples:
        raise ValueError(
            f"The planner draws num_samples={num_samples} sequences in all, num_pi_trajs={num_pi_trajs} of them "
            f"from the policy, and keeps num_elites={num_elites}: neither may exceed num_samples."
        )
    if min_std > max_std:
        raise ValueError(f"min_std={min_std} exceeds max_std={max_std}.")
    if buffer_size % n_envs or buffer_size // n_envs < horizon:
        raise ValueError(
            f"buffer_size={buffer_size} must split evenly among the n_envs={n_envs} copies' time lines, each "
            f"holding at least one window of horizon={horizon} steps: use a multiple of {n_envs} of at least "
            f"{n_envs * horizon}."
        )


def planner_config(settings: dict[str, Any], action_dim: int) -> PlannerConfig:
    """The MPPI planner's settings; wide action spaces iterate twice more (the reference's heuristic)."""
    return PlannerConfig(
        horizon=settings["horizon"],
        iterations=settings["iterations"] + 2 * (action_dim >= WIDE_ACTIONS),
        num_samples=settings["num_samples"],
        num_elites=settings["num_elites"],
        num_pi_trajs=settings["num_pi_trajs"],
        min_std=float(settings["min_std"]),
        max_std=float(settings["max_std"]),
        temperature=float(settings["temperature"]),
    )
