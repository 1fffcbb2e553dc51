"""Build an environment from an id and describe it for the agents.

An id is looked up among the backends' registries; gymnax ids are available now. An
unknown id fails at construction with the closest known ids, before anything compiles.
"""

from __future__ import annotations

import difflib
import math
from typing import Any

import jax
import jax.numpy as jnp
from gymnax.environments import environment, spaces

from ajax.state import EnvironmentConfig
from ajax.wrappers import Wrapper


def gymnax_ids() -> tuple[str, ...]:
    import gymnax

    return tuple(gymnax.registered_envs)


def known_env_ids() -> tuple[str, ...]:
    """Every id `prepare_env` can build."""
    return gymnax_ids()


def unknown_env_message(env_id: str) -> str:
    ids = known_env_ids()
    close = difflib.get_close_matches(env_id, ids, n=5, cutoff=0.4)
    hint = f" Closest ids: {', '.join(close)}." if close else ""
    return (
        f"Unknown environment id {env_id!r}.{hint} Known gymnax ids: {', '.join(ids)}. "
        "Pass one of these, or a gymnax-style environment object with its params."
    )


class ActionRepeat(Wrapper):
    """Repeat each action `repeat` times, summing rewards and stopping at a termination.

    The inner env counts its own steps, so a time limit stays in raw env steps.
    """

    def __init__(self, env: environment.Environment, repeat: int):
        super().__init__(env)
        self.repeat = repeat

    def step_env(self, key, state, action, params):
        def one(carry, key):
            obs, state, total, terminated, info = carry
            obs_n, state_n, reward, term_n, info_n = self.env.step_env(key, state, action, params)
            live = jnp.logical_not(terminated | self.env.is_truncated(state, params))
            keep = lambda new, old: jax.tree.map(lambda a, b: jnp.where(live, a, b), new, old)  # noqa: E731
            carry = (
                keep(obs_n, obs),
                keep(state_n, state),
                total + jnp.where(live, reward, 0.0),
                terminated | (live & term_n),
                keep(info_n, info),
            )
            return carry, None

        obs0, state0, reward0, term0, info0 = self.env.step_env(key, state, action, params)
        carry = (obs0, state0, reward0, term0, info0)
        keys = jax.random.split(key, self.repeat - 1)
        (obs, state, total, terminated, info), _ = jax.lax.scan(one, carry, keys)
        return obs, state, total, terminated, info

    @property
    def name(self) -> str:
        return f"ActionRepeat({self.env.name}, {self.repeat})"


def _check_custom_env(env: Any) -> None:
    missing = [m for m in ("reset", "step", "action_space", "observation_space") if not hasattr(env, m)]
    if missing:
        raise TypeError(
            f"A custom environment must follow gymnax's interface; {type(env).__name__} lacks "
            f"{', '.join(missing)}. Pass a gymnax id or a gymnax.environments.Environment."
        )


def prepare_env(
    env_id: str | Any,
    *,
    n_envs: int = 1,
    episode_length: int | None = None,
    action_repeat: int = 1,
    env_params: Any = None,
) -> EnvironmentConfig:
    """The environment an agent trains on, with the settings every agent hands over."""
    if n_envs < 1:
        raise ValueError(f"n_envs must be a positive integer, got {n_envs}.")
    if action_repeat < 1:
        raise ValueError(f"action_repeat must be a positive integer, got {action_repeat}.")
    if isinstance(env_id, str):
        if env_id not in gymnax_ids():
            raise ValueError(unknown_env_message(env_id))
        import gymnax

        env, default_params = gymnax.make(env_id)
    else:
        _check_custom_env(env_id)
        env, default_params = env_id, env_id.default_params
    params = env_params if env_params is not None else default_params
    if episode_length is not None:
        params = params.replace(max_steps_in_episode=int(episode_length))
    if action_repeat > 1:
        env = ActionRepeat(env, action_repeat)

    action_space = env.action_space(params)
    obs_shape = env.observation_space(params).shape
    observation_dim = int(math.prod(obs_shape)) if obs_shape else 1
    max_steps = int(getattr(params, "max_steps_in_episode", 1000))
    max_episode_steps = math.ceil(max_steps / action_repeat)
    if isinstance(action_space, spaces.Discrete):
        return EnvironmentConfig(
            env=env,
            env_params=params,
            n_envs=n_envs,
            continuous=False,
            observation_dim=observation_dim,
            action_dim=int(action_space.n),
            max_episode_steps=max_episode_steps,
        )
    if isinstance(action_space, spaces.Box):
        shape = action_space.shape or (1,)
        low = jnp.broadcast_to(jnp.asarray(action_space.low, jnp.float32), shape).reshape(-1)
        high = jnp.broadcast_to(jnp.asarray(action_space.high, jnp.float32), shape).reshape(-1)
        return EnvironmentConfig(
            env=env,
            env_params=params,
            n_envs=n_envs,
            continuous=True,
            observation_dim=observation_dim,
            action_dim=int(math.prod(shape)),
            action_low=tuple(float(x) for x in low),
            action_high=tuple(float(x) for x in high),
            max_episode_steps=max_episode_steps,
        )
    raise TypeError(f"Unsupported action space {type(action_space).__name__}: Ajax takes Discrete or Box.")


def check_action_space(env_args: EnvironmentConfig, agent: str, *, continuous: bool | None) -> None:
    """Refuse an env whose action space the agent cannot act in, naming the fix."""
    if continuous is None or env_args.continuous == continuous:
        return
    if continuous:
        raise ValueError(
            f"{agent} acts in continuous action spaces, but {env_args.env.name} is discrete "
            f"({env_args.action_dim} actions). Use a discrete agent (DQN, PPO) or a Box-action env "
            "such as Pendulum-v1."
        )
    raise ValueError(
        f"{agent} acts in discrete action spaces, but {env_args.env.name} is continuous. "
        "Use a continuous agent (SAC, PPO) or a Discrete-action env such as CartPole-v1."
    )
