"""`Extension`, `ExtensionContext` and `ExtensionStack`: the fold points of the loop."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
from flax import struct

from ajax.checks import require_counts, require_flags, require_in_interval

PHASES = (
    "init_state",
    "pretrain",
    "post_update",
    "eval_metrics",
    "on_target",
    "critic_loss",
    "actor_loss",
    "action",
)
# The phases the shared loop folds for every agent; an agent adds those its update folds.
LOOP_PHASES = frozenset({"pretrain", "post_update", "eval_metrics"})

# What one extension's state can hand to others (`Extension.provides`, `Extension.reads`):
# each name, what it is, and the extension that provides it, for the construction's message.
SHARED = {"expert_critic": ("the frozen expert critic phi*", "CriticPretrain(expert, ...)")}

# fold_in tags: each phase draws from its own stream of a key the agent never splits.
_PHASE_TAG = {phase: index + 1 for index, phase in enumerate(PHASES)}


@struct.dataclass
class ExtensionContext:
    """What every phase may read besides the agent state: the timestep, a key, the horizon."""

    step: jax.Array
    rng: jax.Array
    total_steps: int = struct.field(pytree_node=False)
    episode_steps: jax.Array | None = None  # each env copy's steps in its episode, when counted
    shared: dict[str, Any] = struct.field(default_factory=dict)  # what the extension `reads`, by name


def check_fields(
    extension: Extension,
    counts: Sequence[str] = (),
    intervals: Mapping[str, str] | None = None,
    flags: Sequence[str] = (),
) -> None:
    """Refuse, at construction, a field of `extension` that is not what it takes, in the words the
    agents' keywords use: counts (integers >= 1), numbers in an interval ("[0, inf)"), flags.

    Each message names the extension and the field: a string, NaN, infinity or a fraction where
    a number or a count goes would otherwise fail later, inside tracing, naming neither.
    """
    owner = type(extension).__name__
    for name in counts:
        require_counts(**{f"{owner}'s {name}": getattr(extension, name)})
    for name, interval in (intervals or {}).items():
        require_in_interval(interval, **{f"{owner}'s {name}": getattr(extension, name)})
    for name in flags:
        require_flags(**{f"{owner}'s {name}": getattr(extension, name)})


@dataclass(frozen=True)
class Extension:
    """Override the phases the feature needs; the stack folds only those.

    Phase signatures (`ext_state` is this extension's entry of `agent_state.ext_state`):

        init_state(ctx, agent_state) -> ext_state
        pretrain(ctx, agent_state, ext_state) -> (agent_state, ext_state)
        post_update(ctx, agent_state, ext_state) -> (agent_state, ext_state)
        eval_metrics(ctx, agent_state, ext_state) -> dict of scalars
        on_target(ctx, agent_state, ext_state, batch, target) -> (target, metrics)
        critic_loss(ctx, agent_state, ext_state, batch, critic_params) -> (loss, metrics)
        actor_loss(ctx, agent_state, ext_state, batch, actor_params) -> (loss, metrics)
        action(ctx, agent_state, ext_state, obs, action) -> action

    The action phase returns the action the env executes. By default the replay stores
    that action too: the agent learns off-policy from what was done (an expert that took
    over). An extension whose change belongs to the environment the agent acts in (a base
    controller under a residual policy) sets `part_of_env`: the replay keeps the agent's own
    action, and the evaluation applies the change as well. An extension that reads each env
    copy's step in its episode (`ctx.episode_steps`) sets `reads_episode_steps`, and the
    agent then counts them. `batch_fields` names what the loss and target phases read of
    the update's batch, checked at construction against what the agent's batches carry.

    One extension's state can serve others (`SHARED` names what): the provider lists the
    name in `provides` and returns the value from `shared`; a reader lists it in `reads` and
    finds it in `ctx.shared` in every phase but init_state. Construction refuses a reader
    whose provider is missing or comes later in the stack. An extension that works on the
    agent's critic as the discounted Q(s, a) of an ensemble with target parameters sets
    `needs_discounted_q_critic`, and agents without one refuse it.
    """

    part_of_env: ClassVar[bool] = False
    reads_episode_steps: ClassVar[bool] = False
    batch_fields: ClassVar[frozenset[str]] = frozenset()
    provides: ClassVar[frozenset[str]] = frozenset()
    reads: ClassVar[frozenset[str]] = frozenset()
    needs_discounted_q_critic: ClassVar[bool] = False

    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def phases(self) -> frozenset[str]:
        """The phases this extension implements: those whose method it overrides."""
        return frozenset(phase for phase in PHASES if getattr(type(self), phase) is not getattr(Extension, phase))

    def bind(self, env_args: Any) -> Extension:
        """This extension for the agent's environment, at construction (experts are read in agent units)."""
        return self

    def init_state(self, ctx: ExtensionContext, agent_state: Any) -> Any:
        return ()

    def shared(self, ext_state: Any) -> dict[str, Any]:
        """What this extension `provides` to the others, read from its state."""
        return {}

    def pretrain(self, ctx, agent_state, ext_state):
        return agent_state, ext_state

    def post_update(self, ctx, agent_state, ext_state):
        return agent_state, ext_state

    def eval_metrics(self, ctx, agent_state, ext_state) -> dict[str, jax.Array]:
        return {}

    def on_target(self, ctx, agent_state, ext_state, batch, target):
        return target, {}

    def critic_loss(self, ctx, agent_state, ext_state, batch, critic_params):
        return jnp.zeros(()), {}

    def actor_loss(self, ctx, agent_state, ext_state, batch, actor_params):
        return jnp.zeros(()), {}

    def action(self, ctx, agent_state, ext_state, obs, action):
        return action


@dataclass(frozen=True)
class ExtensionStack:
    """The extensions of one agent, folded phase by phase in the order given."""

    extensions: tuple[Extension, ...] = ()
    total_steps: int = 0

    def __post_init__(self) -> None:
        for extension in self.extensions:
            if not isinstance(extension, Extension):
                raise TypeError(f"extensions= takes Extension instances, got {type(extension).__name__}.")
            try:
                hash(extension)
            except TypeError as error:
                raise TypeError(
                    f"{extension.name} must be hashable (a frozen dataclass): extensions are static."
                ) from error
        self._check_shared()

    def _check_shared(self) -> None:
        """Every name an extension reads provided once, by an extension before it."""
        provided: set[str] = set()
        for extension in self.extensions:
            missing = sorted(extension.reads - provided)
            if missing:
                name = missing[0]
                what, provider = SHARED.get(name, (name, "an extension that provides it"))
                later = [e.name for e in self.extensions if name in e.provides]
                where = f"{later[0]} comes after it: put it before" if later else f"add {provider} before it"
                raise ValueError(
                    f"{extension.name} reads {what}, which no extension before it in the stack provides; {where} "
                    f"{extension.name} in extensions=."
                )
            twice = sorted(extension.provides & provided)
            if twice:
                raise ValueError(
                    f"Two extensions provide {SHARED.get(twice[0], (twice[0],))[0]} ({extension.name} the second): "
                    "keep one of them."
                )
            provided |= extension.provides

    def __bool__(self) -> bool:
        return bool(self.extensions)

    def folds(self, phase: str) -> bool:
        """Whether any extension implements `phase`."""
        return any(phase in extension.phases for extension in self.extensions)

    @property
    def reads_episode_steps(self) -> bool:
        return any(extension.reads_episode_steps for extension in self.extensions)

    def with_horizon(self, total_steps: int) -> ExtensionStack:
        return ExtensionStack(self.extensions, total_steps)

    def check(
        self,
        agent: str,
        supported_phases: frozenset[str],
        batch_fields: frozenset[str],
        discounted_q_critic: bool = False,
    ) -> None:
        """Refuse, at construction, an extension phase the agent never folds, a batch field its
        batches lack, a critic it does not have, and action extensions whose replays would disagree."""
        allowed = supported_phases | {"init_state"}
        for extension in self.extensions:
            if extension.needs_discounted_q_critic and not discounted_q_critic:
                raise ValueError(
                    f"{extension.name} works on an ensemble of discounted Q(s, a) critics with target parameters, "
                    f"which {agent} does not have. Use SAC, TD3 or REDQ."
                )
            unsupported = sorted(extension.phases - allowed)
            if unsupported:
                raise ValueError(
                    f"{extension.name} implements {', '.join(unsupported)}, which {agent} never folds "
                    f"(it folds {', '.join(sorted(supported_phases))}). Use an agent that folds "
                    "these phases or drop the extension."
                )
            missing = sorted(extension.batch_fields - batch_fields)
            if missing:
                raise ValueError(
                    f"{extension.name} reads {', '.join(missing)} of the update's batch, which {agent} does not "
                    f"store (its batches hold {', '.join(sorted(batch_fields))}). Use an agent whose replay "
                    "holds them."
                )
        acting = [e for e in self.extensions if "action" in e.phases]
        in_env = [e for e in acting if e.part_of_env]
        if in_env and len(acting) > 1:
            others = ", ".join(e.name for e in acting if e is not in_env[0])
            raise ValueError(
                f"{in_env[0].name} makes its controller part of the environment the agent acts in, so the replay "
                f"keeps the agent's own action; {others} would change it too. Keep one of them."
            )

    def _contexts(self, phase: str, agent_state: Any, share: bool = True) -> list[ExtensionContext]:
        """Each extension's context; `share` fills in what it reads from the others' states."""
        key = jax.random.fold_in(agent_state.eval_rng, _PHASE_TAG[phase])
        key = jax.random.fold_in(key, agent_state.collector_state.timestep)
        key = jax.random.fold_in(key, agent_state.n_updates)
        keys = jax.random.split(key, len(self.extensions))
        collector = agent_state.collector_state
        contexts = [ExtensionContext(collector.timestep, k, self.total_steps, collector.episode_steps) for k in keys]
        if not share:
            return contexts
        return [self._sharing(e, c, agent_state) for e, c in zip(self.extensions, contexts, strict=True)]

    def _sharing(self, extension: Extension, ctx: ExtensionContext, agent_state: Any) -> ExtensionContext:
        """`ctx` with what `extension` reads from the others' current states."""
        if not extension.reads:
            return ctx
        shared: dict[str, Any] = {}
        for provider, entry in zip(self.extensions, agent_state.ext_state, strict=True):
            shared.update({k: v for k, v in provider.shared(entry).items() if k in extension.reads})
        return ctx.replace(shared=shared)

    def fold_init(self, agent_state: Any) -> Any:
        """Each extension's initial state, then each pretrain: fresh runs only."""
        if not self.extensions:
            return agent_state
        contexts = self._contexts("init_state", agent_state, share=False)  # no extension state yet
        ext_state = tuple(e.init_state(c, agent_state) for e, c in zip(self.extensions, contexts, strict=True))
        agent_state = agent_state.replace(ext_state=ext_state)
        return self._fold_transform("pretrain", agent_state)

    def fold_post_update(self, agent_state: Any) -> Any:
        if not self.extensions:
            return agent_state
        return self._fold_transform("post_update", agent_state)

    def _fold_transform(self, phase: str, agent_state: Any) -> Any:
        contexts = self._contexts(phase, agent_state, share=False)
        for index, (extension, ctx) in enumerate(zip(self.extensions, contexts, strict=True)):
            if phase not in extension.phases:
                continue
            ctx = self._sharing(extension, ctx, agent_state)  # after the providers before it transformed theirs
            agent_state, entry = getattr(extension, phase)(ctx, agent_state, agent_state.ext_state[index])
            ext_state = list(agent_state.ext_state)
            ext_state[index] = entry
            agent_state = agent_state.replace(ext_state=tuple(ext_state))
        return agent_state

    def fold_eval_metrics(self, agent_state: Any) -> dict[str, jax.Array]:
        if not self.extensions:
            return {}
        metrics: dict[str, jax.Array] = {}
        contexts = self._contexts("eval_metrics", agent_state)
        for index, (extension, ctx) in enumerate(zip(self.extensions, contexts, strict=True)):
            if "eval_metrics" in extension.phases:
                metrics.update(extension.eval_metrics(ctx, agent_state, agent_state.ext_state[index]))
        return metrics

    def fold_on_target(self, agent_state: Any, batch: Any, target: jax.Array) -> tuple[jax.Array, dict]:
        if not self.extensions:
            return target, {}
        metrics: dict[str, jax.Array] = {}
        contexts = self._contexts("on_target", agent_state)
        for index, (extension, ctx) in enumerate(zip(self.extensions, contexts, strict=True)):
            if "on_target" in extension.phases:
                target, extra = extension.on_target(ctx, agent_state, agent_state.ext_state[index], batch, target)
                metrics.update(extra)
        return target, metrics

    def _fold_loss(self, phase: str, agent_state: Any, batch: Any, params: Any) -> tuple[jax.Array, dict]:
        if not self.extensions:
            return jnp.zeros(()), {}
        total, metrics = jnp.zeros(()), {}
        contexts = self._contexts(phase, agent_state)
        for index, (extension, ctx) in enumerate(zip(self.extensions, contexts, strict=True)):
            if phase in extension.phases:
                loss, extra = getattr(extension, phase)(ctx, agent_state, agent_state.ext_state[index], batch, params)
                total, metrics = total + loss, {**metrics, **extra}
        return total, metrics

    def fold_critic_loss(self, agent_state: Any, batch: Any, critic_params: Any) -> tuple[jax.Array, dict]:
        return self._fold_loss("critic_loss", agent_state, batch, critic_params)

    def fold_actor_loss(self, agent_state: Any, batch: Any, actor_params: Any) -> tuple[jax.Array, dict]:
        return self._fold_loss("actor_loss", agent_state, batch, actor_params)

    def fold_action(self, agent_state: Any, obs: jax.Array, action: jax.Array) -> tuple[jax.Array, jax.Array]:
        """(the action the env executes, the action the replay stores) for the agent's `action`.

        Extensions run in the order given, each on the executed action so far; a
        `part_of_env` one changes only what is executed.
        """
        if not self.folds("action"):
            return action, action
        executed, stored = action, action
        contexts = self._contexts("action", agent_state)
        for index, (extension, ctx) in enumerate(zip(self.extensions, contexts, strict=True)):
            if "action" in extension.phases:
                executed = extension.action(ctx, agent_state, agent_state.ext_state[index], obs, executed)
                stored = stored if extension.part_of_env else executed
        return executed, stored

    def fold_env_action(self, agent_state: Any, obs: jax.Array, action: jax.Array) -> jax.Array:
        """What the env executes for the evaluation's `action`: only the `part_of_env` extensions act."""
        contexts = self._contexts("action", agent_state)
        for index, (extension, ctx) in enumerate(zip(self.extensions, contexts, strict=True)):
            if "action" in extension.phases and extension.part_of_env:
                action = extension.action(ctx, agent_state, agent_state.ext_state[index], obs, action)
        return action

    @property
    def acts_in_evaluation(self) -> bool:
        return any("action" in e.phases and e.part_of_env for e in self.extensions)
