"""`CriticPretrain`: the critic fitted to the expert's values before training, kept as phi*.

`CriticPretrain` rolls the expert out and fits the agent's critics to the expert's
action values; a frozen copy of the fitted parameters, phi*, stays in its state for the
rest of the run. `ExpertCriticMetrics` reads phi* (`Extension.reads`) and reports, at every
evaluation, how the agent's policy and critic compare with it. A stack with the reader and
no fitter before it is refused at construction (`ExtensionStack`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
from flax import struct

from ajax.buffers.dataset import expert_transitions
from ajax.extensions.base import Extension, ExtensionContext, check_fields
from ajax.extensions.cloning import deterministic_action, fit_expert_critic
from ajax.extensions.expert import ExpertExtension
from ajax.state import EnvironmentConfig

EXPERT_CRITIC = "expert_critic"
_PROGRESS_REPORTS = 10  # how many times a fit with progress=True prints its loss


@struct.dataclass
class ExpertCritic:
    """CriticPretrain's state: phi*, the critic parameters the fit reached, and its last TD loss."""

    phi_star: Any
    loss: jax.Array


def _print_progress(name: str, epochs: int) -> Callable[[jax.Array, jax.Array], None]:
    """The host callback that prints the fit's loss every `epochs // _PROGRESS_REPORTS` epochs."""
    every = max(epochs // _PROGRESS_REPORTS, 1)

    def report(epoch: jax.Array, loss: jax.Array) -> None:
        def show(epoch: jax.Array, loss: jax.Array) -> None:
            print(f"{name}: epoch {int(epoch) + 1}/{epochs}, TD loss {float(loss):.4g}", flush=True)

        due = ((epoch + 1) % every == 0) | (epoch + 1 == epochs)
        jax.lax.cond(due, lambda: jax.debug.callback(show, epoch, loss), lambda: None)

    return report


@dataclass(frozen=True)
class CriticPretrain(ExpertExtension):
    """Fit the critics to the expert's Q-values on `n_steps` of its experience, and keep them as phi*.

    The expert acts for `n_steps` env steps (over the agent's `n_envs` copies, in envs of its
    own, not counted in the run's timesteps), with Gaussian `noise` (agent units) on its
    actions so the critics see actions around the expert's, not only on it. The critics
    then take `epochs` passes of minibatch steps (batches of `batch_size`) with their own
    optimiser, at the critic's learning rate: fitted Q evaluation, each epoch regressing
    onto r + gamma (1 - terminated) Q(s', a_expert(s')) under the parameters the epoch
    started from (`ajax.extensions.cloning.fit_expert_critic`), gamma the agent's.

    Why temporal differences and not Monte-Carlo returns: a rollout of `n_steps` cuts
    episodes at the time limit and at its own end, where a return needs a value to
    bootstrap from anyway, and a noisy action's return continues under the noisy
    behaviour, not the expert. The TD target is the expert's Q at every stored action,
    bootstraps through a time limit and stops at a true terminal, transition by transition.
    Each epoch is one Bellman backup, so `epochs` should be of the order of a few horizons
    1 / (1 - gamma).

    The target critics start at the fit. The fit's parameters are also kept as phi*, never
    changed again, for the extensions that read it (`ExpertCriticMetrics`). It runs once, in
    fresh runs (the loop's pretrain fold); a resumed state already holds both. The last TD
    loss is reported at every evaluation as `critic_pretrain/td_loss`. `progress=True`
    prints the loss about ten times during the fit through a host callback, which a run otherwise
    never makes (a run without a logging backend makes none, so the compile cache can hold
    its program).

    SAC, TD3 and REDQ host it: the agents whose critic is an ensemble of discounted Q(s, a)
    with targets. Running normalisation is refused: the fit would hold in the units of the
    run's first statistics, which training then moves.
    """

    provides: ClassVar[frozenset[str]] = frozenset({EXPERT_CRITIC})
    needs_discounted_q_critic: ClassVar[bool] = True

    expert: Any = None
    n_steps: int = 2_000
    epochs: int = 200
    batch_size: int = 256
    noise: float = 0.1
    progress: bool = False

    def __post_init__(self) -> None:
        if self.expert is None:
            raise TypeError("CriticPretrain needs an expert: CriticPretrain(expert_fn, n_steps=...).")
        check_fields(self, ("n_steps", "epochs", "batch_size"), {"noise": "[0, inf)"}, ("progress",))

    def bind(self, env_args: EnvironmentConfig) -> CriticPretrain:
        normalization = env_args.normalization
        if normalization.observations or normalization.rewards:
            on = "normalize_observations" if normalization.observations else "normalize_rewards"
            raise ValueError(
                f"CriticPretrain fits the critic in the units it reads before training, and {on}=True moves them "
                f"as training collects: the fit would not hold. Drop {on}=True or CriticPretrain."
            )
        return super().bind(env_args)

    @property
    def gamma(self) -> float:
        """The agent's discount: the one its reward scale is set for (`NormalizationConfig.gamma`)."""
        return self.env.normalization.gamma

    def init_state(self, ctx: ExtensionContext, agent_state: Any) -> ExpertCritic:
        return ExpertCritic(agent_state.critic_state.params, jnp.full((), jnp.nan, jnp.float32))

    def pretrain(self, ctx: ExtensionContext, agent_state: Any, ext_state: ExpertCritic) -> tuple[Any, ExpertCritic]:
        rollout_key, fit_key = jax.random.split(ctx.rng)
        ticks = -(-self.n_steps // self.env.n_envs)
        transitions = expert_transitions(rollout_key, self.env, self.expert, ticks, self.noise)
        rows = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), transitions)
        next_action = jnp.clip(self.expert(rows.next_obs), -1.0, 1.0)  # what the env would execute
        report = _print_progress(self.name, self.epochs) if self.progress else None
        critic_state, loss = fit_expert_critic(
            agent_state.critic_state, rows, next_action, self.gamma, fit_key, self.epochs, self.batch_size, report
        )
        return agent_state.replace(critic_state=critic_state), ExpertCritic(critic_state.params, loss)

    def shared(self, ext_state: ExpertCritic) -> dict[str, Any]:
        return {EXPERT_CRITIC: ext_state.phi_star}

    def eval_metrics(self, ctx: ExtensionContext, agent_state: Any, ext_state: ExpertCritic) -> dict[str, jax.Array]:
        return {"critic_pretrain/td_loss": ext_state.loss}


@dataclass(frozen=True)
class ExpertCriticMetrics(Extension):
    """How the agent compares with the frozen expert critic phi*, at every evaluation.

    On the states the collector stands in, with mu the actor's deterministic action and the
    ensemble's mean: `expert_critic/q_star_policy`, Q_phi*(s, mu(s)), the expert's values
    judging the agent's action (it rises as the agent's choices approach what the expert's
    return rewards); `expert_critic/q_policy`, the current critic's Q(s, mu(s)); and
    `expert_critic/drift`, their difference, how far training has moved the critic from phi*.
    Needs CriticPretrain before it in the stack.
    """

    reads: ClassVar[frozenset[str]] = frozenset({EXPERT_CRITIC})
    needs_discounted_q_critic: ClassVar[bool] = True

    def eval_metrics(self, ctx: ExtensionContext, agent_state: Any, ext_state: Any) -> dict[str, jax.Array]:
        obs = agent_state.collector_state.last_obs
        critic, actor = agent_state.critic_state, agent_state.actor_state
        action = deterministic_action(actor, actor.params, obs)
        q_star = jnp.mean(critic.apply_fn(ctx.shared[EXPERT_CRITIC], obs, action))
        q = jnp.mean(critic.apply_fn(critic.params, obs, action))
        return {"expert_critic/q_star_policy": q_star, "expert_critic/q_policy": q, "expert_critic/drift": q - q_star}
