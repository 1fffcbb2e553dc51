"""`CloningPretrain`: behaviour cloning of an expert before training starts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from ajax.buffers.dataset import expert_transitions
from ajax.deprecation import absent_keywords
from ajax.extensions.base import ExtensionContext, check_fields
from ajax.extensions.cloning import fit, output_layers
from ajax.extensions.expert import ExpertExtension

ABSENT_KEYWORDS = {
    "skip_actor": "the actor's cloning is all CloningPretrain does, so leave it out of extensions= "
    "(CriticPretrain fits the critics).",
    "reset_log_std": "the cloning fits the actor's mode, which no log-std parameter moves, so they come out of it "
    "as they went in; nothing to reset.",
}
"""Keywords the design pages give CloningPretrain that it does not take, each with what to do instead
(docs/extensions.md): a call passing one is told so, where Python's TypeError would only call it unexpected."""


@absent_keywords(ABSENT_KEYWORDS)
@dataclass(frozen=True)
class CloningPretrain(ExpertExtension):
    """Fit the actor to the expert's actions on `n_steps` of the expert's own experience.

    The expert acts for `n_steps` env steps (over the agent's `n_envs` copies, in envs of
    its own, not counted in the run's timesteps); the actor then takes `epochs` passes of
    minibatch cloning steps (batches of `batch_size`) with its own optimiser, at the actor's
    learning rate. It runs once, in fresh runs (the loop's pretrain fold); a resumed state
    already holds the cloned actor. The last loss is kept as this extension's state and
    reported at every evaluation as `pretrain/cloning_loss`.

    `reset_actor_head` puts the actor's output layers back to their initial parameters after
    the cloning, so training starts from the features the expert taught the hidden layers
    and a fresh map from them to actions. The optimiser keeps its state from the cloning.
    """

    expert: Any = None
    n_steps: int = 1_000
    epochs: int = 1
    batch_size: int = 256
    reset_actor_head: bool = False

    def __post_init__(self) -> None:
        if self.expert is None:
            raise TypeError("CloningPretrain needs an expert: CloningPretrain(expert_fn, n_steps=...).")
        check_fields(self, ("n_steps", "epochs", "batch_size"), flags=("reset_actor_head",))

    def init_state(self, ctx: ExtensionContext, agent_state: Any) -> jax.Array:
        return jnp.full((), jnp.nan, jnp.float32)

    def pretrain(self, ctx: ExtensionContext, agent_state: Any, ext_state: jax.Array) -> tuple[Any, jax.Array]:
        rollout_key, fit_key = jax.random.split(ctx.rng)
        ticks = -(-self.n_steps // self.env.n_envs)
        transitions = expert_transitions(rollout_key, self.env, self.expert, ticks)
        obs = transitions.obs.reshape(-1, transitions.obs.shape[-1])
        expert_action = transitions.action.reshape(obs.shape[0], -1)
        initial = agent_state.actor_state.params
        actor_state, loss = fit(agent_state.actor_state, obs, expert_action, fit_key, self.epochs, self.batch_size)
        if self.reset_actor_head:
            actor_state = actor_state.replace(params=with_initial_head(actor_state.params, initial))
        return agent_state.replace(actor_state=actor_state), loss

    def eval_metrics(self, ctx: ExtensionContext, agent_state: Any, ext_state: jax.Array) -> dict[str, jax.Array]:
        return {"pretrain/cloning_loss": ext_state}


def with_initial_head(params: Any, initial: Any) -> Any:
    """`params` with the actor's output layers taken from `initial`; refused for an actor without one."""
    heads = output_layers(initial)
    if not heads:
        raise ValueError(
            "CloningPretrain(reset_actor_head=True) resets the actor's output layer, and this actor has none (a PID "
            "actor's gains map the errors to the action). Drop reset_actor_head."
        )
    layers = {**params["params"], **{name: initial["params"][name] for name in heads}}
    return {**params, "params": layers}
