"""DAgger's state (the shared state plus the aggregate dataset) and its static settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
from flax import struct

from ajax.environments.utils import ExpertInAgentUnits
from ajax.state import BaseAgentState


@struct.dataclass
class Labelled:
    """A visited observation and the expert's action there, in agent units: one row of D."""

    obs: jax.Array
    label: jax.Array


@struct.dataclass
class DAggerState(BaseAgentState):
    """The shared state (no critic) plus D, every labelled observation so far (a flashbax item buffer).

    D is kept apart from `collector_state.buffer_state`: it holds observations and the
    expert's labels, not the transitions a replay agent stores.
    """

    dataset: Any = None


@dataclass(frozen=True)
class DAggerConfig:
    expert: ExpertInAgentUnits
    n_steps: int
    n_gradient_steps: int
    batch_size: int
    buffer_size: int
    beta_decay: float
