"""Behaviour cloning: the loss that pulls an actor towards an expert's actions, and its fit.

`CloningPretrain` fits the actor on the expert's own experience before training;
`ImitationLoss` adds the same loss to every actor step. Both compare the actor's
deterministic action with the expert's, in agent units: the mode of a stochastic actor
(SAC's squashed Gaussian), the output of a deterministic one (TD3's).
"""

from __future__ import annotations

from collections.abc import Callable
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


def minibatch_epochs(
    train_state: LoopTrainState,
    n: int,
    key: jax.Array,
    epochs: int,
    batch_size: int,
    epoch_loss: Callable[[LoopTrainState], Callable[[Any, jax.Array], jax.Array]],
    after_epoch: Callable[[jax.Array, jax.Array], None] | None = None,
) -> tuple[LoopTrainState, jax.Array]:
    """`epochs` passes of minibatch steps over `n` rows, with the train state's own optimiser.

    Each epoch shuffles the rows and takes every whole batch of `batch_size`. `epoch_loss`
    is called with the state at the epoch's start and returns the loss of (params, row
    indices): a regression whose targets stay fixed through the epoch builds them there.
    `after_epoch(epoch, loss)` runs after each epoch (a progress report). Returns the state
    and the last step's loss.
    """
    batches = max(n // batch_size, 1)
    size = min(batch_size, n)

    def epoch(carry: tuple[LoopTrainState, jax.Array], inputs: tuple[jax.Array, jax.Array]):
        index, key = inputs
        order = jax.random.permutation(key, n)[: batches * size].reshape(batches, size)
        loss_of = epoch_loss(carry[0])

        def step(carry: tuple[LoopTrainState, jax.Array], rows: jax.Array):
            train_state, _ = carry
            loss, grads = jax.value_and_grad(loss_of)(train_state.params, rows)
            return (train_state.apply_gradients(grads=grads), loss), None

        carry = jax.lax.scan(step, carry, order)[0]
        if after_epoch is not None:
            after_epoch(index, carry[1])
        return carry, None

    keys = jax.random.split(key, epochs)
    return jax.lax.scan(epoch, (train_state, jnp.zeros(())), (jnp.arange(epochs), keys))[0]


def fit(
    actor_state: LoopTrainState, obs: jax.Array, expert_action: jax.Array, key: jax.Array, epochs: int, batch_size: int
) -> tuple[LoopTrainState, jax.Array]:
    """`epochs` passes of minibatch cloning steps over (obs, expert_action), with the actor's own optimiser.

    Each epoch shuffles the data and takes every whole batch; returns the last step's loss.
    """

    def epoch_loss(actor_state: LoopTrainState) -> Callable[[Any, jax.Array], jax.Array]:
        return lambda params, rows: cloning_loss(actor_state, params, obs[rows], expert_action[rows])

    return minibatch_epochs(actor_state, obs.shape[0], key, epochs, batch_size, epoch_loss)


def expert_q_targets(
    critic_state: LoopTrainState, params: Any, transitions: Any, next_action: jax.Array, gamma: float | jax.Array
) -> jax.Array:
    """r + gamma (1 - terminated) mean_i Q_i(s', a'_expert) under `params`: the expert's Bellman target.

    A time limit (`truncated`) bootstraps from the final observation like any other step;
    only a true terminal stops the sum. The ensemble's mean, not its minimum: evaluating a
    fixed policy needs no guard against the maximisation bias the minimum counters.
    """
    next_q = jnp.mean(critic_state.apply_fn(params, transitions.next_obs, next_action), axis=0)
    alive = 1.0 - transitions.terminated.astype(jnp.float32)
    return transitions.reward + gamma * alive * next_q


def fit_expert_critic(
    critic_state: LoopTrainState,
    transitions: Any,
    next_action: jax.Array,
    gamma: float | jax.Array,
    key: jax.Array,
    epochs: int,
    batch_size: int,
    after_epoch: Callable[[jax.Array, jax.Array], None] | None = None,
) -> tuple[LoopTrainState, jax.Array]:
    """Fitted Q evaluation of the expert: each epoch, every critic regresses onto the targets
    `expert_q_targets` gives under the parameters the epoch started from.

    `transitions` holds flat rows (obs, action, reward, next_obs, terminated) and
    `next_action` the expert's action at each next_obs. Each epoch is one Bellman backup of
    the expert's Q, so the fit needs epochs of the order of the horizon 1 / (1 - gamma).
    Returns the state (target parameters set to the fit) and the last step's TD loss.
    """

    def epoch_loss(critic_state: LoopTrainState) -> Callable[[Any, jax.Array], jax.Array]:
        target = jax.lax.stop_gradient(
            expert_q_targets(critic_state, critic_state.params, transitions, next_action, gamma)
        )

        def loss(params: Any, rows: jax.Array) -> jax.Array:
            q = critic_state.apply_fn(params, transitions.obs[rows], transitions.action[rows])
            return 0.5 * jnp.sum(jnp.mean(jnp.square(q - target[rows]), axis=-1))

        return loss

    n = transitions.obs.shape[0]
    critic_state, loss = minibatch_epochs(critic_state, n, key, epochs, batch_size, epoch_loss, after_epoch)
    return critic_state.replace(target_params=critic_state.params), loss
