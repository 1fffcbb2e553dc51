"""DreamerV3 (Hafner et al., arXiv:2301.04104v2, Nature 2025), following danijar/dreamerv3."""

from __future__ import annotations

import dataclasses
import difflib
from fractions import Fraction
from typing import Any, ClassVar

from ajax.agents.base import ENVIRONMENT, ActorCritic
from ajax.agents.DreamerV3.networks import SIZES
from ajax.agents.DreamerV3.observations import image_stages, is_image
from ajax.agents.DreamerV3.state import DreamerV3Config, LossScales
from ajax.agents.DreamerV3.train_DreamerV3 import make_train
from ajax.checks import require_counts
from ajax.environments.create import kept_observations
from ajax.extensions import LOOP_PHASES
from ajax.hyperparameters import Hyperparameter, Hyperparameters, Settings, count, flag, keywords, number
from ajax.networks.encoders import FLAT
from ajax.state import ACTION_MASK, NetworkConfig

CNN = "cnn"  # the reference's image encoder, with its image decoder


def _encoder(name: str, value: Any) -> None:
    if not isinstance(value, str) or value not in (FLAT, CNN):
        raise ValueError(
            f"{name} must be 'mlp' (the observation read as one vector) or 'cnn' (the reference's CNN on images, "
            f"with its image decoder), got {value!r}. DreamerV3 reconstructs what it reads, so the encoders of the "
            "other agents, which have no decoder, are not among them."
        )


def _model_size(name: str, value: Any) -> None:
    if not isinstance(value, str) or value not in SIZES:
        close = difflib.get_close_matches(str(value), SIZES, n=3)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        raise ValueError(f"{name} must be one of {', '.join(SIZES)}{hint}, got {value!r}.")


def _horizon(name: str, value: Any) -> None:
    require_counts(**{name: value})
    if value < 2:
        raise ValueError(f"{name}={value} makes the continue target's discount 1 - 1/horizon zero: use >= 2.")


def _recurrent_by_design(name: str, value: Any) -> None:
    if value is not None:
        raise ValueError(
            "DreamerV3 is recurrent by design: its RSSM carries a latent state through every episode, so it "
            "takes no memory=. Drop memory=; model_size sets the latent's size."
        )


class DreamerV3(ActorCritic):
    """A world model learned from replayed sequences, and an actor and critic trained in its imagination.

    Discrete and continuous actions; observations are read as one vector in symlog space, or
    with `encoder="cnn"` images through the reference's CNN and reconstructed by its image
    decoder (vectors beside them in a dict through the MLP). `model_size` fixes the widths ("1m", "12m",
    "25m", "50m", "100m", "200m", "400m": the reference's presets). Defaults are the
    reference's (danijar/dreamerv3, `configs.yaml`) for vector observations: the 1m model
    (its `dmc_proprio` size), 16 envs, sequences of 16 x 64 rows, train ratio 32 (replayed
    rows per collected row; its `dmc_proprio` preset trains at 1024), LaProp at 4e-5 with
    adaptive gradient clipping at 0.3 and a linear warm-up over `warmup_updates` (1,000), imagination over 15 steps,
    lambda 0.95, actor entropy 3e-4, the representation loss at 0.1 above 1 free nat
    (`representation_scale`, `free_nats`). `n_timesteps` counts rows, as the reference counts
    steps: an episode of n steps is n + 1 rows. docs/agents/dreamerv3.md lists where Ajax departs
    from the reference.
    """

    name: ClassVar[str] = "DreamerV3"
    continuous: ClassVar[bool | None] = None
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES
    make_train = staticmethod(make_train)
    # A world model, an actor and a critic with DreamerV3's own optimiser (LaProp, adaptive
    # gradient clipping inside it): no network the base builds, and no max_grad_norm.
    networks: ClassVar[dict[str, tuple[str, str]]] = {}
    hyperparameters: ClassVar[Hyperparameters] = keywords(
        model_size=Hyperparameter("1m", _model_size, ", ".join(map(repr, SIZES)), doc="the reference's presets"),
        train_ratio=number(32.0, doc="replayed rows per collected row"),
        batch_size=count(16, doc="sequences per update"),
        batch_length=count(64, doc="rows per sequence (each holds one more, its context)"),
        buffer_size=count(1_000_000, doc="rows over all env copies, each copy's ring a share"),
        learning_rate=number(4e-5, sweep=True, doc="LaProp's step size, for the model, the actor and the critic"),
        warmup_updates=count(1000, 0, doc="updates over which the step size rises linearly from 0"),
        imag_horizon=count(15, doc="imagined steps the actor and the critic learn from"),
        horizon=Hyperparameter(333, _horizon, "integer >= 2", doc="the continue target's discount is 1 - 1/horizon"),
        lam=number(0.95, "[0, 1]", sweep=True, doc="the lambda-returns' mixing"),
        actor_entropy=number(3e-4, "[0, inf)", sweep=True, doc="the actor's entropy bonus"),
        representation_scale=number(
            LossScales.representation, "[0, inf)", doc="the representation KL's weight (0 frees the posterior)"
        ),
        free_nats=number(DreamerV3Config.free_nats, "[0, inf)", doc="the KL terms count only above this floor"),
        encoder=Hyperparameter(
            FLAT, _encoder, "'mlp', 'cnn'", doc="'cnn': the reference's CNN and image decoder (docs/world_models.md)"
        ),
        sampled_evaluation=flag(
            False, doc="evaluate on sampled latents and actions, as the reference does (False: their modes)"
        ),
    ) | ENVIRONMENT.with_defaults(
        n_envs=16,
        memory=Hyperparameter(None, _recurrent_by_design, "None", doc="none: the RSSM carries its own latent"),
    )

    def __init__(self, env_id: str | Any, **settings: Any) -> None:
        super().__init__(env_id, **settings)
        s = self.settings
        check_replay(s)
        self.agent_config = DreamerV3Config(
            size=SIZES[s.model_size],
            batch_size=s.batch_size,
            batch_length=s.batch_length,
            train_ratio=float(s.train_ratio),
            capacity=s.buffer_size // s.n_envs,
            learning_rate=float(s.learning_rate),
            imag_horizon=s.imag_horizon,
            horizon=s.horizon,
            lam=float(s.lam),
            actor_entropy=float(s.actor_entropy),
            warmup=s.warmup_updates,
            free_nats=float(s.free_nats),
            scales=LossScales(representation=float(s.representation_scale)),
            sampled_evaluation=s.sampled_evaluation,
        )

    def with_replay(self, capacity: int) -> DreamerV3Config:
        """Each env copy's ring takes its share of the `capacity` rows."""
        return dataclasses.replace(self.agent_config, capacity=capacity // self.env_args.n_envs)

    def _behind_encoder(self, encoder: Any, normalize_observations: bool, masked: bool) -> NetworkConfig:
        """Each array of the observation keeps its shape from here on, images as uint8 in replay:
        for the reference's CNN on the images, and for an action mask, which the policy applies
        and a head of the world model learns to predict. (DreamerV3 normalises nothing.)"""
        del normalize_observations
        self._refuse_flat_readers(encoder)
        kept = kept_observations(self.env_args, normalized=False)
        read = tuple(part for part in kept.observation_parts if part.key != ACTION_MASK)
        images = {part.key: part.shape for part in read if is_image(part)}
        if encoder == CNN and not images:
            raise ValueError(
                f"DreamerV3's encoder='cnn' reads images of shape (height, width, channels), but this env's "
                f"observations have shape {kept.observation_shape}. Use encoder='mlp' for vector observations."
            )
        if encoder == FLAT and masked and images:
            raise ValueError(
                f"DreamerV3 with an action mask reads the other keys in their shapes, and the images {images} "
                "through its CNN: pass encoder='cnn'."
            )
        image_stages(read)
        self.env_args = kept
        return self.network_args


def check_replay(s: Settings) -> None:
    """Refuse a replay the env copies cannot share, or a train ratio too fine to count updates by."""
    buffer_size, n_envs, batch_length, train_ratio = s.buffer_size, s.n_envs, s.batch_length, s.train_ratio
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
    per_row = Fraction(train_ratio).limit_denominator(1_000) / (s.batch_size * batch_length)
    if per_row.numerator * per_row.denominator >= 2**31:
        raise ValueError(
            f"train_ratio={train_ratio} over sequences of {s.batch_size} x {batch_length} rows is a fraction "
            f"{per_row} too fine to count updates exactly in 32-bit integers: round train_ratio, e.g. to "
            f"{round(train_ratio)}."
        )
