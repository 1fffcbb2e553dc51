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
    # Brax's settings (docs/brax.md), each at the value that leaves PPO as it was.
    reward_scaling: float = field(default=1.0, kw_only=True)  # rewards times this in GAE and the targets
    # Segments of unroll_length steps: GAE bootstraps at each segment's end, minibatches are whole
    # segments, each minibatch's advantages computed from the critic as it stands (None: whole rollouts).
    unroll_length: int | None = field(default=None, kw_only=True)
    bootstrap_on_truncation: bool = field(default=True, kw_only=True)  # False: a time limit's step gets delta 0
    advantage_estimator: str = field(default="gae", kw_only=True)  # or "vtrace", Brax's
    policy_distribution: str = field(default="gaussian", kw_only=True)  # or "tanh_gaussian", Brax's
    # One Adam over both networks: their gradients' global norm clipped together at joint_max_grad_norm
    # (the networks' own optimisers then do not clip).
    shared_optimizer: bool = field(default=False, kw_only=True)
    joint_max_grad_norm: float | None = field(default=None, kw_only=True)
