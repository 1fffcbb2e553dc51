"""Extensions in which the expert acts: a residual on it, a hand-over from it, exploration by it.

All three implement the `action` phase, which SAC's action pipeline folds after drawing its
own action. `ResidualPolicy` makes the expert part of the environment the agent acts in;
`JSRLCurriculum` and `EDGEExploration` let the expert take some steps over, and the replay
stores what the expert did, which SAC learns from off-policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from ajax.extensions.base import ExtensionContext, check_fields
from ajax.extensions.expert import ExpertExtension


def residual_action(expert_action: jax.Array, action: jax.Array, scale: float) -> jax.Array:
    """a = clip(a_expert(s) + scale * a_agent, -1, 1), in agent units."""
    return jnp.clip(expert_action + scale * action, -1.0, 1.0)


def jsrl_guide_steps(step: jax.Array, total_steps: int, horizon: int, n_stages: int) -> jax.Array:
    """h(t) = horizon * (1 - i / n_stages), i = floor((n_stages + 1) t / T) capped at n_stages.

    The run is cut into n_stages + 1 equal parts; in part i the guide acts for the first
    h steps of every episode, and in the last the agent acts alone.
    """
    stage = jnp.minimum((n_stages + 1) * step // max(total_steps, 1), n_stages)
    return jnp.round(horizon * (1.0 - stage / n_stages)).astype(jnp.int32)


def linear_decay(step: jax.Array, total_steps: int, start: float, fraction: float) -> jax.Array:
    """start at step 0, falling linearly to 0 at `fraction` of the run, 0 after."""
    end = max(fraction * total_steps, 1.0)
    return start * jnp.clip(1.0 - step / end, 0.0, 1.0)


def follow_expert(
    key: jax.Array, probability: jax.Array, expert_action: jax.Array, action: jax.Array, noise: float
) -> jax.Array:
    """Each env copy's `action` replaced, with `probability`, by the expert's plus N(0, noise^2), clipped to [-1, 1].

    EDGE's rule, and SAC's expert-guided exploration's (`ajax.agents.SAC.action_pipeline`) with no noise.
    """
    coin_key, noise_key = jax.random.split(key)
    follow = jax.random.uniform(coin_key, action.shape[:1]) < probability
    expert = expert_action + noise * jax.random.normal(noise_key, action.shape)
    return jnp.where(follow[:, None], jnp.clip(expert, -1.0, 1.0), action)


@dataclass(frozen=True)
class ResidualPolicy(ExpertExtension):
    """The agent learns a correction on top of the expert (Silver et al. 2018, arXiv:1812.06298).

    The env executes clip(a_expert(s) + scale * a, -1, 1) for the agent's action a, in
    collection and in evaluation alike: the expert is part of the environment the agent
    acts in, so the replay keeps the agent's own action a and the critic learns Q(s, a) of
    that environment. An agent whose residual is near zero starts at the expert's return.
    """

    part_of_env: ClassVar[bool] = True

    expert: Any = None
    scale: float = 1.0

    def __post_init__(self) -> None:
        if self.expert is None:
            raise TypeError("ResidualPolicy needs an expert: ResidualPolicy(expert_fn).")
        check_fields(self, intervals={"scale": "(0, inf)"})

    def action(self, ctx: ExtensionContext, agent_state: Any, ext_state: Any, obs: jax.Array, action: jax.Array):
        return residual_action(self.expert_action(agent_state, obs), action, self.scale)


@dataclass(frozen=True)
class JSRLCurriculum(ExpertExtension):
    """Jump-start RL (Uchendu et al. 2023, arXiv:2204.02372): the expert guides each episode's start.

    The expert acts for the first h steps of every episode and the agent after, so the
    agent first learns from the states the expert reaches and then from ever earlier ones.
    h falls from `horizon` to 0 in `n_stages` hand-overs over the run's horizon
    (`jsrl_guide_steps`). The paper moves to the next stage once the evaluation return
    reaches a threshold; a compiled run with a fixed budget follows the schedule instead.
    The agent counts each env copy's steps in its episode for this extension. Logs
    `jsrl/guide_steps`.
    """

    reads_episode_steps: ClassVar[bool] = True

    expert: Any = None
    horizon: int = 100
    n_stages: int = 10

    def __post_init__(self) -> None:
        if self.expert is None:
            raise TypeError("JSRLCurriculum needs an expert: JSRLCurriculum(expert_fn, horizon=...).")
        check_fields(self, ("horizon", "n_stages"))

    def guide_steps(self, ctx: ExtensionContext) -> jax.Array:
        return jsrl_guide_steps(ctx.step, ctx.total_steps, self.horizon, self.n_stages)

    def action(self, ctx: ExtensionContext, agent_state: Any, ext_state: Any, obs: jax.Array, action: jax.Array):
        guided = ctx.episode_steps < self.guide_steps(ctx)
        return jnp.where(guided[:, None], self.expert_action(agent_state, obs), action)

    def eval_metrics(self, ctx: ExtensionContext, agent_state: Any, ext_state: Any) -> dict[str, jax.Array]:
        return {"jsrl/guide_steps": self.guide_steps(ctx)}


@dataclass(frozen=True)
class EDGEExploration(ExpertExtension):
    """Expert-directed guided exploration (EDGE): the expert, with noise, takes some steps over.

    An epsilon-greedy scheme whose exploratory branch is the expert instead of a uniform
    draw; the schedule and the noise are Ajax's own choices, not a paper's. At every step
    each env copy follows the expert with probability epsilon(t), which
    falls linearly from `epsilon` to 0 at `decay_fraction` of the run: early on the agent
    sees the states the expert leads to and the actions that got there, later it explores
    on its own. The expert's action is perturbed by N(0, noise^2) in agent units, so the
    critic sees actions around the expert's, not one action per state. Logs
    `edge/epsilon`.
    """

    expert: Any = None
    epsilon: float = 0.5
    decay_fraction: float = 0.5
    noise: float = 0.1

    def __post_init__(self) -> None:
        if self.expert is None:
            raise TypeError("EDGEExploration needs an expert: EDGEExploration(expert_fn).")
        check_fields(self, intervals={"epsilon": "[0, 1]", "decay_fraction": "(0, 1]", "noise": "[0, inf)"})

    def probability(self, ctx: ExtensionContext) -> jax.Array:
        return linear_decay(ctx.step, ctx.total_steps, self.epsilon, self.decay_fraction)

    def action(self, ctx: ExtensionContext, agent_state: Any, ext_state: Any, obs: jax.Array, action: jax.Array):
        return follow_expert(ctx.rng, self.probability(ctx), self.expert_action(agent_state, obs), action, self.noise)

    def eval_metrics(self, ctx: ExtensionContext, agent_state: Any, ext_state: Any) -> dict[str, jax.Array]:
        return {"edge/epsilon": self.probability(ctx)}
