"""The agent state pytree and the frozen configuration dataclasses.

Everything that changes during training lives in one flax dataclass, so a run is one
`lax.scan` (the state is its carry), seeds are one `vmap` (the state gains a leading
axis) and a checkpoint is that pytree saved. Static settings are frozen, hashable
dataclasses passed as static arguments: they fix shapes and Python-level branches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
from flax import struct
from flax.training.train_state import TrainState


class LoopTrainState(TrainState):
    """A flax TrainState with target parameters, for the agents that bootstrap from them."""

    target_params: Any = None


@struct.dataclass
class CollectorState:
    """What collection carries from one environment step to the next.

    `timestep` counts environment steps over all parallel environments: one tick on four
    environments adds four. It is created from constants only, so under the seed vmap it
    stays unbatched and the gates that read it remain real branches.
    """

    env_state: Any
    last_obs: jax.Array
    timestep: jax.Array
    episodic_return: jax.Array  # the running return of each env's current episode
    last_episodic_return: jax.Array  # each env's last finished return, NaN before one
    buffer_state: Any = None
    expert_state: Any = None
    normalizer: Any = None  # obs_norm.Normalizer: running observation/reward statistics, when on
    episode_steps: jax.Array | None = None  # each env's steps in its episode, when an extension reads them
    memory: Any = None  # networks.recurrent.MemoryCarries: a recurrent agent's carries and episode starts


@struct.dataclass
class BaseAgentState:
    """The whole run of one seed: every array that changes during training."""

    rng: jax.Array
    actor_state: LoopTrainState
    critic_state: LoopTrainState | None
    collector_state: CollectorState
    eval_rng: jax.Array
    n_updates: jax.Array
    n_logs: jax.Array
    ext_state: Any = ()
    last_rollout: Any = None
    nonfinite: Any = None  # nonfinite.NonFinite: when the run's numbers first went non-finite

    removed_fields: ClassVar[frozenset[str]] = frozenset()
    added_fields: ClassVar[frozenset[str]] = frozenset()

    def next_keys(self, n: int) -> tuple[BaseAgentState, tuple[jax.Array, ...]]:
        """Split the training key: the new state and `n` fresh keys."""
        keys = jax.random.split(self.rng, n + 1)
        return self.replace(rng=keys[0]), tuple(keys[1:])


# The names of the vmaps over seeds and over env copies: a value summed over both (e.g. "did
# any episode end?") is the same for the whole program, so a branch on it stays a branch.
SEED_AXIS = "seed"
ENV_AXIS = "envs"


@dataclass(frozen=True)
class NormalizationConfig:
    """Which normalisations collection applies; `gamma` is the return's discount for the reward scale.

    Declared here with the other static settings; the statistics and their updates live in
    `ajax.environments.obs_norm`.
    """

    observations: bool = False
    rewards: bool = False
    gamma: float = 0.99
    clip_observations: float = 10.0
    clip_rewards: float = 10.0
    # SimbaV2's bound on the scaled return: the reward scale is also at least max|G| / return_bound,
    # so every scaled return fits a categorical critic's support of [-bound, bound]. None: off.
    return_bound: float | None = None
    # Collection gathers the statistics and keeps raw values; the agent normalises each replayed
    # batch and each observation it acts on with the statistics as they stand (SimbaV2's reference).
    per_batch: bool = False

    @property
    def enabled(self) -> bool:
        return self.observations or self.rewards


# The key of a dict observation that says which discrete actions are allowed (Jumanji's convention).
ACTION_MASK = "action_mask"
# What a forbidden action's logit or Q-value becomes: its probability exp(-1e9) is 0 and no
# allowed value is below it, while 0 * MASKED stays 0 where a terminal's bootstrap is dropped
# (an infinity would make that NaN, and the policy's entropy with it).
MASKED = -1e9


def allowed_actions(mask: jax.Array) -> jax.Array:
    """The actions an action mask (..., n_actions) allows; every action where it allows none.

    A mask that forbids everything leaves no right choice, and masking every action would pick
    one silently: a greedy argmax over values all at `MASKED` takes the first action, and a
    Q-learning target bootstraps from gamma * MASKED. The agent acts and bootstraps there as
    if the observation had no mask; collection counts such steps and `train` reports them
    (`ajax.nonfinite.NoAllowedAction`).
    """
    mask = jnp.asarray(mask, bool)
    return mask | ~jnp.any(mask, axis=-1, keepdims=True)


@dataclass(frozen=True)
class ObservationPart:
    """One array of an observation as an agent keeps it behind an image encoder, or beside an
    action mask (which the policy applies and no network reads).

    `key` names it in a dict observation (None: the observation is this one array); `dtype`
    is how it is stored (uint8 for binary and 8-bit images, bool for a mask); `scale` what a
    stored unit is worth to the networks (1/255 for 8-bit pixels).
    """

    key: str | None
    shape: tuple[int, ...]
    dtype: str = "float32"
    scale: float = 1.0


def unpacked(by_key: dict[str | None, Any]) -> Any:
    """A plain observation's one value, or a dict observation's values by key."""
    return by_key[None] if None in by_key else by_key


@dataclass(frozen=True)
class EnvironmentConfig:
    """The environment an agent trains on, and what its spaces imply."""

    env: Any
    env_params: Any
    n_envs: int
    continuous: bool
    observation_dim: int
    action_dim: int  # the number of actions when discrete
    action_low: tuple[float, ...] = ()
    action_high: tuple[float, ...] = ()
    max_episode_steps: int = 1000
    normalization: NormalizationConfig = NormalizationConfig()
    # Behind an image encoder, or with an action mask, each array of an observation keeps its
    # shape (binary or 8-bit images kept as uint8, a mask as bool); None: one flat float32 vector
    # of observation_dim, what every agent reads by default.
    observation_parts: tuple[ObservationPart, ...] | None = None

    @property
    def observation_shape(self) -> tuple[int, ...] | dict[str, tuple[int, ...]]:
        """One observation's shape as collection hands it to the agent and replay keeps it: a dict's by key."""
        if self.observation_parts is None:
            return (self.observation_dim,)
        return unpacked({part.key: part.shape for part in self.observation_parts})

    @property
    def action_masked(self) -> bool:
        """Whether observations carry an action mask the agent applies (their `ACTION_MASK` key)."""
        return any(part.key == ACTION_MASK for part in self.observation_parts or ())

    def one_array(self, reader: str) -> ObservationPart | None:
        """The one array observations are kept as (None: the default's flat vector), or the
        refusal, naming the keys, for `reader`, which cannot take a dict observation."""
        parts = self.observation_parts
        if parts is None or len(parts) == 1:
            return None if parts is None else parts[0]
        raise ValueError(
            f"{reader} reads one observation array; {self.env.name} observes a dict "
            f"({', '.join(str(part.key) for part in parts)}). Join the keys into one image, or use encoder='mlp' "
            "(the keys read as one flat vector)."
        )

    def observation_zeros(self, *batch: int) -> jax.Array | dict[str, jax.Array]:
        """Zeros as observations are kept, after `batch` leading axes: what networks and buffers start from."""
        if self.observation_parts is None:
            return jnp.zeros((*batch, self.observation_dim), jnp.float32)
        return unpacked({part.key: jnp.zeros((*batch, *part.shape), part.dtype) for part in self.observation_parts})


@dataclass(frozen=True)
class NetworkConfig:
    """Hidden layers as alternating width and activation strings, e.g. ("64", "tanh", "64", "tanh").

    The actor's may instead be a `PIDPolicy` (`ajax.modules.pid_actor`, a layer above this
    module, hence `Any` here): the agent builds a PID actor on the PID terms its env then carries.
    Either may be a `SimbaV2Network` (`ajax.networks.hyperspherical`) on the agents that build one.
    """

    actor_architecture: tuple[str, ...] | Any
    critic_architecture: tuple[str, ...] | Any
    memory: Any = None  # networks.memory.MemoryConfig: encoder -> memory -> head when set
    # An image encoder (a flax module, `ajax.networks.encoders`) before every network, reading
    # the observation parts the env config keeps; None: networks read flat vectors.
    encoder: Any = None


@dataclass(frozen=True)
class OptimizerConfig:
    """One optimiser per trained network; `max_grad_norm=None` leaves gradients unclipped.

    `learning_rate` is a number or a schedule (`ajax.schedule`), which optax calls with the
    optimiser's count of updates.
    """

    learning_rate: float | Callable[[jax.Array], jax.Array]
    max_grad_norm: float | None = None
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8
