"""Collecting experience: act, step every env copy as one operation, store, count.

Gymnax 1.x steps return `terminated` and `truncated` apart, auto-reset, and keep the
observation the episode ended on. A `Transition` keeps both flags and that final
observation as `next_obs`, so every agent bootstraps at a time limit and never past a
true terminal.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from ajax import nonfinite
from ajax.environments.obs_norm import init_normalizer, observe_reset, observe_step, raw_observation
from ajax.environments.utils import (
    ExpertInAgentUnits,
    allowed_uniformly,
    stored_observation,
    to_env_action,
    uniform_action,
)
from ajax.schedule import Schedule, at
from ajax.state import ACTION_MASK, ENV_AXIS, MASKED, BaseAgentState, CollectorState, EnvironmentConfig
from ajax.wrappers import step_without_reset, steps_through_step_env


@struct.dataclass
class Transition:
    """One step of every env copy (leading axis n_envs), or a rollout of them."""

    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    next_obs: jax.Array  # the observation the step reached: the final one when the episode ended
    terminated: jax.Array
    truncated: jax.Array
    extras: Any = ()  # what the behaviour policy adds, e.g. PPO's log-probability and value


# What a replay stores of each transition (not the behaviour policy's extras).
REPLAY_FIELDS = frozenset({"obs", "action", "reward", "next_obs", "terminated", "truncated"})

# The behaviour policy collection calls: (state, observations, key) -> (actions, extras), or
# (actions, extras, executed) when the env executes other actions than those stored (a
# residual policy on a base controller: the replay keeps the agent's own).
ActionPipeline = Callable[[BaseAgentState, jax.Array, jax.Array], tuple[Any, ...]]
# (state after the step, the observations the step reached) -> extras read there (a value to bootstrap from)
Bootstrap = Callable[[BaseAgentState, jax.Array], dict[str, jax.Array]]
# From the policy at the last observations, a key and the timestep, the action to take.
Explore = Callable[[Any, jax.Array, jax.Array], jax.Array]


def reset_envs(key: jax.Array, env_args: EnvironmentConfig) -> tuple[jax.Array, Any]:
    keys = jax.random.split(key, env_args.n_envs)
    reset = jax.vmap(env_args.env.reset, in_axes=(0, None), axis_name=ENV_AXIS)
    obs, env_state = reset(keys, env_args.env_params)
    return stored_observation(obs, env_args), env_state


def step_envs(
    key: jax.Array, env_state: Any, action: jax.Array, env_args: EnvironmentConfig, reset: bool = True
) -> tuple[jax.Array, Any, jax.Array, jax.Array, jax.Array, jax.Array]:
    """Step every copy once: (obs after auto-reset, state, reward, terminated, truncated, final obs).

    `reset=False`, for episodes counted only to their first end (the evaluation's), leaves the
    auto-reset out where the env's step is `step_env` and a reset (`steps_through_step_env`):
    the same transitions up to each end, and no reset compiled into the caller's loop."""
    keys = jax.random.split(key, env_args.n_envs)
    env_action = to_env_action(action, env_args)
    env = env_args.env
    one_step = env.step if reset or not steps_through_step_env(env) else functools.partial(step_without_reset, env)
    step = jax.vmap(one_step, in_axes=(0, 0, 0, None), axis_name=ENV_AXIS)
    obs, env_state, reward, terminated, truncated, info = step(keys, env_state, env_action, env_args.env_params)
    terminated = jnp.asarray(terminated, bool)
    truncated = jnp.asarray(truncated, bool) & ~terminated  # a true terminal wins a tie
    return (
        stored_observation(obs, env_args),
        env_state,
        jnp.asarray(reward, jnp.float32).reshape(env_args.n_envs),
        terminated,
        truncated,
        stored_observation(info["final_observation"], env_args),
    )


def init_collector(key: jax.Array, env_args: EnvironmentConfig, buffer_state: Any = None) -> CollectorState:
    obs, env_state = reset_envs(key, env_args)
    n = env_args.n_envs
    normalizer = init_normalizer(env_args.normalization, env_args.observation_shape, n)
    normalizer, obs = observe_reset(normalizer, obs, env_args.normalization)
    return CollectorState(
        env_state=env_state,
        last_obs=obs,
        timestep=jnp.zeros((), jnp.int32),
        episodic_return=jnp.zeros((n,), jnp.float32),
        last_episodic_return=jnp.full((n,), jnp.nan, jnp.float32),
        buffer_state=buffer_state,
        normalizer=normalizer,
    )


def collect_experience(
    state: BaseAgentState,
    pipeline: ActionPipeline,
    env_args: EnvironmentConfig,
    bootstrap: Bootstrap | None = None,
) -> tuple[BaseAgentState, Transition]:
    """One step of every env copy under the behaviour policy; the timestep grows by n_envs.

    A recurrent agent's pipeline also returns, as `extras["memory"]`, its carries after
    reading the observations; the collector keeps them, marking the envs whose episode
    ended so the next step starts them afresh. `bootstrap(state, final_obs)` then adds
    extras read at the observation each step reached, with the carries the step left.
    Observations whose action mask allowed no action are counted in the run's record.
    """
    state, (act_key, step_key) = state.next_keys(2)
    collector = state.collector_state
    if env_args.action_masked:
        state = nonfinite.record_no_action(state, collector.last_obs[ACTION_MASK], collector.timestep)
    action, extras, *executed = pipeline(state, collector.last_obs, act_key)
    memory = None
    if isinstance(extras, dict) and "memory" in extras:
        extras = dict(extras)
        memory = extras.pop("memory")
    obs, env_state, reward, terminated, truncated, final_obs = step_envs(
        step_key, collector.env_state, executed[0] if executed else action, env_args
    )
    done = terminated | truncated
    if collector.episode_steps is not None:
        collector = collector.replace(episode_steps=jnp.where(done, 0, collector.episode_steps + 1))
    episodic_return = collector.episodic_return + reward  # in the env's own units
    normalizer, obs, final_obs, reward = observe_step(
        collector.normalizer, obs, final_obs, reward, done, env_args.normalization
    )
    collector = collector.replace(
        normalizer=normalizer,
        env_state=env_state,
        last_obs=obs,
        timestep=collector.timestep + env_args.n_envs,
        episodic_return=jnp.where(done, 0.0, episodic_return),
        last_episodic_return=jnp.where(done, episodic_return, collector.last_episodic_return),
    )
    if memory is not None:
        collector = collector.replace(memory=memory.replace(episode_start=done))
    if bootstrap is not None:
        extras = {**extras, **bootstrap(state.replace(collector_state=collector), final_obs)}
    transition = Transition(
        obs=state.collector_state.last_obs,
        action=action,
        reward=reward,
        next_obs=final_obs,
        terminated=terminated,
        truncated=truncated,
        extras=extras,
    )
    return state.replace(collector_state=collector), transition


def explore_pipeline(
    explore: Explore,
    policy: Callable[[BaseAgentState, jax.Array], Any],
    env_args: EnvironmentConfig,
    warmup: Callable[[BaseAgentState], jax.Array] | None = None,
    expert: ExpertInAgentUnits | None = None,
) -> ActionPipeline:
    """The action pipeline of an agent whose behaviour is its policy plus exploration.

    During the warm-up (`warmup(state)` true, an unbatched predicate) actions are drawn
    uniformly, or are a stateless `expert`'s on the raw observations, and the policy is not
    evaluated at all.
    """

    def act(state: BaseAgentState, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, Any]:
        timestep = state.collector_state.timestep

        def from_policy(key: jax.Array) -> jax.Array:
            return explore(policy(state, obs), key, timestep)

        def uniform(key: jax.Array) -> jax.Array:
            if expert is not None and not expert.stateful:
                return expert(raw_observation(state.collector_state.normalizer, obs))
            return uniform_action(key, env_args, env_args.n_envs, obs)

        if warmup is None:
            return from_policy(key), ()
        return jax.lax.cond(warmup(state), uniform, from_policy, key), ()

    return act


def sample_policy(pi: Any, key: jax.Array, step: jax.Array) -> jax.Array:
    """Explore by sampling the policy's own distribution (SAC, PPO)."""
    del step
    return pi.sample(seed=key)


def epsilon_greedy(epsilon: Schedule, masked: bool = False) -> Explore:
    """With probability epsilon(step) a uniform action, else the greedy one. `pi` is Q-values.

    `masked`: the Q-values of forbidden actions are `MASKED`, and the uniform action is drawn
    among the others.
    """

    def explore(q_values: jax.Array, key: jax.Array, step: jax.Array) -> jax.Array:
        coin_key, action_key = jax.random.split(key)
        greedy = jnp.argmax(q_values, axis=-1)
        if masked:
            random = allowed_uniformly(action_key, q_values > MASKED / 2)
        else:
            random = jax.random.randint(action_key, greedy.shape, 0, q_values.shape[-1])
        explore_now = jax.random.uniform(coin_key, greedy.shape) < at(epsilon, step)
        return jnp.where(explore_now, random, greedy)

    return explore


def gaussian_exploration(noise: Schedule) -> Explore:
    """The deterministic action plus N(0, noise(step)^2), clipped to [-1, 1]. `pi` is that action."""

    def explore(action: jax.Array, key: jax.Array, step: jax.Array) -> jax.Array:
        perturbed = action + at(noise, step) * jax.random.normal(key, action.shape)
        return jnp.clip(perturbed, -1.0, 1.0)

    return explore
