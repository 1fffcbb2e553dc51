"""Behaviour cloning: the loss that pulls an actor towards an expert's actions, and its fit.

`CloningPretrain` fits the actor on the expert's own experience before training;
`ImitationLoss` adds the same loss to every actor step. Both compare the actor's
deterministic action with the expert's, in agent units: the mode of a stochastic actor
(SAC's squashed Gaussian), the output of a deterministic one (TD3's).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from ajax.state import LoopTrainState


def deterministic_action(actor_state: LoopTrainState, params: Any, obs: jax.Array) -> jax.Array:
    """The actor's action without exploration: a distribution's mode, or the action itself."""
    out = actor_state.apply_fn(params, obs)
    return out.mode() if hasattr(out, "mode") else out


def cloning_loss(actor_state: LoopTrainState, params: Any, obs: jax.Array, expert_action: jax.Array) -> jax.Array:
    """E ||mu(s) - a_expert(s)||^2 over the batch, summed over action dimensions."""
    action = deterministic_action(actor_state, params, obs)
    return jnp.mean(jnp.sum(jnp.square(action - jax.lax.stop_gradient(expert_action)), axis=-1))


def output_layers(params: Any) -> tuple[str, ...]:
    """The names of an actor's output layers in its parameters: the dense layers at its top.

    Every feed-forward actor lays out its parameters alike: the hidden layers under `MLP_0`,
    the output layers beside it (`Dense_0` the mean or the action, a squashed Gaussian's
    `Dense_1` its log-std head), a state-independent log-std as `log_std`. A PID actor has
    none: its gains map the errors to the action.
    """
    return tuple(name for name in params["params"] if name.startswith("Dense_"))


def fit(
    actor_state: LoopTrainState, obs: jax.Array, expert_action: jax.Array, key: jax.Array, epochs: int, batch_size: int
) -> tuple[LoopTrainState, jax.Array]:
    """`epochs` passes of minibatch cloning steps over (obs, expert_action), with the actor's own optimiser.

    Each epoch shuffles the data and takes every whole batch; returns the last step's loss.
    """
    n = obs.shape[0]
    batches = max(n // batch_size, 1)
    size = min(batch_size, n)

    def epoch(carry: tuple[LoopTrainState, jax.Array], key: jax.Array):
        order = jax.random.permutation(key, n)[: batches * size].reshape(batches, size)

        def step(carry: tuple[LoopTrainState, jax.Array], index: jax.Array):
            actor_state, _ = carry
            loss, grads = jax.value_and_grad(
                lambda params: cloning_loss(actor_state, params, obs[index], expert_action[index])
            )(actor_state.params)
            return (actor_state.apply_gradients(grads=grads), loss), None

        return jax.lax.scan(step, carry, order)[0], None

    (actor_state, loss), _ = jax.lax.scan(epoch, (actor_state, jnp.zeros(())), jax.random.split(key, epochs))
    return actor_state, loss
