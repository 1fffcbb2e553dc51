"""Optimisers and train states built from an `OptimizerConfig`, and DreamerV3's LaProp with adaptive clipping."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.flatten_util import ravel_pytree

from ajax.networks.hyperspherical import project_weights
from ajax.state import LoopTrainState, OptimizerConfig


def with_traced_numbers(
    factory: Callable[..., optax.GradientTransformation], **numbers: Any
) -> optax.GradientTransformation:
    """`factory(**numbers)`; when any number is traced (one configuration's of a sweep, `ajax.sweep`),
    the numbers are kept in the optimiser's state instead (`optax.inject_hyperparams`).

    The transformation is a static part of the train state: built around a tracer it would
    carry that tracer into the next program, while from the state each update reads its own.
    """
    if any(isinstance(value, jax.core.Tracer) for value in numbers.values()):
        return optax.inject_hyperparams(factory)(**numbers)
    return factory(**numbers)


def make_optimizer(args: OptimizerConfig) -> optax.GradientTransformation:
    """Adam, after clipping the gradients' global norm when `max_grad_norm` is set."""

    def adam(learning_rate: float, max_grad_norm: float | None) -> optax.GradientTransformation:
        step = optax.adam(learning_rate, b1=args.b1, b2=args.b2, eps=args.eps)
        return step if max_grad_norm is None else optax.chain(optax.clip_by_global_norm(max_grad_norm), step)

    return with_traced_numbers(adam, learning_rate=args.learning_rate, max_grad_norm=args.max_grad_norm)


def new_train_state(
    module: nn.Module, key: jax.Array, args: OptimizerConfig, *inputs: Any, with_target: bool = False
) -> LoopTrainState:
    params = module.init(key, *inputs)
    return LoopTrainState.create(
        apply_fn=module.apply,
        params=params,
        tx=make_optimizer(args),
        target_params=params if with_target else None,
    )


def projected(state: LoopTrainState, with_target: bool = False) -> LoopTrainState:
    """The state with its hyperspherical kernels back on the sphere (`project_weights`): a no-op,
    tracing nothing, for networks without them. `with_target` projects the target parameters too,
    which SimbaV2 does once, at init, and never again to its Polyak average."""
    state = state.replace(params=project_weights(state.params))
    return state.replace(target_params=project_weights(state.target_params)) if with_target else state


def adaptive_gradient_clipping(clip: float = 0.3, pmin: float = 1e-3) -> optax.GradientTransformation:
    """Scale each parameter tensor's gradient g down to norm at most clip * max(pmin, ||param||).

    DreamerV3's clipping (`clip_by_agc` in danijar/dreamerv3's `embodied/jax/opt.py`): one
    Frobenius norm per tensor, g * 1 / max(1, ||g|| / (clip max(pmin, ||param||))), so a
    gradient is bounded relative to the weights it changes, and a tensor at zero (a
    zero-initialised output layer) keeps a gradient of norm up to clip * pmin. Not optax's
    `adaptive_grad_clip`, which clips per output unit. Needs `params` in `update`.
    """

    def init(params: Any) -> optax.EmptyState:
        del params
        return optax.EmptyState()

    def update(updates: Any, state: optax.EmptyState, params: Any = None) -> tuple[Any, optax.EmptyState]:
        if params is None:
            raise ValueError("adaptive_gradient_clipping needs the params: pass them to update().")

        upper = clip * jnp.maximum(pmin, tensor_norms(params))
        # The reciprocals of all tensors at once, each gradient times its own: a division per
        # tensor compiles to a kernel per tensor, and XLA turns it into this product anyway.
        scales = 1.0 / jnp.maximum(1.0, tensor_norms(updates) / upper)
        leaves, treedef = jax.tree.flatten(updates)
        clipped = [gradient * scale.astype(gradient.dtype) for gradient, scale in zip(leaves, scales, strict=True)]
        return jax.tree.unflatten(treedef, clipped), state

    return optax.GradientTransformation(init, update)


NORM_ROW = 64  # values in a row of `tensor_norms`' layout


def tensor_norms(tree: Any) -> jax.Array:
    """The Frobenius norm of each leaf of `tree`, in `jax.tree.leaves` order, in float32.

    Normed one by one, every leaf is a reduction of its own, and the compiled program a kernel or
    two per leaf and tree: DreamerV3's update at the 1m model norms its 79 parameter tensors and
    their gradients, over 300 kernels. Here the leaves are laid out in rows of `NORM_ROW` values,
    each leaf's last row padded with zeros; one reduction sums each row and one sorted segment sum
    adds each leaf's rows, so the work grows with the parameters alone. The sums are the same up to
    the order of the additions. Two calls on one tree in a program (the clipping's and the logged
    gradient norm) are computed once: XLA merges them.
    """
    leaves = [leaf.ravel().astype(jnp.float32) for leaf in jax.tree.leaves(tree)]
    rows = [-(-leaf.size // NORM_ROW) for leaf in leaves]
    padded = jnp.concatenate(
        [jnp.pad(leaf, (0, n * NORM_ROW - leaf.size)) for leaf, n in zip(leaves, rows, strict=True)]
    )
    row_sums = jnp.sum(jnp.square(padded.reshape(-1, NORM_ROW)), axis=1)
    owner = np.repeat(np.arange(len(leaves)), rows)
    return jnp.sqrt(jax.ops.segment_sum(row_sums, owner, num_segments=len(leaves), indices_are_sorted=True))


class DebiasedRMSState(NamedTuple):
    """The updates seen (int32) and the running mean of the squared gradients, per parameter."""

    count: jax.Array
    nu: Any


def scale_by_debiased_rms(beta: float = 0.999, eps: float = 1e-20) -> optax.GradientTransformation:
    """g / (sqrt(nu / (1 - beta^n)) + eps), nu <- beta nu + (1 - beta) g^2: Adam's second moment alone.

    As the reference's `scale_by_rms`: debiased, eps outside the root. optax's `scale_by_rms`
    neither debiases nor adds eps there.
    """

    def init(params: Any) -> DebiasedRMSState:
        return DebiasedRMSState(
            jnp.zeros((), jnp.int32), jax.tree.map(lambda p: jnp.zeros_like(p, jnp.float32), params)
        )

    def update(updates: Any, state: DebiasedRMSState, params: Any = None) -> tuple[Any, DebiasedRMSState]:
        del params
        count = optax.safe_increment(state.count)
        nu = jax.tree.map(lambda v, g: beta * v + (1.0 - beta) * jnp.square(g), state.nu, updates)
        correction = 1.0 - beta ** count.astype(jnp.float32)
        scaled = jax.tree.map(lambda g, v: g / (jnp.sqrt(v / correction) + eps), updates, nu)
        return scaled, DebiasedRMSState(count, nu)

    return optax.GradientTransformation(init, update)


def laprop(
    learning_rate: float = 4e-5,
    agc: float = 0.3,
    pmin: float = 1e-3,
    beta1: float = 0.9,
    beta2: float = 0.999,
    eps: float = 1e-20,
    warmup: int = 1000,
) -> optax.GradientTransformation:
    """DreamerV3's optimiser: adaptive clipping, then LaProp (Ziyin et al. 2020), with a warm-up.

    The reference's `_make_opt` (`dreamerv3/agent.py`, defaults in `dreamerv3/configs.yaml`'s
    `opt`) chains, in this order:

    1. `adaptive_gradient_clipping(agc, pmin)` (skipped at agc 0, as there);
    2. `scale_by_debiased_rms(beta2, eps)`: each gradient divided by its running RMS first;
    3. momentum on the normalised gradients, m <- beta1 m + (1 - beta1) g', debiased by
       1 - beta1^n (`optax.ema`, which is the reference's `scale_by_momentum` without Nesterov);
       Adam would instead apply the momentum before normalising;
    4. times -rate_k, rate_k = learning_rate min(k, warmup) / warmup at the k-th update counted
       from 0, so the first update is zero; constant at `learning_rate` when warmup is 0.

    Updates are to be added to the params (`optax.apply_updates`); `update` needs the params.
    The reference's weight decay (wd 0), Nesterov and decaying schedules are off by default and
    left out. Steps 2 to 4 treat each value alone: they run on every tensor at once (`raveled`),
    so their state is two vectors of all the parameters' values.
    """
    clipping = [adaptive_gradient_clipping(agc, pmin)] if agc else []
    rate = optax.linear_schedule(0.0, learning_rate, warmup) if warmup else learning_rate
    steps = [scale_by_debiased_rms(beta2, eps), optax.ema(beta1, debias=True), optax.scale_by_learning_rate(rate)]
    return optax.chain(*clipping, raveled(optax.chain(*steps)))


def raveled(inner: optax.GradientTransformation) -> optax.GradientTransformation:
    """`inner` on all the updates at once, laid end to end in one vector, and its state on such vectors.

    For transformations that treat each value alone and read no params, such as LaProp's steps
    after the clipping: the values are the same, and the compiled program holds each step once
    rather than once per tensor (DreamerV3's update at the 1m model: 79 tensors, and its program
    about 1,300 equations and 80 kernels smaller).
    """

    def init(params: Any) -> optax.OptState:
        return inner.init(ravel_pytree(params)[0])

    def update(updates: Any, state: optax.OptState, params: Any = None) -> tuple[Any, optax.OptState]:
        del params
        flat, unravel = ravel_pytree(updates)
        flat, state = inner.update(flat, state)
        return unravel(flat), state

    return optax.GradientTransformation(init, update)
