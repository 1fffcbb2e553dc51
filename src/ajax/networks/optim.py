"""Optimisers and train states built from an `OptimizerConfig`, and DreamerV3's LaProp with adaptive clipping."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

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

        def clipped(gradient: jax.Array, param: jax.Array) -> jax.Array:
            upper = clip * jnp.maximum(pmin, jnp.linalg.norm(param.ravel()))
            return gradient / jnp.maximum(1.0, jnp.linalg.norm(gradient.ravel()) / upper)

        return jax.tree.map(clipped, updates, params), state

    return optax.GradientTransformation(init, update)


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
    left out.
    """
    chain = [adaptive_gradient_clipping(agc, pmin)] if agc else []
    chain += [scale_by_debiased_rms(beta2, eps), optax.ema(beta1, debias=True)]
    rate = optax.linear_schedule(0.0, learning_rate, warmup) if warmup else learning_rate
    return optax.chain(*chain, optax.scale_by_learning_rate(rate))
