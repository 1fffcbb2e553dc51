"""`ActorCritic`: what every agent does at construction and in `train()`.

Construction builds the environment, freezes the static settings and wraps the
extensions, rejecting silent misconfigurations before anything compiles. `train()` binds
the agent's `make_train` to the run's settings, jits the run of one seed, vmaps it over
the seeds, waits, and returns `(state, evaluations)`: every leaf with a leading seed axis.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from ajax import nonfinite
from ajax.agents.loop import RunSettings
from ajax.agents.made_by import action_difference, memory_difference
from ajax.agents.updates_owed import check_gradient_steps
from ajax.buffers.growth import grown, held_capacity, is_replay, leaves_by_path
from ajax.checks import is_count, require_counts
from ajax.devices import ONE_DEVICE, Placement, collection_paused, jit_run, key_shape, seed_keys
from ajax.environments.create import check_action_space, has_action_mask, kept_observations, prepare_env
from ajax.environments.host import host_errors
from ajax.environments.interaction import REPLAY_FIELDS
from ajax.environments.obs_norm import NormalizationConfig
from ajax.environments.pid_terms import PIDTerms
from ajax.environments.utils import ExpertInAgentUnits
from ajax.extensions import LOOP_PHASES, Extension, ExtensionStack
from ajax.footprint import check_fits
from ajax.hyperparameters import (
    Hyperparameter,
    Hyperparameters,
    Settings,
    checked_later,
    count,
    flag,
    keywords,
    learning_rate,
    number,
)
from ajax.logging.wandb_logging import LoggingConfig
from ajax.logging.worker import recording, write_rows
from ajax.modules.pid_actor import PIDPolicy
from ajax.networks.encoders import FLAT, build_encoder, check_encoder, flat_keys
from ajax.networks.encoders import NAMES as ENCODER_NAMES
from ajax.networks.hyperspherical import SimbaV2Network
from ajax.networks.memory import MemoryConfig
from ajax.networks.mlp import parse_architecture
from ajax.state import ACTION_MASK, SEED_AXIS, BaseAgentState, EnvironmentConfig, NetworkConfig, OptimizerConfig

# The keywords every agent takes for its environment, its extensions and its memory.
ENVIRONMENT = keywords(
    n_envs=count(1, doc="environment copies stepped together in every seed"),
    episode_length=count(None, optional=True, doc="the environment's time limit (None: the env's own)"),
    action_repeat=count(1, doc="env steps each action is held for"),
    env_params=checked_later(None, "the env's params, or None", doc="what the env steps with (None: its defaults)"),
    extensions=checked_later((), "a sequence of Extension", doc="research features in the loop (docs/extensions.md)"),
    memory=checked_later(None, "MemoryConfig, its dict, or None", doc="recurrent networks (docs/memory.md)"),
)
# Running normalisation in the agent state, for the agents whose inputs and losses allow it.
NORMALIZATION = keywords(
    normalize_observations=flag(False, doc="observations shifted and scaled by running statistics"),
    normalize_rewards=flag(False, doc="rewards scaled by the running spread of the discounted return"),
)
ARCHITECTURE = "layer strings, e.g. ('64', 'tanh')"
# What an architecture keyword adds to its accepts text when the agent builds SimbaV2's networks;
# `builds_hyperspherical` reads the capability back from it, so the tables and the checks agree.
HYPERSPHERICAL = "or SimbaV2Network"
# What reads each observation before an agent's own layers, for the agents that take images.
ENCODER = keywords(
    encoder=Hyperparameter(
        FLAT,
        check_encoder,
        ", ".join(map(repr, ENCODER_NAMES)) + ", a flax module, or a dict of those by observation key",
        doc="what reads each observation first: 'mlp' (a flat vector) or an image encoder (docs/observations.md)",
    )
)


def two_networks(
    rates: Any,
    architecture: Sequence[str],
    max_grad_norm: float | None = None,
    *,
    pid: bool = False,
    hyperspherical: bool = False,
) -> Hyperparameters:
    """An actor's and a critic's step sizes and hidden layers (the same by default), and the clip of both."""
    critic_accepts = f"{ARCHITECTURE}, {HYPERSPHERICAL}" if hyperspherical else ARCHITECTURE
    actor_accepts = critic_accepts + (", or PIDPolicy" if pid else "")
    actor_rate, critic_rate = rates if isinstance(rates, tuple) else (rates, rates)
    actor_layers, critic_layers = architecture if isinstance(architecture[0], tuple) else (architecture,) * 2
    return keywords(
        actor_learning_rate=learning_rate(actor_rate, doc="the actor's Adam step size"),
        critic_learning_rate=learning_rate(critic_rate, doc="the critic's Adam step size"),
        actor_architecture=checked_later(tuple(actor_layers), actor_accepts, doc="the actor's hidden layers"),
        critic_architecture=checked_later(tuple(critic_layers), critic_accepts, doc="the critic's hidden layers"),
        max_grad_norm=gradient_clip(max_grad_norm),
    )


def layer_strings_only(hyperparameters: Hyperparameters) -> Hyperparameters:
    """A parent's keywords with its actor and critic taking layer strings alone: for a descendant
    whose networks have no hyperspherical form (TQC's quantile critics, CrossQ's batch norm)."""
    entries = {
        name: dataclasses.replace(entry, accepts=entry.accepts.replace(f", {HYPERSPHERICAL}", ""))
        for name, entry in hyperparameters.declared.items()
        if name in ("actor_architecture", "critic_architecture")
    }
    return hyperparameters.with_defaults(**entries)


def builds_hyperspherical(agent: type[ActorCritic]) -> bool:
    """Whether the agent's critic may be a SimbaV2Network, as its keyword declares."""
    entry = agent.hyperparameters.declared.get("critic_architecture")
    return entry is not None and HYPERSPHERICAL in entry.accepts


def one_network(rate: Any, architecture: Sequence[str], max_grad_norm: float | None = None) -> Hyperparameters:
    """The step size and hidden layers of an agent's only network, and the clip of its gradients."""
    return keywords(
        learning_rate=learning_rate(rate),
        architecture=checked_later(tuple(architecture), ARCHITECTURE, doc="the network's hidden layers"),
        max_grad_norm=gradient_clip(max_grad_norm),
    )


# When a replay agent updates, in Stable-Baselines3's terms (`UpdatesOwed.replay`).
REPLAY_SCHEDULE = keywords(
    train_freq=count(1, doc="steps per env copy collected in each round"),
    gradient_steps=Hyperparameter(
        1, check_gradient_steps, "integer >= 1, or -1", doc="updates after each round (-1: one per env step collected)"
    ),
)


# The fewest transitions a replay is allocated for a run that puts fewer in it: runs shorter
# than this share one replay shape, and no replay falls below a batch or a sequence window.
REPLAY_FLOOR = 2**14

# The discount, for the agents that discount.
DISCOUNT = number(0.99, "(0, 1]", sweep=True, doc="the discount")


def replay(buffer_size: int, batch_size: int, learning_starts: int) -> Hyperparameters:
    """A replay agent's buffer, minibatch and warm-up, then when it updates (`REPLAY_SCHEDULE`)."""
    return (
        keywords(
            buffer_size=count(buffer_size, doc="transitions the replay holds"),
            batch_size=count(batch_size, doc="transitions per minibatch"),
            learning_starts=count(learning_starts, 0, doc="uniform random actions before this step, updates after"),
        )
        | REPLAY_SCHEDULE
    )


# The keywords declared alike by the agents that take them, tabled once on the agents page.
SHARED_KEYWORDS = ENVIRONMENT | NORMALIZATION | REPLAY_SCHEDULE | ENCODER


def gradient_clip(default: float | None) -> Hyperparameter:
    return number(
        default, sweep=True, optional=True, doc="clip the gradients' global norm before Adam (None: unclipped)"
    )


def field_names(batch_class: type) -> frozenset[str]:
    """The fields of an agent's batch class, for its `batch_fields`."""
    return frozenset(field.name for field in dataclasses.fields(batch_class))


def expert_in_agent_units(expert_policy: Callable[..., Any] | None, env_args: EnvironmentConfig) -> Any:
    """An agent's `expert_policy=` read in agent units, once, at construction (None without one)."""
    if expert_policy is None:
        return None
    return ExpertInAgentUnits.for_env(expert_policy, env_args, "expert_policy=")


def shallow_fields(config: Any) -> dict[str, Any]:
    """A config dataclass's fields by name, values as they are (`asdict` would unpack an expert)."""
    return {field.name: getattr(config, field.name) for field in dataclasses.fields(config)}


def check_train_arguments(
    n_timesteps: Any, num_episode_test: Any, logging_config: Any, initial_state: Any, total_timesteps: Any
) -> None:
    """Refuse, before anything is built, a `train` argument of the wrong kind, naming it."""
    require_counts(0, n_timesteps=n_timesteps)
    require_counts(num_episode_test=num_episode_test)
    if total_timesteps is not None:
        require_counts(total_timesteps=total_timesteps)
    if logging_config is not None and not isinstance(logging_config, LoggingConfig):
        raise TypeError(
            f"logging_config must be a LoggingConfig (ajax.logging.wandb_logging) or None, got "
            f"{type(logging_config).__name__}."
        )
    if initial_state is not None and not isinstance(initial_state, BaseAgentState):
        raise TypeError(
            f"initial_state must be a state an agent's train returned (or restore_into read), got "
            f"{type(initial_state).__name__}."
        )


def checked_seeds(seed: int | Sequence[int]) -> list[int]:
    """The seeds as a list of distinct integers in [0, 2**32): a string or a float is refused, not read."""
    many = not is_count(seed) and isinstance(seed, Sequence | np.ndarray) and not isinstance(seed, str | bytes)
    seeds = list(seed) if many else [seed]
    if not seeds:
        raise ValueError("seed= needs at least one seed, e.g. seed=0 or seed=[0, 1, 2].")
    for value in seeds:
        if not is_count(value) or not 0 <= value < 2**32:
            raise ValueError(f"seed= takes integers in [0, 2**32) or a list of them, got {value!r} in {seed!r}.")
    if len(set(map(int, seeds))) < len(seeds):
        raise ValueError(f"seed= repeats a seed ({list(seed)}): repeated seeds train the same run twice.")
    return [int(value) for value in seeds]


def _kept_for(encoder: Any) -> str:
    """Why observations keep their shapes: an image encoder, or with encoder='mlp' an action mask."""
    return "an action mask" if encoder == FLAT else "an image encoder"


def _agents_that(has: Callable[[type[ActorCritic]], bool]) -> str:
    """The agents with a capability, by name, for a refusal to point at.

    Read from ActorCritic's loaded subclasses rather than the registry, which imports every
    agent and so sits above this module.
    """
    found, pending = set(), [ActorCritic]
    while pending:
        agent = pending.pop()
        pending.extend(agent.__subclasses__())
        if has(agent):
            found.add(agent.name)
    return ", ".join(sorted(found))


def shared_counters(state: BaseAgentState) -> dict[str, int]:
    """The counters every seed of a state must share; a mismatch is refused."""
    counters = {
        "timestep": np.asarray(state.collector_state.timestep),
        "n_logs": np.asarray(state.n_logs),
        "n_updates": np.asarray(state.n_updates),
    }
    # Every seed writes its replay at one shared position (ajax.lockstep), so the positions too.
    for path, leaf in leaves_by_path(state).items():
        if is_replay(path) and path.endswith(".current_index"):
            counters[f"replay position ({path})"] = np.asarray(leaf)
    for name, values in counters.items():
        if values.ndim != 1 or np.any(values != values[0]):
            raise ValueError(
                f"Every seed of initial_state must stand at the same {name}; got {values.tolist()}. "
                "Resume from the state one train() call returned, for all its seeds."
            )
    return {name: int(values[0]) for name, values in counters.items()}


# Where a leaf sits in the state and what a difference there means, in the order a mismatch is
# reported: an env changes the networks' input too, so the env is named before the networks.
_STATE_PARTS = (
    ("collector_state.buffer_state", "the replay buffer's size"),
    ("collector_state.memory", "the memory's sizes or n_envs"),
    ("collector_state", "the environment or n_envs"),
    ("actor_state.params", "the actor's architecture"),
    ("critic_state.params", "the critic's architecture"),
    ("actor_state", "the actor's optimiser"),
    ("critic_state", "the critic's optimiser"),
    ("ext_state", "the extensions"),
    ("", "the agent's settings"),
)


def _part(path: str) -> tuple[int, str]:
    """The rank and meaning of the first part of `_STATE_PARTS` that holds `path`."""
    return next((rank, meaning) for rank, (prefix, meaning) in enumerate(_STATE_PARTS) if path.startswith(prefix))


def state_mismatch(state: Any, skeleton: Any, actions: tuple[bool, int] | None = None) -> str | None:
    """What differs between a state handed to `train` and the one this agent builds, or None.

    Compared leaf by leaf (structure, shape, dtype), so the error names a leaf that differs and
    what it belongs to instead of failing with a shape error deep inside the compiled program.
    Memory and, given this agent's env's `actions` (continuous, size or count), the action
    space change many leaves at once: a difference in them is named as such (`ajax.agents.made_by`).
    """
    if type(state) is not type(skeleton):
        return f"it is a {type(state).__name__}, this agent's state a {type(skeleton).__name__}: another agent made it"
    n_state, n_skeleton = (jax.tree.leaves(tree.rng)[0].shape[0] for tree in (state, skeleton))
    if n_state != n_skeleton:
        return f"it holds {n_state} seeds, and seed= names {n_skeleton}"
    theirs, ours = leaves_by_path(state), leaves_by_path(skeleton)
    problems = [
        f"{path} is {'only in' if path in theirs else 'missing from'} initial_state" for path in set(theirs) ^ set(ours)
    ]
    for path in set(theirs) & set(ours):
        given, leaf = theirs[path], ours[path]
        shape, dtype = tuple(np.shape(given)), getattr(given, "dtype", None) or np.asarray(given).dtype
        if shape != tuple(leaf.shape) or dtype != leaf.dtype:
            problems.append(f"{path} is {dtype}{list(shape)} there, {leaf.dtype}{list(leaf.shape)} here")
    if not problems:
        return None
    named = memory_difference(state, skeleton)
    if named is None and actions is not None:
        named = action_difference(theirs, ours, *actions)
    if named is not None:
        return named
    first = min(problems, key=lambda problem: (_part(problem)[0], problem))
    return f"{first} ({_part(first)[1]} differs)"


def _unbatched_counters(state: BaseAgentState, value: Any) -> BaseAgentState:
    return state.replace(
        n_updates=value(state.n_updates),
        n_logs=value(state.n_logs),
        collector_state=state.collector_state.replace(timestep=value(state.collector_state.timestep)),
    )


def run_seeds(
    one_seed: Callable, keys: jax.Array, state: BaseAgentState, n_iterations: jax.Array | None = None
) -> tuple[BaseAgentState, Any]:
    """`one_seed` vmapped over the seeds of `state`, its shared counters read from the first seed.

    The counters go in unbatched, so the gates that read them stay branches under the vmap;
    so does the iteration count (`n_iterations`, one per seed, all equal; by default
    `one_seed`'s own), so the loop stays one loop.
    """
    axes = _unbatched_counters(jax.tree.map(lambda _: 0, state), lambda _: None)
    state = _unbatched_counters(state, lambda x: x[0])
    count = None if n_iterations is None else n_iterations[0]
    run = jax.vmap(lambda key, state: one_seed(key, state, count), in_axes=(0, axes), axis_name=SEED_AXIS)
    return run(keys, state)


def strongly_typed(state: BaseAgentState) -> BaseAgentState:
    """The state with its weakly typed leaves made strong, dtype unchanged.

    A library counter started from a Python 0 (an optimiser's step, an env's clock) is weakly
    typed in a fresh state but strong once read from a checkpoint, and jit keys its programs
    on the difference: made strong on the way in, a fresh call, a resumed one and one restored
    from disk run one compiled program.
    """
    return jax.tree.map(lambda x: jnp.asarray(x, x.dtype) if getattr(x, "weak_type", False) else x, state)


class BudgetWarning(UserWarning):
    """A call's budget that trains otherwise than it reads: it ends before the agent's first
    update, or it is shorter than the one whole on-policy rollout the call then runs."""


class ActorCritic:
    """The base of every agent: environment, configuration dataclasses, extensions, train()."""

    name: ClassVar[str] = "ActorCritic"
    continuous: ClassVar[bool | None] = None  # the action space the agent acts in; None: both
    supports_memory: ClassVar[bool] = False
    # The PID actor an `actor_architecture=PIDPolicy(...)` builds ("deterministic", "squashed",
    # "gaussian": `ajax.modules.pid_actor.FORMS`); None: the agent refuses a PIDPolicy.
    pid_actor_form: ClassVar[str | None] = None
    # Whether a named image encoder normalises its layers as the agent's own do (PQN's LayerNorm).
    encoder_layer_norm: ClassVar[bool] = False
    # Whether an unlogged run returns each update's metrics in place of evaluations (APG).
    update_metrics: ClassVar[bool] = False
    # What an on-policy agent calls the steps it collects before each update, and the keyword
    # that sets them per env copy (`rollout_steps`), as a budget warning names them.
    rollout_keyword: ClassVar[tuple[str, str]] = ("rollout", "n_steps")
    supported_extension_phases: ClassVar[frozenset[str]] = LOOP_PHASES
    # What the batches its loss and target phases fold over carry: a replay's transitions.
    batch_fields: ClassVar[frozenset[str]] = REPLAY_FIELDS
    # Whether critic_state is an ensemble of discounted Q(s, a) critics (members on axis 0) with
    # target parameters, reading the observations collection stores: what CriticPretrain fits.
    discounted_q_critic: ClassVar[bool] = False
    # Normalise each replayed batch with the current statistics rather than each step as collected
    # (`NormalizationConfig.per_batch`); the agent then normalises what it acts on and samples.
    normalizes_batches: ClassVar[bool] = False
    # Every constructor keyword: default, accepted values, sweepable or not (`ajax.hyperparameters`).
    # The signature, the checks, `sweepable`, config.json and the agents page's tables are read from it.
    hyperparameters: ClassVar[Hyperparameters] = two_networks(3e-4, ("64", "relu")) | ENVIRONMENT | NORMALIZATION
    # The keywords `ajax.sweep` can vary inside one program, read from `hyperparameters`.
    sweepable: ClassVar[frozenset[str]] = hyperparameters.sweepable
    # What the constructor's first argument is: an env id, or a dataset agent's dataset (TDMPC2MultiTask).
    built_on: ClassVar[str] = "env_id"
    # The networks the base builds: each one's role and its (learning rate, architecture) keywords.
    # A one-network agent declares one role, a world model with its own optimisers none.
    networks: ClassVar[dict[str, tuple[str, str]]] = {
        "actor": ("actor_learning_rate", "actor_architecture"),
        "critic": ("critic_learning_rate", "critic_architecture"),
    }

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Give each agent its declared signature and sweepable set."""
        super().__init_subclass__(**kwargs)
        if "__init__" not in cls.__dict__:
            parent_init = cls.__init__

            def __init__(self: ActorCritic, env_id: str | Any, **settings: Any) -> None:  # noqa: N807
                parent_init(self, env_id, **settings)

            cls.__init__ = __init__
        cls.__init__.__signature__ = cls.hyperparameters.signature(cls.built_on)
        cls.sweepable = cls.hyperparameters.sweepable

    def __init__(self, env_id: str | Any, **given: Any) -> None:
        """Bind and check the keywords (`self.settings`), build the env, the networks' settings and the extensions."""
        settings = self.settings = type(self).hyperparameters.bind(self.name, given)
        # The env id first, as config.json and a checkpoint's header read it (a dataset agent's names its tasks).
        built_on = {"env_id": env_id} if self.built_on == "env_id" else {}
        declared = {name: settings[name] for name in self.hyperparameters.declared}
        self.config = built_on | declared | {"algo_name": self.name}
        memory = settings.get("memory")
        if memory is not None and not self.supports_memory:
            raise NotImplementedError(
                f"{self.name} has no recurrent memory yet; drop memory= or use an agent that supports it."
            )
        self.env_args: EnvironmentConfig = prepare_env(
            env_id,
            n_envs=settings.get("n_envs", 1),
            episode_length=settings.get("episode_length"),
            action_repeat=settings.get("action_repeat", 1),
            env_params=settings.get("env_params"),
        )
        check_action_space(self.env_args, self.name, continuous=self.continuous)
        # The reward scale is the spread of the agent's discounted return.
        normalize_observations = bool(settings.get("normalize_observations", False))
        normalization = NormalizationConfig(
            normalize_observations,
            bool(settings.get("normalize_rewards", False)),
            self.discount(settings.get("gamma")),
            return_bound=settings.get("return_bound"),
            per_batch=self.normalizes_batches,
        )
        self.env_args = dataclasses.replace(self.env_args, normalization=normalization)
        memory = MemoryConfig.of(memory)
        self.network_args = self._network_config(settings, memory, normalize_observations)
        self.optimizer_args = {
            role: OptimizerConfig(settings[rate], settings.get("max_grad_norm"))
            for role, (rate, _) in self.networks.items()
        }
        self.extensions = ExtensionStack(
            tuple(e.bind(self.env_args) if isinstance(e, Extension) else e for e in settings.get("extensions", ()))
        )
        self.extensions.check(self.name, self.supported_extension_phases, self.batch_fields, self.discounted_q_critic)
        if memory is not None and self.extensions.extensions:
            names = ", ".join(type(extension).__name__ for extension in self.extensions.extensions)
            raise ValueError(
                f"{self.name} with memory= takes no extensions yet (got {names}): expert guidance and the other "
                "extensions read feed-forward batches. Drop memory= or the extensions."
            )
        masked = has_action_mask(self.env_args)
        if masked:
            self._check_action_masks()
        if settings.get("encoder", FLAT) != FLAT or masked:
            self.network_args = self._behind_encoder(settings.get("encoder", FLAT), normalize_observations, masked)
        self._programs: dict[Any, Callable] = {}

    def discount(self, gamma: float | None) -> float:
        """The discount of the return whose spread scales rewards, given the `gamma` keyword: that,
        or 0.99 for agents without one. Called once `self.env_args` is built, so that an agent
        can derive its default from the env (SimbaV2, from the episode's length)."""
        return 0.99 if gamma is None else float(gamma)

    def _network_config(self, settings: Settings, memory: MemoryConfig | None, normalize: bool) -> NetworkConfig:
        """Each declared network's hidden layers, checked; a PID actor wraps the env in its terms."""
        layers = {role: settings[architecture] for role, (_, architecture) in self.networks.items()}
        for role, architecture in layers.items():
            if isinstance(architecture, PIDPolicy) and (role == "actor" or self.pid_actor_form is None):
                # Refused there too when the agent builds no PID actor, naming the agents that do.
                self.env_args = self._with_pid_terms(architecture, memory, normalize)
                continue
            if isinstance(architecture, PIDPolicy):
                raise TypeError(
                    f"{self.name}'s {role} takes layer strings, e.g. ('256', 'relu'), not a PIDPolicy: a PIDPolicy is "
                    "an actor's architecture (actor_architecture=PIDPolicy(...) on the agents that take one)."
                )
            if isinstance(architecture, SimbaV2Network):
                self._check_hyperspherical(role, memory)
                continue
            parse_architecture(architecture)
            layers[role] = tuple(map(str, architecture))
        return NetworkConfig(layers.get("actor", ()), layers.get("critic", ()), memory=memory)

    def _check_hyperspherical(self, role: str, memory: MemoryConfig | None) -> None:
        """Refuse a SimbaV2Network where the agent builds none, or with memory."""
        if not builds_hyperspherical(type(self)):
            builders = _agents_that(builds_hyperspherical)
            raise TypeError(
                f"{self.name}'s {role} takes layer strings, e.g. ('256', 'relu'), not a SimbaV2Network: {builders} "
                "build SimbaV2's networks."
            )
        if memory is not None:
            raise ValueError(
                f"{self.name}'s SimbaV2Network {role} is feed-forward: its recurrent form is not built. Drop memory=, "
                f"or give {role}_architecture as layer strings."
            )

    def _behind_encoder(self, encoder: Any, normalize_observations: bool, masked: bool) -> NetworkConfig:
        """The networks' settings with `encoder` before them; observations keep the env's shape from
        here on. Observations with an action mask are kept as they are even for encoder='mlp', so the
        mask reaches the policy apart from what the networks read."""
        what = _kept_for(encoder)
        self._refuse_flat_readers(encoder)
        kept = kept_observations(self.env_args, normalized=normalize_observations)
        if self.network_args.memory is not None and (masked or isinstance(kept.observation_shape, dict)):
            reads = "an action mask" if masked else "a dict observation behind an image encoder"
            raise ValueError(
                f"{self.name} with memory= does not take {reads} yet: its memory reads one observation array, flat "
                "or through an image encoder. Drop memory=" + (", or use encoder='mlp'." if not masked else ".")
            )
        module = build_encoder(encoder, kept.observation_parts, self.name, self.encoder_layer_norm)
        if module is None and not masked:  # every part read flat: the default's flat vector
            return self.network_args
        if normalize_observations and isinstance(kept.observation_shape, dict):
            raise ValueError(
                f"{self.name} normalises one observation array; with a dict observation behind {what}, drop "
                "normalize_observations=True"
                + (" or use encoder='mlp' (the keys read as one flat vector)." if not masked else ".")
            )
        self.env_args = kept
        return dataclasses.replace(self.network_args, encoder=module or flat_keys(kept.observation_parts))

    def _refuse_flat_readers(self, encoder: Any) -> None:
        """Refuse what reads observations as one flat vector (a PID actor, the extensions) once
        they keep their shapes."""
        if isinstance(self.env_args.env, PIDTerms):
            raise ValueError(
                f"A PID actor reads its error terms from a flat observation; {self.name} with a PIDPolicy takes "
                "encoder='mlp'."
            )
        if self.extensions.extensions:
            names = ", ".join(type(extension).__name__ for extension in self.extensions.extensions)
            raise ValueError(
                f"{self.name} with {_kept_for(encoder)} takes no extensions yet (got {names}): the extensions read "
                "flat observations. Drop the extensions" + (", or use encoder='mlp'." if encoder != FLAT else ".")
            )

    def _check_action_masks(self) -> None:
        """Refuse an action mask on continuous actions. Every agent that acts in discrete spaces
        applies the mask some envs' dict observations carry (`ACTION_MASK`)."""
        if self.env_args.continuous:
            raise ValueError(
                f"{self.env_args.env.name}'s observations carry an {ACTION_MASK!r}, but its actions are continuous: "
                "a mask says which discrete actions are allowed. Drop the key from the observation."
            )

    def _with_pid_terms(self, policy: PIDPolicy, memory: Any, normalize_observations: bool) -> EnvironmentConfig:
        """The env config with `PIDTerms` around the env, after refusing what a PID actor cannot be.

        The terms join the observation every network reads, so the critics see the integral
        too and the state stays Markov; observation_dim follows.
        """
        form = self.pid_actor_form
        if form is None:
            builders = _agents_that(lambda agent: agent.pid_actor_form is not None)
            raise ValueError(
                f"{self.name} takes no PIDPolicy: it builds no PID actor. {builders} do; use one of them, or "
                f"give {self.name} its architecture as layer strings, e.g. ('64', 'relu')."
            )
        if not self.env_args.continuous:
            raise ValueError(
                f"A PID actor's output is a continuous action, but {self.env_args.env.name} is discrete "
                f"({self.env_args.action_dim} actions). Use a Box-action env with PIDPolicy, or layer strings for "
                f"{self.name}'s categorical actor."
            )
        if memory is not None:
            raise ValueError(
                f"{self.name} takes memory= or a PIDPolicy, not both: the PID's sum and difference already carry the "
                "history it reads (PIDTerms adds them to the observation). Drop memory=, or give "
                "actor_architecture as layer strings."
            )
        if normalize_observations:
            raise ValueError(
                "A PID actor reads its error terms in the env's units, and normalize_observations=True would shift and "
                "scale each of them before the gains. Drop normalize_observations=True with PIDPolicy."
            )
        if form == "deterministic" and policy.log_std_init != PIDPolicy.log_std_init:
            raise ValueError(
                f"{self.name}'s PID actor is deterministic (a = tanh(u)): PIDPolicy's log_std_init, a stochastic "
                "actor's initial noise, would do nothing. Drop log_std_init."
            )
        if isinstance(self.env_args.env, PIDTerms):
            raise ValueError(
                "PIDPolicy wraps the env in PIDTerms itself: pass the env without it, and choose the errors with "
                "PIDPolicy(error_fn=...)."
            )
        env = PIDTerms(self.env_args.env, policy.error_fn)
        observation_dim = math.prod(env.observation_space(self.env_args.env_params).shape)
        return dataclasses.replace(self.env_args, env=env, observation_dim=int(observation_dim))

    @classmethod
    def from_zoo(cls, env_id: str, **overrides: Any) -> ActorCritic:
        """The agent with the RL Baselines3 Zoo's tuned settings for `env_id` (`ajax.zoo`),
        `overrides` over them; the preset's budget is `zoo.preset(name, env_id).n_timesteps`."""
        from ajax import zoo

        return cls(env_id, **{**zoo.preset(cls.name, env_id).kwargs, **overrides})

    # What each agent provides -------------------------------------------------------
    make_train: ClassVar[Callable[..., Callable]]

    def train_kwargs(self) -> dict[str, Any]:
        """The agent's own static settings, handed to its make_train."""
        return {
            "env_args": self.env_args,
            "network_args": self.network_args,
            **{f"{role}_optimizer_args": optimizer for role, optimizer in self.optimizer_args.items()},
            "agent_config": self.agent_config,
        }

    def static_settings(self, run: RunSettings) -> dict[str, Any]:
        """Every static setting the agent's make_train takes for `run`: its own, and the extensions
        bound to the run's horizon (a sweep traces the numbers among them, `ajax.sweep`)."""
        return {
            **self.train_kwargs(),
            "agent_config": self.run_config(run),
            "extensions": self.extensions.with_horizon(run.total_timesteps),
        }

    # The replay, allocated for what the run can put in it -------------------------------
    def replay_size(self) -> int | None:
        """The transitions the replay holds (buffer_size); None for an agent without a replay of
        transitions (UDRL's keeps whole episodes, a dataset agent's is its dataset)."""
        size = self.settings.get("buffer_size")
        return None if size is None else int(size)

    def replay_rows(self, timestep: int) -> int:
        """The transitions written to the replay by `timestep`: one per env step."""
        return int(timestep)

    def replay_capacity(self, horizon: int) -> int | None:
        """The transitions the replay is allocated for a run to `horizon`; None: all of buffer_size.

        A ring that a run never fills behaves as any larger one (it samples among the rows
        written), so a run shorter than buffer_size allocates only what it writes and one row
        more, never full (at least `REPLAY_FLOOR`), and a continued run grows it in place
        (`ajax.buffers.growth`): the results are those of the full buffer_size, the memory not.
        """
        size = self.replay_size()
        if size is None:
            return None
        n_envs = int(self.env_args.n_envs)
        last_step = self.rollout_steps() or n_envs  # the loop's last step may start at the horizon
        floor = max(REPLAY_FLOOR, int(self.settings.get("batch_size", 1)), 256 * n_envs)
        rows = max(self.replay_rows(horizon) + last_step + 1, floor)
        rows = -(-rows // n_envs) * n_envs
        return rows if rows < size else None

    def with_replay(self, capacity: int) -> Any:
        """The agent's config with a replay of `capacity` transitions."""
        return dataclasses.replace(self.agent_config, buffer_size=capacity)

    def run_config(self, run: RunSettings) -> Any:
        """The agent's config for `run`: its replay as `run` allocates it."""
        return self.agent_config if run.replay_capacity is None else self.with_replay(run.replay_capacity)

    def get_make_train(self) -> Callable[..., Callable]:
        """make_train bound to the agent's settings for the run it is given."""

        def bound(*, run: RunSettings, **kwargs: Any) -> Callable:
            return type(self).make_train(run=run, **self.static_settings(run), **kwargs)

        return bound

    def rollout_steps(self) -> int | None:
        """Env steps per on-policy rollout (an agent with `n_steps`, over every env copy); None off-policy."""
        n_steps = getattr(getattr(self, "agent_config", None), "n_steps", None)
        return None if n_steps is None else int(n_steps) * int(self.env_args.n_envs)

    def first_update(self) -> tuple[str, int, int] | None:
        """The keyword that holds back the first update, its value, and the timestep a run must
        reach for that update (None: no keyword does). Off-policy agents update once past
        learning_starts."""
        learning_starts = getattr(self.agent_config, "learning_starts", None)
        return None if learning_starts is None else ("learning_starts", int(learning_starts), int(learning_starts) + 1)

    def check_budget(self, end_timestep: int, start_timestep: int = 0) -> None:
        """Warn when a call from `start_timestep` to `end_timestep` will not train as its budget reads.

        Off-policy, the steps before the first update may fill the whole call, so the run never
        learns. On-policy, a budget shorter than one rollout still runs that rollout whole, and
        so the call ends past its budget (docs/training.md, Budgets).
        """
        first = self.first_update()
        if first is not None and first[2] > end_timestep:
            keyword, value, _ = first
            warnings.warn(
                f"{keyword}={value} leaves no update before the call's end ({end_timestep} timesteps): "
                f"{self.name} will only collect warm-up actions and never update. Lower {keyword} or train longer.",
                BudgetWarning,
                stacklevel=4,
            )
        rollout, budget = self.rollout_steps(), end_timestep - start_timestep
        if rollout is not None and budget < rollout:
            noun, keyword = self.rollout_keyword
            n_envs = int(self.env_args.n_envs)
            warnings.warn(
                f"A budget of {budget} timesteps is shorter than one {noun} of {self.name} ({keyword}="
                f"{rollout // n_envs} x n_envs={n_envs} = {rollout} steps): {self.name} runs whole {noun}s, so this "
                f"call runs {rollout} timesteps, past its budget. Train for at least {rollout} timesteps, or lower "
                f"{keyword}.",
                BudgetWarning,
                stacklevel=4,
            )

    # Training -------------------------------------------------------------------------
    def run_settings(
        self,
        start: int,
        n_timesteps: int,
        num_episode_test: int,
        logging_config: LoggingConfig | None,
        total_timesteps: int | None,
    ) -> tuple[RunSettings, LoggingConfig | None]:
        """What a call from timestep `start` covers, checked; the logging config with the run's."""
        n_timesteps = int(n_timesteps)  # checked by `check_train_arguments`
        end = start + n_timesteps
        horizon = int(total_timesteps) if total_timesteps is not None else end
        rollout = self.rollout_steps()
        if rollout is not None and start < horizon < end < horizon + rollout:
            # The previous call ran its last rollout whole, past the timestep it was asked to
            # reach: legs whose budgets add up to the run's end where one call ends.
            end = horizon
        if horizon < end:
            raise ValueError(
                f"total_timesteps ({horizon}) is the run's horizon and cannot precede this call's end ({end}): "
                f"this state stands at timestep {start}, so n_timesteps={max(horizon - start, 0)} reaches the horizon."
            )
        if n_timesteps:
            self.check_budget(end, start)
        if logging_config is not None:
            if end // logging_config.log_frequency == start // logging_config.log_frequency:
                warnings.warn(
                    f"log_frequency={logging_config.log_frequency} exceeds what this call covers "
                    f"(timesteps {start} to {end}): it will not evaluate.",
                    stacklevel=3,
                )
            logging_config = logging_config.with_config(self.config)
        run = RunSettings(
            start_timestep=start,
            end_timestep=end,
            total_timesteps=horizon,
            num_episode_test=num_episode_test,
            log_frequency=None if logging_config is None else int(logging_config.log_frequency),
            record=logging_config is not None and logging_config.has_backend,
            replay_capacity=self.replay_capacity(horizon),
        )
        return run, logging_config

    def train(
        self,
        seed: int | Sequence[int] | None = None,
        n_timesteps: int = int(1e6),
        num_episode_test: int = 10,
        logging_config: LoggingConfig | None = None,
        initial_state: BaseAgentState | None = None,
        total_timesteps: int | None = None,
        on_nonfinite: str = "warn",
        devices: int | Sequence[jax.Device] | None = None,
    ) -> tuple[BaseAgentState, dict[str, jax.Array] | None]:
        """Train every seed as one compiled program; returns `(state, evaluations)`.

        `n_timesteps` environment steps are run from the state's timestep (0 on a fresh run);
        `n_timesteps=0` returns the untrained state, the skeleton a checkpoint is restored into.
        `seed` is one seed or a list (None: seed 0 on a fresh run, the state's own seeds on a
        resumed one, named by position). `total_timesteps` is the run's horizon, which every
        schedule runs to (by default this call's end). Without a `logging_config` nothing is
        evaluated and the evaluations are None. A seed whose observations, rewards, losses,
        gradient norms or parameters went non-finite is reported once the run returns: a
        `NonFiniteWarning`, or with `on_nonfinite="raise"` a `NonFiniteError`, naming the seed,
        the first such timestep and what went non-finite. `devices`: the seeds are spread
        across every device JAX sees (None), the first `devices` of them, or those listed
        (`ajax.devices`); the results are the one-device run's.
        """
        nonfinite.check_mode(on_nonfinite)
        check_train_arguments(n_timesteps, num_episode_test, logging_config, initial_state, total_timesteps)
        seeds = None if seed is None else checked_seeds(seed)
        if initial_state is None:
            seeds = [0] if seeds is None else seeds
        n_seeds = len(seeds) if seeds is not None else jax.tree.leaves(initial_state.rng)[0].shape[0]
        placement = Placement.of(devices, n_seeds)
        start = 0 if initial_state is None else shared_counters(initial_state)["timestep"]
        run, logging_config = self.run_settings(start, n_timesteps, num_episode_test, logging_config, total_timesteps)
        # On several devices each device would call back with its own seeds alone: a backend is
        # then fed from the evaluations the program returns.
        live = placement.mesh is None
        run = run if live else dataclasses.replace(run, record=False)
        if initial_state is not None:
            run, initial_state = self.fit_replay(initial_state, run, start, self._skeleton_at(n_seeds), n_seeds)
        one_seed = self.get_make_train()(run=run)  # cheap: closures only, nothing traced yet
        if initial_state is None:
            check_fits(self._skeleton(one_seed, run, n_seeds), self.name, n_seeds)  # before allocating it
            keys = placement.spread(seed_keys(seeds))
            with host_errors():  # a host env's reset that raised, as itself
                initial_state = self._fresh_program(one_seed, run, placement)(keys)
        else:
            actions = (self.env_args.continuous, self.env_args.action_dim)
            problem = state_mismatch(initial_state, self._skeleton(one_seed, run, n_seeds), actions)
            if problem is not None:
                raise ValueError(
                    f"initial_state does not fit this {self.name}: {problem}. Resume a state with the agent that "
                    "made it: the same class, architectures, memory, env, n_envs and extensions, and as many seeds."
                )
            initial_state = placement.spread(strongly_typed(initial_state))
        # A fresh run is a resumed call from the initial state: both run one compiled program,
        # so a run split in two follows one call's arithmetic exactly. Every key comes from
        # the state: `seed` plays no further part.
        keys = placement.spread(jnp.zeros((n_seeds, *key_shape()), jnp.uint32))
        # With a backend on, a worker writes the evaluations while the program runs, and is
        # stopped on the way out, also when training raises. Its runs are named after the
        # seeds given, or their positions when a resumed state holds other seeds.
        names = seeds if seeds is not None else list(range(n_seeds))
        # host_errors: a host env's exception as itself, not as the JAX runtime error that stops the
        # program; a context here rather than a decorator, so warnings keep pointing at the caller.
        with recording(logging_config if live else None, names), warnings.catch_warnings(), host_errors():
            # The shared counters go in per seed and run unbatched: XLA cannot reuse those three.
            warnings.filterwarnings("ignore", "Some donated buffers were not usable")
            iterations = placement.spread(jnp.full((n_seeds,), one_seed.n_iterations, jnp.int32))
            state, rows = self._program(one_seed, placement)(keys, iterations, strongly_typed(initial_state))
            state, rows = placement.gather(jax.block_until_ready((state, rows)))
        if one_seed.n_rows is not None:  # the run's slots, this call's rows first
            rows = {name: values[:, : one_seed.n_rows] for name, values in rows.items()}
        if not live:
            write_rows(logging_config, names, rows)
        nonfinite.report(state.nonfinite, names, on_nonfinite)
        return state, (rows if logging_config is not None or self.update_metrics else None)

    @host_errors()
    def evaluate(self, state: BaseAgentState, num_episode_test: int = 10, seed: int = 0) -> dict[str, np.ndarray]:
        """Evaluate every seed of a trained (or restored) state: each metric per seed.

        The same episodes the logging gate runs, with keys drawn from `seed` rather than from
        the state, so evaluating leaves the run itself untouched.
        """
        require_counts(num_episode_test=num_episode_test)
        timestep = shared_counters(state)["timestep"]
        # One program per (timestep, episodes), kept: evaluating a state again, with other
        # seeds, reruns it instead of compiling the episodes again (tens of seconds on physics).
        # Traced with the garbage collector paused, as a run's program is: Brax's ant's evaluation
        # at Brax's PPO settings traced in 2.6 s, 1.7 s paused (one CPU core, means of six). Its
        # compile options stay JAX's: at `jit_run`'s (LLVM's second level) the physics rounds
        # otherwise and the returns move (that ant's: 50.39 -> 50.15).
        cache_key = ("evaluate", timestep, num_episode_test)
        if cache_key not in self._programs:
            run = RunSettings(timestep, timestep, timestep, num_episode_test=num_episode_test)
            one_seed = self.get_make_train()(run=run)
            self._programs[cache_key] = jax.jit(collection_paused(jax.vmap(one_seed.evaluate, axis_name=SEED_AXIS)))
        n_seeds = jax.tree.leaves(state.rng)[0].shape[0]
        keys = jax.random.split(jax.random.PRNGKey(seed), n_seeds)
        metrics = self._programs[cache_key](state, keys)
        return {name: np.asarray(values) for name, values in metrics.items()}

    def fit_replay(
        self,
        state: BaseAgentState,
        run: RunSettings,
        start: int,
        skeleton_at: Callable[[RunSettings], BaseAgentState],
        n_runs: int,
    ) -> tuple[RunSettings, BaseAgentState]:
        """The run settings and state that continue `state` (at timestep `start`, `n_runs` runs,
        `skeleton_at(run)` the shapes of a fresh state for `run`): its replay kept where it holds
        at least what `run` allocates, grown in place where it holds less and has never filled."""
        size = self.replay_size()
        if size is None:
            return run, state
        target = run.replay_capacity or size
        skeleton = skeleton_at(run)
        held = held_capacity(state, skeleton, target)
        if held is None or held > size:  # alike, or not this agent's: `state_mismatch` names it
            return run, state
        at_held = dataclasses.replace(run, replay_capacity=None if held == size else held)
        if held > target:  # allocated by an earlier call for a later horizon
            return at_held, state
        if state_mismatch(state, skeleton_at(at_held)) is not None:
            return run, state  # something else differs too: `state_mismatch` names it
        if self.replay_rows(start) >= held:
            raise ValueError(
                f"initial_state's replay holds {held} transitions and has filled them by timestep {start}; this "
                f"{self.name} (buffer_size={size}) would run it with {target}, which no longer equals one call. "
                f"Build the agent with buffer_size={held}, as the one that made the state was."
            )
        check_fits(skeleton, self.name, n_runs)  # the grown replay, beside the state it is copied from
        return run, grown(state, skeleton)

    def _skeleton_at(self, n_seeds: int) -> Callable[[RunSettings], BaseAgentState]:
        return lambda run: self._skeleton(self.get_make_train()(run=run), run, n_seeds)

    def _fresh_program(self, one_seed: Callable, run: RunSettings, placement: Placement = ONE_DEVICE) -> Callable:
        """The jitted, seed-vmapped initial state (with the extensions' init and pretrain folds)."""
        cache_key = ("fresh", run.total_timesteps, run.replay_capacity, placement.mesh)
        if cache_key not in self._programs:
            fresh = jax.vmap(one_seed.fresh_state, axis_name=SEED_AXIS)
            self._programs[cache_key] = placement.run_once(fresh)
        return self._programs[cache_key]

    def _skeleton(self, one_seed: Callable, run: RunSettings, n_seeds: int) -> BaseAgentState:
        """The shapes and dtypes of this agent's fresh state for `n_seeds` seeds, traced once."""
        cache_key = ("skeleton", n_seeds, run.replay_capacity)
        if cache_key not in self._programs:
            keys = jax.ShapeDtypeStruct((n_seeds, *key_shape()), jnp.uint32)
            self._programs[cache_key] = self._fresh_program(one_seed, run).eval_shape(keys)
        return self._programs[cache_key]

    def _program(self, one_seed: Callable, placement: Placement = ONE_DEVICE) -> Callable:
        """The jitted, seed-vmapped run from a given state and for a given count of iterations,
        built once per distinct call shape and placement."""
        cache_key = (one_seed.cache_key, placement.mesh)
        if cache_key not in self._programs:

            def resume(keys: jax.Array, iterations: jax.Array, state: BaseAgentState) -> tuple[BaseAgentState, Any]:
                return run_seeds(one_seed, keys, state, iterations)

            self._programs[cache_key] = jit_run(placement.program(resume), donate_argnums=(2,))
        return self._programs[cache_key]
