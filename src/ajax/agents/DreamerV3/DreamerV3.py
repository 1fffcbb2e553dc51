"""DreamerV3 (Hafner et al., arXiv:2301.04104v2, Nature 2025), following danijar/dreamerv3."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, ClassVar

from ajax.agents.base import ActorCritic, run_config, shared_arguments
from ajax.agents.DreamerV3.networks import SIZES
from ajax.agents.DreamerV3.state import DreamerV3Config, LossScales
from ajax.agents.DreamerV3.train_DreamerV3 import make_train
from ajax.checks import require_counts, require_finite_positive, require_in_interval
from ajax.extensions import LOOP_PHASES, Extension


class DreamerV3(ActorCritic):
    """A world model learned from replayed sequences, and an actor and critic trained in its imagination.

    Discrete and continuous actions; observations are flattened vectors (images too, as
    everywhere in Ajax), read in symlog space. `model_size` fixes the widths ("1m", "12m",
    "25m", "50m", "100m", "200m", "400m": the reference's presets). Defaults are the
    reference's (danijar/dreamerv3, `configs.yaml`) for vector observations: the 1m model
    (its `dmc_proprio` size), 16 envs, sequences of 16 x 64 rows, train ratio 32 (replayed
    rows per collected row; its `dmc_proprio` preset trains at 1024), LaProp at 4e-5 with
    adaptive gradient clipping at 0.3 and a linear warm-up over `warmup_updates` (1,000), imagination over 15 steps,
    lambda 0.95, actor entropy 3e-4, the representation loss at 0.1 above 1 free nat
    (`representation_scale`, `free_nats`). `n_timesteps` counts rows, as the reference counts
    steps: an episode of n steps is n + 1 rows. docs/agents.md lists where Ajax departs
    from the reference.
    """

    name: ClassVar[str] = "DreamerV3"
    continuous: ClassVar[bool | None] = None
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES
    make_train = staticmethod(make_train)
    sweepable: ClassVar[frozenset[str]] = frozenset(
        {
            "learning_rate",
            "lam",
            "actor_entropy",
        }
    )

    def __init__(
        self,
        env_id: str | Any,
        model_size: str = "1m",
        n_envs: int = 16,
        train_ratio: float = 32.0,
        batch_size: int = 16,
        batch_length: int = 64,
        buffer_size: int = 1_000_000,
        learning_rate: float = 4e-5,
        warmup_updates: int = 1000,
        imag_horizon: int = 15,
        horizon: int = 333,
        lam: float = 0.95,
        actor_entropy: float = 3e-4,
        representation_scale: float = LossScales.representation,
        free_nats: float = DreamerV3Config.free_nats,
        episode_length: int | None = None,
        action_repeat: int = 1,
        env_params: Any = None,
        extensions: Sequence[Extension] = (),
        memory: Any = None,
    ) -> None:
        self.config = run_config(locals(), self.name)
        if memory is not None:
            raise ValueError(
                "DreamerV3 is recurrent by design: its RSSM carries a latent state through every episode, so it "
                "takes no memory=. Drop memory=; model_size sets the latent's size."
            )
        if not isinstance(model_size, str) or model_size not in SIZES:
            close = difflib.get_close_matches(str(model_size), SIZES, n=3)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            raise ValueError(f"model_size must be one of {', '.join(SIZES)}{hint}, got {model_size!r}.")
        require_counts(
            n_envs=n_envs,
            batch_size=batch_size,
            batch_length=batch_length,
            buffer_size=buffer_size,
            imag_horizon=imag_horizon,
            horizon=horizon,
        )
        require_counts(0, warmup_updates=warmup_updates)
        require_finite_positive(learning_rate=learning_rate, train_ratio=train_ratio)
        require_in_interval("[0, 1]", lam=lam)
        require_in_interval(
            "[0, inf)", actor_entropy=actor_entropy, representation_scale=representation_scale, free_nats=free_nats
        )
        if horizon < 2:
            raise ValueError(f"horizon={horizon} makes the continue target's discount 1 - 1/horizon zero: use >= 2.")
        if buffer_size % n_envs:
            raise ValueError(
                f"buffer_size={buffer_size} rows must divide among the n_envs={n_envs} copies' rings: use a multiple "
                f"of {n_envs}, e.g. {buffer_size - buffer_size % n_envs or n_envs}."
            )
        if buffer_size // n_envs < batch_length + 1:
            raise ValueError(
                f"buffer_size={buffer_size} leaves each of the {n_envs} envs a ring of {buffer_size // n_envs} rows, "
                f"too few for one sequence of batch_length + 1 = {batch_length + 1}: raise buffer_size to at least "
                f"{(batch_length + 1) * n_envs}."
            )
        per_row = Fraction(train_ratio).limit_denominator(1_000) / (batch_size * batch_length)
        if per_row.numerator * per_row.denominator >= 2**31:
            raise ValueError(
                f"train_ratio={train_ratio} over sequences of {batch_size} x {batch_length} rows is a fraction "
                f"{per_row} too fine to count updates exactly in 32-bit integers: round train_ratio, e.g. to "
                f"{round(train_ratio)}."
            )
        super().__init__(
            **shared_arguments(
                self.config,
                actor_learning_rate=learning_rate,
                critic_learning_rate=learning_rate,
                actor_architecture=(),
                critic_architecture=(),
                max_grad_norm=None,  # adaptive gradient clipping, inside LaProp
                normalize_observations=False,  # symlog inputs instead
                normalize_rewards=False,  # two-hot rewards over symlog bins instead
                memory=None,
            )
        )
        self.agent_config = DreamerV3Config(
            size=SIZES[model_size],
            batch_size=batch_size,
            batch_length=batch_length,
            train_ratio=float(train_ratio),
            capacity=buffer_size // n_envs,
            learning_rate=float(learning_rate),
            imag_horizon=imag_horizon,
            horizon=horizon,
            lam=float(lam),
            actor_entropy=float(actor_entropy),
            warmup=warmup_updates,
            free_nats=float(free_nats),
            scales=LossScales(representation=float(representation_scale)),
        )
