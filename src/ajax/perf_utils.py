"""`build_resumable_train`: init or resume, then one jitted loop over the iterations."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from ajax.state import BaseAgentState


@struct.dataclass
class LoopCarry:
    """The scan's carry: the agent state, the evaluation rows, and the call's first log number."""

    state: BaseAgentState
    rows: Any
    first_log: jax.Array


def build_resumable_train(
    fresh_state: Callable[[jax.Array], BaseAgentState],
    iteration: Callable[[LoopCarry], LoopCarry],
    num_iterations: int,
    empty_rows: Callable[[], Any] = lambda: None,
) -> Callable[..., tuple[BaseAgentState, Any]]:
    """One seed's run: `train(key, initial_state, n_iterations)` returns the final state and the rows.

    On a fresh run (`initial_state=None`) the state comes from `fresh_state(key)`; a resumed
    run takes the state passed in, and the key is unused, so a run split in two follows
    the keys of one uninterrupted call. `n_iterations` (by default `num_iterations`) may be
    traced: the program then runs whatever count a call brings, so calls that differ only in
    their budget (a run and its resumed legs, a longer run after a short one) share one
    compiled program.
    """

    def train(
        key: jax.Array, initial_state: BaseAgentState | None = None, n_iterations: jax.Array | int | None = None
    ) -> tuple[BaseAgentState, Any]:
        state = fresh_state(key) if initial_state is None else initial_state
        carry = LoopCarry(state=state, rows=empty_rows(), first_log=state.n_logs)
        count = num_iterations if n_iterations is None else n_iterations
        carry = jax.lax.fori_loop(0, count, lambda _, carry: iteration(carry), carry)
        return carry.state, carry.rows

    return train


def traced_once(fn: Callable) -> Callable:
    """`fn` under jit, so that reading its output shape and then calling it trace it once.

    `jax.eval_shape(f, ...)` traces `f`; calling a jitted `f` at the same shapes afterwards
    reuses that trace instead of running the Python again. Scans and branches that need an
    output's shape before they run `f` would otherwise trace it twice, and twice again at
    every level they nest. XLA inlines the nested call, so the compiled program is the same.
    """
    return jax.jit(fn)


def final_aux_scan(fn: Callable[[Any, Any], tuple[Any, Any]], init: Any, xs: Any = None, length: int | None = None):
    """A scan that keeps only the last step's metrics instead of stacking every step's."""
    fn = traced_once(fn)
    _, template = jax.eval_shape(fn, init, jax.tree.map(lambda a: a[0], xs) if xs is not None else None)
    empty = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), template)

    def body(carry, x):
        inner, _ = carry
        inner, aux = fn(inner, x)
        return (inner, aux), None

    (carry, aux), _ = jax.lax.scan(body, (init, empty), xs, length=length)
    return carry, aux
