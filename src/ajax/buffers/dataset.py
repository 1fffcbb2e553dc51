"""Offline data: a fixed set of transitions, and `collect_dataset` to roll an expert out for one.

An offline agent (IQL) never steps its environment while it trains: it learns from a
`Dataset` gathered beforehand. `collect_dataset` gathers one with Ajax's own collection
(`collect_experience`, every env copy stepped as one operation, the whole rollout one
jitted scan), so a dataset keeps the same conventions as online replay: the action in the
agent's [-1, 1] units, `next_obs` the observation the step reached (the final one at an
episode's end), and a time limit (`truncated`) kept apart from a true terminal
(`terminated`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from ajax.environments.create import kept_observations, prepare_env
from ajax.environments.interaction import Transition, collect_experience, init_collector
from ajax.environments.obs_norm import NormalizationConfig
from ajax.environments.utils import ExpertInAgentUnits
from ajax.state import BaseAgentState, EnvironmentConfig

# An action this far outside [-1, 1] is taken for one in env units, not the agent's.
_UNIT_TOLERANCE = 1e-5


@struct.dataclass
class Dataset:
    """Transitions as arrays with one leading axis of `size` steps.

    Observations are raw (no running normalisation); actions are in agent units, clipped to
    [-1, 1] (the action the env executed), or indices for a discrete env.
    """

    obs: jax.Array  # (size, observation_dim)
    action: jax.Array  # (size, action_dim), or (size,) indices
    reward: jax.Array  # (size,)
    next_obs: jax.Array  # (size, observation_dim): the final observation when an episode ended
    terminated: jax.Array  # (size,) bool: a true terminal, no bootstrap past it
    truncated: jax.Array  # (size,) bool: a time limit, bootstrap from next_obs

    @property
    def size(self) -> int:
        return self.obs.shape[0]

    def sample(self, key: jax.Array, batch_size: int) -> Transition:
        """`batch_size` transitions drawn uniformly with replacement (as IQL's code samples)."""
        index = jax.random.randint(key, (batch_size,), 0, self.size)
        return Transition(
            obs=self.obs[index],
            action=self.action[index],
            reward=self.reward[index],
            next_obs=self.next_obs[index],
            terminated=self.terminated[index],
            truncated=self.truncated[index],
        )


def check_dataset(dataset: Any, env_args: EnvironmentConfig, agent: str) -> Dataset:
    """The dataset as float32/bool arrays, or a ValueError naming the field that does not fit the env."""
    if not isinstance(dataset, Dataset):
        raise TypeError(
            f"{agent} learns offline from a Dataset (ajax.buffers.dataset), got {type(dataset).__name__}. "
            "Build one with collect_dataset(env_id, expert, n_steps, seed) or Dataset(obs=..., action=..., ...)."
        )
    size = int(np.shape(dataset.obs)[0]) if np.ndim(dataset.obs) else 0
    if size < 1:
        raise ValueError(f"{agent}'s dataset holds no transition.")
    action_shape = (size, env_args.action_dim) if env_args.continuous else (size,)
    observation_shape, observation_dtype = _kept_observation(env_args, agent)
    expected = {
        "obs": (size, *observation_shape),
        "action": action_shape,
        "reward": (size,),
        "next_obs": (size, *observation_shape),
        "terminated": (size,),
        "truncated": (size,),
    }
    for name, shape in expected.items():
        got = tuple(np.shape(getattr(dataset, name)))
        if got != shape:
            raise ValueError(
                f"{agent}'s dataset does not fit {env_args.env.name}: {name} has shape {got}, expected {shape} "
                f"({size} transitions, observations of shape {observation_shape}, action_dim={env_args.action_dim})."
            )
    checked = Dataset(
        obs=jnp.asarray(dataset.obs, observation_dtype),
        action=jnp.asarray(dataset.action, jnp.float32 if env_args.continuous else jnp.int32),
        reward=jnp.asarray(dataset.reward, jnp.float32),
        next_obs=jnp.asarray(dataset.next_obs, observation_dtype),
        terminated=jnp.asarray(dataset.terminated, bool),
        truncated=jnp.asarray(dataset.truncated, bool) & ~jnp.asarray(dataset.terminated, bool),
    )
    refuse_nonfinite(checked, f"{agent}'s dataset")
    if env_args.continuous and float(jnp.max(jnp.abs(checked.action))) > 1.0 + _UNIT_TOLERANCE:
        raise ValueError(
            f"{agent}'s dataset holds actions outside [-1, 1]: actions must be in the agent's units. Map env-unit "
            "actions with ajax.environments.utils.env_action_to_agent and clip them, or collect with collect_dataset."
        )
    return checked


def refuse_nonfinite(dataset: Any, whose: str) -> None:
    """Refuse a dataset with a NaN or an infinity in any float field, naming the field and its first row.

    Offline data enters from outside the run, so it is checked where it enters: inside the
    compiled program one NaN reward would surface only as a non-finite loss some updates
    later (the non-finite guard's report), with nothing pointing back at the row. `whose`
    names the dataset in the message ("IQL's dataset", a file's path).
    """
    for field in dataclasses.fields(dataset):
        values = getattr(dataset, field.name)
        if not field.metadata.get("pytree_node", True) or not jnp.issubdtype(jnp.result_type(values), jnp.floating):
            continue
        values = jnp.atleast_1d(jnp.asarray(values))
        finite = jnp.isfinite(values).reshape(values.shape[0], -1).all(axis=1)
        if bool(finite.all()):
            continue
        row = int(jnp.argmin(finite))
        in_row = np.asarray(values[row], np.float64).ravel()
        first = in_row[~np.isfinite(in_row)][0]
        what = "a NaN" if np.isnan(first) else f"an infinity ({first})"
        raise ValueError(
            f"{whose} holds {what} in {field.name} at index {row:,} (of {values.shape[0]:,}): clean the data before "
            "training; Ajax will not train on it."
        )


def _kept_observation(env_args: EnvironmentConfig, agent: str) -> tuple[tuple[int, ...], str]:
    """One stored observation's shape and dtype: a flat float32 vector, or a frame as an image
    encoder keeps it (collect_dataset(..., keep_observations=True) stores it so)."""
    part = env_args.one_array(f"{agent}'s dataset")
    return ((env_args.observation_dim,), "float32") if part is None else (part.shape, part.dtype)


def expert_transitions(
    key: jax.Array, env_args: EnvironmentConfig, expert: ExpertInAgentUnits, n_ticks: int, noise: float = 0.0
) -> Transition:
    """`n_ticks` steps of every env copy under `expert`, traced: leading axes (ticks, n_envs).

    The expert reads raw observations (no running normalisation) and a stateful one gets
    its state back every step, restarted with each episode. Actions are stored in agent
    units, `noise` added to continuous ones, clipped to [-1, 1]. The caller's state is not
    read or advanced: `key` starts envs of the rollout's own.
    """
    env_args = dataclasses.replace(env_args, normalization=NormalizationConfig())

    def act(state: BaseAgentState, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, Any]:
        action, expert_state = expert.act(obs, state.collector_state.expert_state)
        if env_args.continuous:
            action = jnp.clip(action + noise * jax.random.normal(key, action.shape), -1.0, 1.0)
        return action, expert_state

    def tick(state: BaseAgentState, _: None) -> tuple[BaseAgentState, Transition]:
        state, transition = collect_experience(state, act, env_args)
        done = transition.terminated | transition.truncated
        fresh = expert.init_state(env_args.n_envs)
        expert_state = jax.tree.map(
            lambda new, old: jnp.where(done.reshape(-1, *([1] * (old.ndim - 1))), new, old),
            fresh,
            transition.extras,
        )
        collector = state.collector_state.replace(expert_state=expert_state)
        return state.replace(collector_state=collector), transition.replace(extras=())

    env_key, rng = jax.random.split(key)
    collector = init_collector(env_key, env_args).replace(expert_state=expert.init_state(env_args.n_envs))
    state = BaseAgentState(
        rng=rng,
        actor_state=None,
        critic_state=None,
        collector_state=collector,
        eval_rng=rng,
        n_updates=jnp.zeros((), jnp.int32),
        n_logs=jnp.zeros((), jnp.int32),
    )
    return jax.lax.scan(tick, state, None, length=n_ticks)[1]


def collect_dataset(
    env: str | Any | EnvironmentConfig,
    expert: Callable[..., Any],
    n_steps: int,
    seed: int = 0,
    *,
    noise: float = 0.0,
    n_envs: int = 1,
    episode_length: int | None = None,
    action_repeat: int = 1,
    env_params: Any = None,
    keep_observations: bool = False,
) -> Dataset:
    """`n_steps` transitions of `expert` acting in `env`, as one jitted program.

    `keep_observations` stores each observation in its own shape and stored dtype (frames as
    uint8), as an agent behind an image encoder keeps them; by default they are flat float32
    vectors. The expert reads them as stored.

    `env` is an id, a gymnax-style env object or an `EnvironmentConfig` (`agent.env_args`).
    `expert` is written in env units (a function of raw observations, or a `StatefulExpert`,
    whose state restarts with each episode) or is already an `ExpertInAgentUnits`. `noise`
    adds N(0, noise^2) to each continuous action in agent units: an expert that acts
    exactly the same in every state it meets covers only its own trajectories, and a policy
    learnt from them has seen nothing of the states its own small errors lead to. The
    dataset stores the action mapped to agent units, noise added, clipped to [-1, 1]: the
    action the env executed, which a policy acting in [-1, 1] can reproduce. `n_envs` copies
    step side by side; each copy's steps lie contiguous in the dataset (copy-major).
    """
    if isinstance(env, EnvironmentConfig):
        env_args = dataclasses.replace(env, n_envs=n_envs)
    else:
        env_args = prepare_env(
            env, n_envs=n_envs, episode_length=episode_length, action_repeat=action_repeat, env_params=env_params
        )
    if keep_observations and env_args.observation_parts is None:
        env_args = kept_observations(env_args, normalized=False)
    if noise < 0 or (noise > 0 and not env_args.continuous):
        raise ValueError(f"noise is a standard deviation in continuous agent units (>= 0), got {noise}.")
    if n_steps < 1 or n_steps % n_envs:
        raise ValueError(f"n_steps must be a positive multiple of n_envs={n_envs}, got {n_steps}.")
    if isinstance(expert, ExpertInAgentUnits):
        policy = expert
    else:
        policy = ExpertInAgentUnits.for_env(expert, env_args, "collect_dataset's expert")

    def rollout(key: jax.Array) -> Transition:
        steps = expert_transitions(key, env_args, policy, n_steps // n_envs, noise)
        # (ticks, n_envs, ...) -> (n_envs * ticks, ...): each copy's episodes stay in order.
        return jax.tree.map(lambda x: jnp.swapaxes(x, 0, 1).reshape(n_steps, *x.shape[2:]), steps)

    steps = jax.jit(rollout)(jax.random.PRNGKey(seed))
    return Dataset(
        obs=steps.obs,
        action=steps.action,
        reward=steps.reward,
        next_obs=steps.next_obs,
        terminated=steps.terminated,
        truncated=steps.truncated,
    )
