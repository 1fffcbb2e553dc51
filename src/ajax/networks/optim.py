"""Optimisers and train states built from an `OptimizerConfig`."""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import optax

from ajax.state import LoopTrainState, OptimizerConfig


def make_optimizer(args: OptimizerConfig) -> optax.GradientTransformation:
    """Adam, after clipping the gradients' global norm when `max_grad_norm` is set."""
    adam = optax.adam(args.learning_rate, b1=args.b1, b2=args.b2, eps=args.eps)
    if args.max_grad_norm is None:
        return adam
    return optax.chain(optax.clip_by_global_norm(args.max_grad_norm), adam)


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
