"""SAC's action pipeline: how collection picks the action of every step, as a static setting.

Collection calls an `ActionPipeline` (`ajax.environments.interaction`): `(state, obs, key) ->
(stored action, extras[, executed action])`. SAC's does, in order:

1. its own draw: uniform actions before `learning_starts` (a stateless `expert_policy=`'s
   instead, on SAC), then a sample of the policy (with gSDE, the policy's mean pushed by the
   round's exploration matrices); with memory, from the actor's carry
   (`ajax.agents.recurrent.recurrent_pipeline`);
2. with expert-guided exploration, each env copy takes the expert's action in place of that
   draw with probability `1 - t / total_timesteps` (EDGE's rule, `follow_expert`, decaying
   over the whole horizon and without noise); the replay stores it as the action taken, so
   SAC learns from it off-policy;
3. the extensions' `action` phase (`ExtensionStack.fold_action`: residual policy, JSRL, EDGE,
   IBRL's proposal), on what the first two chose.

`make_action_pipeline` returns an `ActionPipelineConfig`, which `SAC(action_pipeline=...)`
and `TD3(action_pipeline=...)` take: the agent checks it against its env and its memory at
construction (`checked_action_pipeline`) and builds the callable from its own policy and
exploration (TD3: Gaussian noise around its deterministic action; TD3 folds no `action`
phase). Without one an agent builds the default, which is SAC's and TD3's collection as it
has always been.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import flax.linen as nn
import jax

from ajax.agents.recurrent import recurrent_pipeline
from ajax.checks import require_counts
from ajax.environments.interaction import ActionPipeline, Explore, explore_pipeline
from ajax.environments.obs_norm import raw_observation
from ajax.environments.utils import ExpertInAgentUnits, require_stateless
from ajax.extensions import ExtensionStack
from ajax.extensions.expert_actions import follow_expert, linear_decay
from ajax.networks.memory import MemoryConfig
from ajax.state import BaseAgentState, EnvironmentConfig

Policy = Callable[[BaseAgentState, jax.Array], Any]


def _environment(env_args: EnvironmentConfig) -> tuple[Any, ...]:
    """What a pipeline made for one env must share with the agent's: the env, its observations, its action box."""
    name = getattr(env_args.env, "name", type(env_args.env).__name__)
    return name, env_args.observation_dim, env_args.action_dim, env_args.action_low, env_args.action_high


def _described(env_args: EnvironmentConfig) -> str:
    name, observation_dim, _, low, high = _environment(env_args)
    return f"{name} ({observation_dim} observations, actions in {list(low)} to {list(high)})"


@dataclass(frozen=True)
class ActionPipelineConfig:
    """An agent's collection beyond its own exploration; hashable, since the compiled program is built on it.

    `expert_policy`: the expert of expert-guided exploration, in env units as given and read in
    agent units (`ExpertInAgentUnits`) once bound to an env. `recurrent`: the agent acts from its
    actor's memory (it must have `memory=`). `env_args`: the env the pipeline acts in, the
    agent's once bound. `use_expert_guided_exploration`: each env copy takes the expert's action
    with probability `1 - t / total_timesteps`. `total_timesteps`: that decay's horizon; None
    for the run's (`train`'s `total_timesteps`, as the extensions' schedules read it).
    """

    expert_policy: Callable[..., Any] | ExpertInAgentUnits | None = None
    recurrent: bool = False
    env_args: EnvironmentConfig | None = None
    use_expert_guided_exploration: bool = False
    total_timesteps: int | None = None

    def __post_init__(self) -> None:
        """Refuse what no agent could honour, whether made by `make_action_pipeline` or directly."""
        guided, expert, env_args = self.use_expert_guided_exploration, self.expert_policy, self.env_args
        if not isinstance(self.recurrent, bool) or not isinstance(guided, bool):
            raise ValueError(
                f"recurrent and use_expert_guided_exploration must be True or False, got {self.recurrent!r} and "
                f"{guided!r}."
            )
        if env_args is not None and not isinstance(env_args, EnvironmentConfig):
            raise TypeError(
                f"env_args is an EnvironmentConfig (agent.env_args, or prepare_env('Pendulum-v1')), got "
                f"{type(env_args).__name__}."
            )
        if env_args is not None and not env_args.continuous:
            raise ValueError(
                f"The action pipeline acts in a continuous action space (SAC, TD3), but {_environment(env_args)[0]} is "
                "discrete. Make it with the env_args of a Box-action env."
            )
        if self.recurrent and expert is not None:
            raise ValueError(
                "A recurrent action pipeline takes no expert: an expert taking steps over assumes a feed-forward "
                "policy, as every expert feature with memory= does. Drop expert_policy, or make it with "
                "recurrent=False."
            )
        if guided != (expert is not None):
            raise ValueError(
                "expert_policy and use_expert_guided_exploration=True go together: expert-guided exploration lets "
                "expert_policy take steps over. Pass both, or neither (an agent's own expert_policy= takes its "
                "warm-up steps)."
            )
        if self.total_timesteps is not None:
            if not guided:
                raise ValueError(
                    "total_timesteps sets the horizon over which expert-guided exploration decays: pass "
                    "use_expert_guided_exploration=True with it, or drop it."
                )
            require_counts(total_timesteps=self.total_timesteps)
        if expert is not None:
            require_stateless(expert.expert if isinstance(expert, ExpertInAgentUnits) else expert, "Expert guidance")

    def bind(self, agent: str, env_args: EnvironmentConfig, memory: MemoryConfig | None) -> ActionPipelineConfig:
        """This pipeline for an agent's env and memory, refused where they disagree; the expert read in agent units."""
        if self.env_args is not None and _environment(self.env_args) != _environment(env_args):
            raise ValueError(
                f"action_pipeline was made for {_described(self.env_args)}, but this {agent} trains on "
                f"{_described(env_args)}. Make it with env_args= of this agent's env (agent.env_args, or "
                "prepare_env with the same id and settings)."
            )
        if self.recurrent and memory is None:
            raise ValueError(
                f"action_pipeline has recurrent=True: it acts from the actor's memory, which this {agent} has none "
                "of. Pass memory= to the agent, or make the pipeline with recurrent=False."
            )
        if memory is not None and not self.recurrent:
            raise ValueError(
                f"This {agent} has memory= and acts from its actor's memory, but action_pipeline has recurrent=False. "
                "Make it with make_action_pipeline(recurrent=True, ...), or drop memory=."
            )
        expert = self.expert_policy
        if expert is not None and not isinstance(expert, ExpertInAgentUnits):
            expert = ExpertInAgentUnits.for_env(expert, env_args, "action_pipeline's expert_policy=")
        return dataclasses.replace(self, expert_policy=expert, env_args=env_args)

    def build(
        self,
        actor: nn.Module,
        policy: Policy,
        explore: Explore,
        learning_starts: int,
        horizon: int,
        *,
        stored_state: bool = False,
        warmup_expert: ExpertInAgentUnits | None = None,
        extensions: ExtensionStack | None = None,
    ) -> ActionPipeline:
        """The pipeline collection calls, from a bound config and the agent's parts.

        `policy(state, obs)` is what `explore(pi, key, step)` draws from (a feed-forward
        actor's output); with `recurrent` the pipeline runs `actor` on its carry instead.
        `warmup_expert` takes the warm-up steps in place of uniform draws (SAC's
        `expert_policy=`); `horizon` is the run's, which guidance decays over when the config
        sets no `total_timesteps`. `extensions` fold their `action` phase last.
        """
        env_args = self.env_args
        warmup = lambda state: state.collector_state.timestep < learning_starts  # noqa: E731
        if self.recurrent:
            return recurrent_pipeline(actor, explore, env_args, warmup, stored_state)
        draw = explore_pipeline(explore, policy, env_args, warmup=warmup, expert=warmup_expert)
        if self.use_expert_guided_exploration:
            draw = self._guided(draw, horizon)
        if extensions is None or not extensions.folds("action"):
            return draw

        def act(state: BaseAgentState, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, Any, jax.Array]:
            action, extras = draw(state, obs, key)
            executed, stored = extensions.fold_action(state, obs, action)
            return stored, extras, executed

        return act

    def _guided(self, draw: ActionPipeline, horizon: int) -> ActionPipeline:
        """`draw`, each env copy's action replaced by the expert's with probability 1 - t / T, T the decay's horizon."""
        decay_horizon = horizon if self.total_timesteps is None else self.total_timesteps
        expert = self.expert_policy

        def act(state: BaseAgentState, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, Any]:
            draw_key, guide_key = jax.random.split(key)
            action, extras = draw(state, obs, draw_key)
            collector = state.collector_state
            probability = linear_decay(collector.timestep, decay_horizon, 1.0, 1.0)
            expert_action = expert(raw_observation(collector.normalizer, obs))
            return follow_expert(guide_key, probability, expert_action, action, 0.0), extras

        return act


def make_action_pipeline(
    expert_policy: Callable[..., Any] | None = None,
    recurrent: bool = False,
    env_args: EnvironmentConfig | None = None,
    use_expert_guided_exploration: bool = False,
    total_timesteps: int | None = None,
) -> ActionPipelineConfig:
    """The action pipeline `SAC(action_pipeline=...)` and `TD3(action_pipeline=...)` take, checked.

    With `use_expert_guided_exploration=True` the stateless `expert_policy` (env units, as
    every Ajax expert) takes each env copy's step with probability falling linearly from 1 at
    the first step to 0 at `total_timesteps` (None: the run's horizon), and the replay stores
    the expert's action as the action taken. `recurrent=True` acts from the actor's memory,
    for an agent with `memory=`; it takes no expert. `env_args` (`agent.env_args`, or
    `ajax.environments.create.prepare_env`) names the env the pipeline is for: the expert's
    answer is checked there now, and an agent on another env refuses the pipeline. Called
    with no argument it is the agents' default.
    """
    pipeline = ActionPipelineConfig(expert_policy, recurrent, env_args, use_expert_guided_exploration, total_timesteps)
    if expert_policy is None or env_args is None:
        return pipeline
    expert = ExpertInAgentUnits.for_env(expert_policy, env_args, "make_action_pipeline's expert_policy=")
    return dataclasses.replace(pipeline, expert_policy=expert)


def checked_action_pipeline(
    agent: str, pipeline: Any, env_args: EnvironmentConfig, memory: MemoryConfig | None
) -> ActionPipelineConfig:
    """An agent's `action_pipeline=`, bound to its env and memory; None gives the default for its memory."""
    if pipeline is None:
        pipeline = make_action_pipeline(recurrent=memory is not None)
    if not isinstance(pipeline, ActionPipelineConfig):
        raise ValueError(
            f"action_pipeline must be an ActionPipelineConfig from make_action_pipeline(...), got {pipeline!r}."
        )
    return pipeline.bind(agent, env_args, memory)
