"""The non-finite guard: the first timestep at which a run's numbers stopped being finite, per seed.

A NaN spreads silently through a compiled run: every parameter ends NaN and nothing says so.
The loop therefore keeps, in each seed's state, the timestep at which something first went
non-finite and which kinds of quantity did, as one bit each: the observations and rewards
the env handed in, the networks' parameters and, with them, the update's losses and gradient
norms. The check is a few reductions per step, folded into the state with no host callback,
so a run without a logging backend still compiles to a cacheable program. `train()` reads the record
once the run returns and warns or raises, telling an env fault from a divergence.

On an env whose observations carry an action mask, the same record counts the steps whose mask
allowed no action, and notes when the first was: the agent then acted as if unmasked
(`ajax.state.allowed_actions`), which no number in the run shows. `train()` warns of them with a
`NoAllowedActionWarning`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
from flax import struct

OBSERVATIONS, REWARDS, LOSSES, GRADIENTS, PARAMETERS = 1, 2, 4, 8, 16
KINDS = {
    OBSERVATIONS: "observations from the env",
    REWARDS: "rewards from the env",
    LOSSES: "a loss",
    GRADIENTS: "a gradient norm",
    PARAMETERS: "the network parameters",
}
FROM_THE_ENV = OBSERVATIONS | REWARDS
ON_NONFINITE = ("warn", "raise")


def check_mode(on_nonfinite: str) -> None:
    """Refuse an `on_nonfinite=` that is neither mode, before anything compiles."""
    if on_nonfinite not in ON_NONFINITE:
        raise ValueError(f"on_nonfinite must be one of {ON_NONFINITE}, got {on_nonfinite!r}.")


class NonFiniteWarning(RuntimeWarning):
    """A run went non-finite; `train(on_nonfinite="raise")` raises NonFiniteError instead."""


class NonFiniteError(FloatingPointError):
    """A run went non-finite and `train(on_nonfinite="raise")` was asked for."""


class NoAllowedActionWarning(UserWarning):
    """The env handed the agent observations whose action mask allowed no action."""


@struct.dataclass
class NoAllowedAction:
    """One seed's steps (per env copy) acted on an observation whose action mask allowed no action,
    and the timestep of the first.

    The first is noted while the count is 0, so a checkpoint from before this record, restored
    with it filled (`NonFinite.added_fields`), counts from a clean record.
    """

    steps: jax.Array
    first: jax.Array

    @classmethod
    def clean(cls) -> NoAllowedAction:
        return cls(steps=jnp.asarray(0, jnp.int32), first=jnp.asarray(-1, jnp.int32))


@struct.dataclass
class NonFinite:
    """One seed's record: the first timestep anything went non-finite (-1: never), and what did;
    on an env with an action mask, its steps with no allowed action (None without one)."""

    timestep: jax.Array
    kinds: jax.Array
    no_action: NoAllowedAction | None = None

    added_fields: ClassVar[frozenset[str]] = frozenset({"no_action"})

    @classmethod
    def clean(cls, action_masked: bool = False) -> NonFinite:
        return cls(
            timestep=jnp.asarray(-1, jnp.int32),
            kinds=jnp.asarray(0, jnp.int32),
            no_action=NoAllowedAction.clean() if action_masked else None,
        )


def _any_nonfinite(leaves: Sequence[Any]) -> jax.Array:
    """Whether any value of the floating leaves is non-finite, as one reduction over all of them.

    Checked leaf by leaf, the parameters of a large model (DreamerV3's 1m model: 79 tensors, and
    the actor's and critic's) made three equations and a reduction kernel each, every update;
    joined, XLA reads them in one fused reduction.
    """
    values = [jnp.ravel(leaf) for leaf in leaves if jnp.issubdtype(jnp.result_type(leaf), jnp.inexact)]
    return ~jnp.all(jnp.isfinite(jnp.concatenate(values))) if values else jnp.asarray(False)


def env_kinds(experience: Sequence[Any]) -> jax.Array:
    """The env's bits for whatever transitions `experience` holds (a step, a rollout, a batch).

    A transition is recognised by its fields (`obs`, `next_obs`, `reward`), not by its class:
    the guard sits below the environments that define `Transition` and the row collector's steps.
    """
    transitions = [leaf for leaf in experience if all(hasattr(leaf, f) for f in ("obs", "next_obs", "reward"))]
    observations = _any_nonfinite(jax.tree.leaves([(t.obs, t.next_obs) for t in transitions]))  # a dict's arrays too
    rewards = _any_nonfinite([t.reward for t in transitions])
    return jnp.where(observations, OBSERVATIONS, 0) | jnp.where(rewards, REWARDS, 0)


def update_kinds(aux: Any, params: Sequence[Any]) -> jax.Array:
    """The update's bits: the parameters it left, and with them its losses and gradient norms.

    A loss or a norm alone may be NaN by design: a part of an update that did not run this
    step (TD3's delayed actor) fills its metrics with NaN. A real NaN loss poisons the
    gradients and so the parameters in the same update, so the metrics count only then.
    """
    named = jax.tree_util.tree_flatten_with_path(aux)[0]
    losses = _any_nonfinite([leaf for path, leaf in named if "loss" in jax.tree_util.keystr(path)])
    gradients = _any_nonfinite([leaf for path, leaf in named if "grad_norm" in jax.tree_util.keystr(path)])
    parameters = _any_nonfinite(jax.tree.leaves(params))
    metrics = jnp.where(losses, LOSSES, 0) | jnp.where(gradients, GRADIENTS, 0)
    return jnp.where(parameters, PARAMETERS | metrics, 0)


def record(state: Any, kinds: jax.Array) -> Any:
    """The state with `kinds` noted at its timestep, unless an earlier timestep is already noted.

    Bits that join at the first noted timestep are kept with it, so an env fault and the loss it
    poisoned in the same step are reported together.
    """
    noted = state.nonfinite
    timestep = state.collector_state.timestep.astype(jnp.int32)
    first = (noted.timestep < 0) & (kinds != 0)
    same_step = noted.timestep == timestep
    return state.replace(
        nonfinite=noted.replace(
            timestep=jnp.where(first, timestep, noted.timestep),
            kinds=jnp.where(first | same_step, noted.kinds | kinds, noted.kinds),
        )
    )


def record_no_action(state: Any, mask: jax.Array, timestep: jax.Array, acted: jax.Array | None = None) -> Any:
    """The state with the observations whose action `mask` (n_envs, n_actions) allows nothing counted,
    `timestep` noted if they are the first. `acted` (n_envs,): which copies' actions the env executes
    (None: all). A state without the record (built outside the training loop) is returned as it is.
    """
    if state.nonfinite is None or state.nonfinite.no_action is None:
        return state
    noted = state.nonfinite.no_action
    none_allowed = ~jnp.any(mask, axis=-1)
    if acted is not None:
        none_allowed &= acted
    count = jnp.sum(none_allowed, dtype=jnp.int32)
    first = (noted.steps == 0) & (count > 0)
    no_action = NoAllowedAction(
        steps=noted.steps + count, first=jnp.where(first, jnp.asarray(timestep, jnp.int32), noted.first)
    )
    return state.replace(nonfinite=state.nonfinite.replace(no_action=no_action))


def describe(kinds: int) -> str:
    return ", ".join(name for bit, name in KINDS.items() if kinds & bit)


def report(nonfinite: NonFinite | None, seeds: Sequence[Any], on_nonfinite: str) -> None:
    """Warn (or raise) naming each seed that went non-finite, when, what, and where to look; warn
    first of the steps with no allowed action, whatever `on_nonfinite`."""
    if nonfinite is None:
        return
    report_no_action(nonfinite.no_action, seeds)
    timesteps, kinds = jax.device_get((nonfinite.timestep, nonfinite.kinds))
    lines, env_fault = [], False
    for seed, timestep, bits in zip(seeds, timesteps.tolist(), kinds.tolist(), strict=True):
        if timestep < 0:
            continue
        env_fault |= bool(bits & FROM_THE_ENV)
        line = f"seed {seed}: {describe(bits)} non-finite from timestep {timestep:,}"
        if bits & FROM_THE_ENV and bits & ~FROM_THE_ENV:
            line += f" ({describe(bits & FROM_THE_ENV)} already were)"
        lines.append(line)
    if not lines:
        return
    advice = (
        "the env handed in non-finite numbers: check the env, its params and any wrapper"
        if env_fault
        else "the updates diverged: lower the learning rate, clip gradients (max_grad_norm), or check the "
        "expert and the data"
    )
    message = "The run went non-finite. " + "; ".join(lines) + f". Likely cause: {advice}."
    if on_nonfinite == "raise":
        raise NonFiniteError(message)
    warnings.warn(message, NonFiniteWarning, stacklevel=3)


def report_no_action(no_action: NoAllowedAction | None, seeds: Sequence[Any]) -> None:
    """Warn naming each seed that acted where its action mask allowed nothing: how often, from when,
    and what the agent did there."""
    if no_action is None:
        return
    steps, first = jax.device_get((no_action.steps, no_action.first))
    lines = [
        f"seed {seed}: {count:,} step{'s' if count != 1 else ''}, the first at timestep {timestep:,}"
        for seed, count, timestep in zip(seeds, steps.tolist(), first.tolist(), strict=True)
        if count > 0
    ]
    if not lines:
        return
    warnings.warn(
        "The env's action mask allowed no action on "
        + "; ".join(lines)
        + ". There the agent acted as if the observation had no mask, choosing among every action. Check the "
        "env's mask, or end the episode where no action is allowed.",
        NoAllowedActionWarning,
        stacklevel=4,
    )
