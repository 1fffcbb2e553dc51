"""Can an env's episodes truly terminate? Read from its step function's program, before training.

TD-MPC2's reference learns a termination head only in its `episodic` mode and stops a
non-episodic run with an error the first time an episode terminates, possibly hours in. The
question can be answered before the first step: trace the env's `step` once and ask whether
its `terminated` output is the constant False. Gymnax's Pendulum returns `jnp.array(False)`,
CartPole a comparison of its state with thresholds.

The reading propagates constants forward through the traced program: a value that depends
on no input (the key, the state, the action) is computed, and "and" with a constant False
is False whatever its other operand. Calls into nested programs (a jitted `step`) are
followed; anything else with a traced operand counts as depending on the input, so the
answer errs towards "can terminate". An action repeat terminates exactly when its inner env
does, so the inner env is read. Brax's and Playground's envs end an episode when the
simulation turns NaN: that reads as a termination.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend import core as jcore

from ajax.environments.create import ActionRepeat
from ajax.state import EnvironmentConfig

DYNAMIC = object()  # a value the program computes from its inputs
CALLS = frozenset({"pjit", "jit", "closed_call", "core_call", "remat", "checkpoint", "custom_jvp_call"})


def _inner(eqn: Any) -> jcore.ClosedJaxpr | None:
    """The nested program a call-like equation runs on its operands, as one closed jaxpr."""
    if eqn.primitive.name not in CALLS:
        return None
    for name in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        inner = eqn.params.get(name)
        if isinstance(inner, jcore.ClosedJaxpr):
            return inner
        if isinstance(inner, jcore.Jaxpr):
            return jcore.ClosedJaxpr(inner, ())
    return None


def _is_false(value: Any) -> bool:
    return value is not DYNAMIC and np.asarray(value).dtype == bool and not np.asarray(value).any()


def _propagate(closed: jcore.ClosedJaxpr, inputs: list[Any]) -> list[Any]:
    """Each output's constant value, or DYNAMIC, given each input's."""
    known: dict[Any, Any] = dict(zip(closed.jaxpr.constvars, closed.consts, strict=True))
    known.update(zip(closed.jaxpr.invars, inputs, strict=True))

    def read(var: Any) -> Any:
        return var.val if isinstance(var, jcore.Literal) else known.get(var, DYNAMIC)

    for eqn in closed.jaxpr.eqns:
        values = [read(var) for var in eqn.invars]
        inner = _inner(eqn)
        if inner is not None:
            outputs = _propagate(inner, values)
        elif eqn.primitive.name == "and" and any(map(_is_false, values)):
            shape = eqn.outvars[0].aval.shape
            outputs = [np.zeros(shape, bool)]
        elif eqn.primitive.name == "or" and all(map(_is_false, values)):
            outputs = [np.zeros(eqn.outvars[0].aval.shape, bool)]
        elif values and all(value is not DYNAMIC for value in values) and not eqn.effects:
            try:
                result = eqn.primitive.bind(*values, **eqn.params)
            except Exception:  # a primitive that cannot run outside a trace: leave it traced
                result = [DYNAMIC] * len(eqn.outvars) if eqn.primitive.multiple_results else DYNAMIC
            outputs = list(result) if eqn.primitive.multiple_results else [result]
        else:
            outputs = [DYNAMIC] * len(eqn.outvars)
        for var, value in zip(eqn.outvars, outputs, strict=True):
            known[var] = value if value is DYNAMIC else np.asarray(value)
    return [read(var) for var in closed.jaxpr.outvars]


def can_terminate(env_args: EnvironmentConfig) -> bool:
    """False only when the env's `terminated` is provably False at every step (its episodes only truncate)."""
    env, params = env_args.env, env_args.env_params
    while isinstance(env, ActionRepeat):
        env = env.env
    key = jax.random.key(0)
    _, state = env.reset(key, params)
    action = jnp.zeros((env_args.action_dim,), jnp.float32) if env_args.continuous else jnp.zeros((), jnp.int32)
    closed = jax.make_jaxpr(lambda key, state, action: env.step(key, state, action, params)[3])(key, state, action)
    n_inputs = len(closed.jaxpr.invars)
    (terminated,) = _propagate(closed, [DYNAMIC] * n_inputs)
    return not _is_false(terminated)
