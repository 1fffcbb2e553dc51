"""When to evaluate and what an evaluation's row holds.

The loop evaluates when an iteration crosses a multiple of `log_frequency` environment
steps, never past the run's horizon. The gate reads only the timestep, which every seed
shares and which stays unbatched under the seed vmap, so `lax.cond` skips the evaluation
on the other iterations instead of computing it and selecting.

Each evaluation's metrics are written into rows the scan carries (one slot per
evaluation of the call), not stacked per iteration. Unfilled slots hold -1 (the timestep)
or NaN.

With a logging backend on (`record`), the evaluation branch also hands the metrics to the
host (`to_host`), and only that branch: a run without a backend compiles no callback, so
its program stays the same and the persistent compile cache can hold it.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap

from ajax.logging.worker import forward
from ajax.state import BaseAgentState

Rows = dict[str, jax.Array]

TRAIN_RETURN = "Train/episodic mean reward"


def n_rows(start_timestep: int, end_timestep: int, log_frequency: int) -> int:
    """How many evaluations a call from `start` to `end` can make (at least one slot)."""
    return max(1, end_timestep // log_frequency - start_timestep // log_frequency)


def empty_rows(template: dict[str, jax.ShapeDtypeStruct], count: int) -> Rows:
    rows = {"timestep": jnp.full((count,), -1, jnp.int32)}
    for name in template:
        rows[name] = jnp.full((count,), jnp.nan, jnp.float32)
    return rows


def train_return(state: BaseAgentState) -> jax.Array:
    """The mean of each env's last finished episode; NaN before any has finished."""
    last = state.collector_state.last_episodic_return
    finished = ~jnp.isnan(last)
    return jnp.where(
        jnp.any(finished), jnp.sum(jnp.where(finished, last, 0.0)) / jnp.maximum(jnp.sum(finished), 1), jnp.nan
    )


def evaluation_keys(state: BaseAgentState) -> tuple[jax.Array, jax.Array]:
    """Evaluation n draws from fold_in(eval_rng, n): the same per seed from run to run."""
    episodes, extensions = jax.random.split(jax.random.fold_in(state.eval_rng, state.n_logs))
    return episodes, extensions


@custom_vmap
def to_host(timestep: jax.Array, metrics: dict[str, jax.Array]) -> jax.Array:
    """Hand one evaluation to the logging worker (`ajax.logging.worker.forward`).

    A `jax.debug.callback`: an `io_callback` is refused inside a vmapped `lax.cond`. Under
    the seed vmap its own rule (`_to_host_all_seeds`) makes one host call with every seed's
    metrics, in the seed axis's order; JAX's default would unroll one call per seed, none
    saying which seed it carries. Unbatched, the metrics go out as a batch of one.
    """
    jax.debug.callback(forward, timestep, jax.tree.map(lambda value: value[None], metrics))
    return timestep


@to_host.def_vmap
def _to_host_all_seeds(
    axis_size: int, in_batched: list, timestep: jax.Array, metrics: dict[str, jax.Array]
) -> tuple[jax.Array, bool]:
    timestep_batched, metrics_batched = in_batched
    if timestep_batched:
        raise ValueError(
            "The logging gate's timestep must be shared by every seed (unbatched under the seed vmap): "
            "a batched timestep would evaluate, and call back, on every iteration."
        )
    metrics = jax.tree.map(
        lambda value, batched: value if batched else jnp.broadcast_to(value, (axis_size, *value.shape)),
        metrics,
        metrics_batched,
    )
    jax.debug.callback(forward, timestep, metrics)
    return timestep, False


def evaluate_and_log(
    state: BaseAgentState,
    rows: Rows,
    first_log: jax.Array,
    previous_timestep: jax.Array,
    metrics_fn: Callable[[BaseAgentState, jax.Array], dict[str, jax.Array]],
    log_frequency: int,
    horizon: int,
    record: bool = False,
) -> tuple[BaseAgentState, Rows]:
    """Evaluate if this iteration crossed a multiple of `log_frequency`, within the horizon.

    With `record`, the evaluation is also handed to the logging worker.
    """
    timestep = state.collector_state.timestep
    due = (timestep // log_frequency > previous_timestep // log_frequency) & (timestep <= horizon)

    def log(operands: tuple[BaseAgentState, Rows]) -> tuple[BaseAgentState, Rows]:
        state, rows = operands
        episode_key, _ = evaluation_keys(state)
        metrics = {name: jnp.asarray(value, jnp.float32) for name, value in metrics_fn(state, episode_key).items()}
        if record:
            to_host(timestep, metrics)
        slot = state.n_logs - first_log
        rows = dict(rows)
        rows["timestep"] = rows["timestep"].at[slot].set(timestep)
        for name, value in metrics.items():
            rows[name] = rows[name].at[slot].set(value)
        return state.replace(n_logs=state.n_logs + 1), rows

    return jax.lax.cond(due, log, lambda operands: operands, (state, rows))
