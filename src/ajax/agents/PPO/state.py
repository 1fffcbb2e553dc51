"""PPO's static settings. Its state is the shared `BaseAgentState`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ajax.environments.utils import ExpertInAgentUnits
from ajax.schedule import Schedule

# A flax initialiser: (key, shape, dtype) -> the parameter's initial value.
Initializer = Callable[..., Any]


@dataclass(frozen=True)
class ProximalInitializers:
    """Initialisers that replace the defaults of PPO's and APO's networks; None keeps a default.

    `encoder_kernel_init`: every hidden layer's weights, actor and critic (orthogonal, gain
    sqrt 2). `actor_bias_init`, `critic_bias_init`: the bias of the actor's output layer
    (the Gaussian's mean or the logits) and of the critic's value layer (zeros).
    `mean_kernel_init`: the weights of the Gaussian's mean layer (orthogonal, gain 0.01).
    """

    encoder_kernel_init: Initializer | None = None
    actor_bias_init: Initializer | None = None
    critic_bias_init: Initializer | None = None
    mean_kernel_init: Initializer | None = None


@dataclass(frozen=True)
class PPOConfig:
    n_steps: int
    batch_size: int
    n_epochs: int
    clip_range: Schedule
    gamma: float
    gae_lambda: float
    ent_coef: float
    vf_coef: float
    normalize_advantage: bool
    expert: ExpertInAgentUnits | None = field(default=None, kw_only=True)  # APO's expert_policy=, evaluated beside
    # With memory: each env's rollout trains as sequences of bptt_length steps (None: the whole
    # rollout), the sequences split into n_minibatches per epoch.
    bptt_length: int | None = field(default=None, kw_only=True)
    n_minibatches: int = field(default=1, kw_only=True)
    initializers: ProximalInitializers = field(default=ProximalInitializers(), kw_only=True)
