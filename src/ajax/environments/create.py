"""Build an environment from an id and describe it for the agents.

An id routes to its backend: gymnax, Brax, MuJoCo Playground, TargetGym (whose
environments are gymnax environments), Craftax, Navix or Jumanji. Brax and Playground
environments come behind Ajax's own layer (`brax_like.BraxLikeEnv`: time limit, final
observation, auto-reset only when an episode ended), the other three suites behind
`suites`, which keeps the same contract. An unknown id, or an id whose package is missing, fails at
construction with what to do, before anything compiles.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import sys
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from gymnax.environments import environment, spaces

from ajax.checks import require_counts
from ajax.environments.brax_like import make_brax, make_playground
from ajax.environments.envpool_envs import EnvPoolEnv
from ajax.environments.envpool_xla import EnvPoolXlaEnv
from ajax.environments.host import GymnasiumEnv
from ajax.environments.ids import (
    ENVPOOL_XLA_PREFIX,
    PACKAGES,
    PLAYGROUND_MENAGERIE_IDS,
    backend_of,
    missing_package_message,
    unknown_env_message,
)
from ajax.environments.observation_checks import check_observation_space, check_observation_structure
from ajax.environments.suites import make_craftax, make_jumanji, make_navix
from ajax.state import ACTION_MASK, EnvironmentConfig, ObservationPart
from ajax.wrappers import Wrapper

SUITES = {"craftax": make_craftax, "navix": make_navix, "jumanji": make_jumanji}


class EnvironmentAssetsMissingError(RuntimeError):
    """An environment's model files are not on this machine and could not be fetched."""


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
    """A user's env must follow gymnax's 1.x interface; say which part is missing."""
    required = ("reset", "step", "action_space", "observation_space", "default_params")
    missing = [m for m in required if not hasattr(env, m)]
    if missing:
        raise TypeError(
            f"A custom environment must follow gymnax's interface; {type(env).__name__} lacks "
            f"{', '.join(missing)}. Subclass gymnax.environments.environment.Environment (reset_env, step_env, "
            "action_space, observation_space, default_params), or pass an environment id."
        )
    params = env.default_params
    key = jax.random.PRNGKey(0)
    try:
        obs, state = jax.eval_shape(env.reset, key, params)
        action = env.action_space(params).sample(key)
        out = jax.eval_shape(env.step, key, state, action, params)
    except Exception as error:
        raise TypeError(
            f"{type(env).__name__}'s reset(key, params) or step(key, state, action, params) failed when traced "
            f"({type(error).__name__}: {error}). Ajax calls them inside jax.jit and jax.vmap."
        ) from error
    if not isinstance(out, tuple) or len(out) != 6:
        raise TypeError(
            f"{type(env).__name__}.step must return gymnax 1.x's (obs, state, reward, terminated, truncated, info); "
            f"it returned {len(out) if isinstance(out, tuple) else type(out).__name__} values. Terminated and "
            "truncated are kept apart so agents bootstrap at a time limit and never past a terminal."
        )
    if not isinstance(out[5], dict) or "final_observation" not in out[5]:
        raise TypeError(
            f"{type(env).__name__}.step's info must hold 'final_observation', the observation the step reached "
            "before any auto-reset (gymnax's Environment.step provides it)."
        )
    check_observation_structure(env.observation_space(params), type(env).__name__)
    declared = declared_shape(env.observation_space(params))
    returned = {"reset": obs, "step": out[0], "step's final_observation": out[5]["final_observation"]}
    for where, value in returned.items():
        shape = {key: tuple(v.shape) for key, v in value.items()} if isinstance(value, dict) else tuple(value.shape)
        if shape != declared:
            raise ValueError(
                f"{type(env).__name__}'s {where} returns observations of shape {shape}, but its "
                f"observation_space declares {declared}: the agents size their networks from the declared space. "
                "Make the two agree."
            )
    for name, value in (("reward", out[2]), ("terminated", out[3]), ("truncated", out[4])):
        if tuple(value.shape) != ():
            raise ValueError(
                f"{type(env).__name__}.step returns a {name} of shape {tuple(value.shape)}; one env steps one "
                "episode, so it must be a scalar (Ajax vmaps the env over its copies)."
            )


def _is_gymnasium_env(env: Any) -> bool:
    """A Gymnasium env object (checked without importing Gymnasium where nothing did)."""
    gymnasium = sys.modules.get("gymnasium")
    return gymnasium is not None and isinstance(env, gymnasium.Env | gymnasium.vector.VectorEnv)


def _import_backend(env_id: str, backend: str) -> None:
    try:
        with warnings.catch_warnings():  # TargetGym's do-mpc warns about features Ajax does not use
            warnings.simplefilter("ignore")
            importlib.import_module(PACKAGES[backend][1])
    except ImportError as error:
        raise ImportError(missing_package_message(env_id, backend, error)) from error


def _load_playground(env_id: str, episode_length: int | None, **resets: bool) -> environment.Environment:
    if env_id not in PLAYGROUND_MENAGERIE_IDS:
        return make_playground(env_id, episode_length, **resets)
    from mujoco_playground._src import mjx_env

    try:
        return make_playground(env_id, episode_length, **resets)
    except Exception as error:  # a failed git clone, or a partial checkout that lacks the model files
        raise EnvironmentAssetsMissingError(
            f"MuJoCo Playground's {env_id!r} needs the MuJoCo Menagerie robot models at {mjx_env.MENAGERIE_PATH}, "
            f"which Playground downloads with git at first use, and loading them failed ({type(error).__name__}: "
            f"{error}). On a machine without network, copy a checkout of mujoco_menagerie at commit "
            f"{mjx_env.MENAGERIE_COMMIT_SHA} to that path, or train on a dm_control suite task that ships its "
            "models (CartpoleBalance, CheetahRun, HopperHop, ...)."
        ) from None


def make_env(
    env_id: str, episode_length: int | None = None, differentiable_reset: bool = False, fresh_reset: bool = True
) -> tuple[environment.Environment, Any]:
    """The environment and its default params for an id, from its backend.

    `differentiable_reset` and `fresh_reset` set a Brax or Playground env's auto-reset
    (`brax_like`); pass the env this returns, with its params, to an agent.
    """
    backend = backend_of(env_id)
    if backend is None:
        raise ValueError(unknown_env_message(env_id))
    if backend == "gymnax":
        import gymnax

        return gymnax.make(env_id)
    _import_backend(env_id, backend)
    if backend == "gymnasium":
        env = GymnasiumEnv.from_id(env_id, episode_length)
        return env, env.default_params
    if backend == "envpool":
        xla = env_id.startswith(ENVPOOL_XLA_PREFIX)
        env = (EnvPoolXlaEnv if xla else EnvPoolEnv)(env_id, episode_length)
        return env, env.default_params
    if backend == "targetgym":
        import target_gym

        env = getattr(target_gym, env_id)()
        return env, env.default_params
    if backend in SUITES:
        env = SUITES[backend](env_id, episode_length)
        return env, env.default_params
    resets = {"differentiable_reset": differentiable_reset, "fresh_reset": fresh_reset}
    if backend == "brax":
        env = make_brax(env_id, episode_length, **resets)
    else:
        env = _load_playground(env_id, episode_length, **resets)
    return env, env.default_params


def prepare_env(
    env_id: str | Any,
    *,
    n_envs: int = 1,
    episode_length: int | None = None,
    action_repeat: int = 1,
    env_params: Any = None,
    differentiable_reset: bool = False,
    fresh_reset: bool = True,
) -> EnvironmentConfig:
    """The environment an agent trains on, with the settings every agent hands over.

    For Brax and Playground ids, `differentiable_reset` computes the auto-reset on every
    step instead of only on steps where an episode ended (for programs that differentiate
    through the environment), and `fresh_reset=False` restarts each copy's episodes from
    its first initial state instead of drawing a new one.
    """
    counts = {"n_envs": n_envs, "action_repeat": action_repeat}
    if episode_length is not None:
        counts["episode_length"] = episode_length
    require_counts(**counts)
    if isinstance(env_id, type):
        raise TypeError(
            f"env_id is the class {env_id.__name__}; pass an instance, e.g. {env_id.__name__}(), or an env id string."
        )
    if isinstance(env_id, str):
        env, default_params = make_env(env_id, episode_length, differentiable_reset, fresh_reset)
    elif _is_gymnasium_env(env_id):
        env = GymnasiumEnv.from_env(env_id, episode_length, n_envs)
        default_params = env.default_params
    else:
        _check_custom_env(env_id)
        env, default_params = env_id, env_id.default_params
    if env_params is not None and type(env_params) is not type(default_params):
        raise TypeError(
            f"env_params is a {type(env_params).__name__}, but this env takes {type(default_params).__name__}: "
            "start from the env's own, e.g. env.default_params.replace(...)."
        )
    params = env_params if env_params is not None else default_params
    if episode_length is not None:
        params = params.replace(max_steps_in_episode=int(episode_length))
    if action_repeat > 1:
        env = ActionRepeat(env, action_repeat)

    action_space = env.action_space(params)
    check_observation_space(env, params, action_space)
    observation_dim = flat_size(env.observation_space(params))
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


def has_action_mask(env_args: EnvironmentConfig) -> bool:
    """Whether the env's observations are dicts that carry an `ACTION_MASK`."""
    space = env_args.env.observation_space(env_args.env_params)
    return isinstance(space, spaces.Dict) and ACTION_MASK in space.spaces


def declared_shape(space: Any) -> tuple[int, ...] | dict[str, tuple[int, ...]]:
    """The shape of one observation `space` declares: a Dict space's by key."""
    if isinstance(space, spaces.Dict):
        return {key: tuple(part.shape) for key, part in space.spaces.items()}
    return tuple(space.shape)


def flat_size(space: Any) -> int:
    """How many numbers one observation of `space` flattens to (a Dict's arrays together, its action mask apart)."""
    if isinstance(space, spaces.Dict):  # an action mask is applied, not read
        return sum(flat_size(part) for key, part in space.spaces.items() if key != ACTION_MASK)
    return int(math.prod(space.shape)) if space.shape else 1


def kept_observations(env_args: EnvironmentConfig, *, normalized: bool) -> EnvironmentConfig:
    """`env_args` with each array of the observation kept in its own shape, for an image encoder
    or an action mask (kept as booleans).

    8-bit and boolean images, and MinAtar's boards (float32 channels of 0 and 1 in gymnax),
    are stored as uint8: exact, and a quarter of float32's replay memory. 8-bit arrays are read
    divided by the top of their declared range: 255 for pixels, 8 for Navix's symbolic codes.
    Normalised observations are standardised floats, stored as float32.
    """
    env, params = env_args.env, env_args.env_params
    example = jax.eval_shape(lambda key: env.reset(key, params)[0], jax.random.PRNGKey(0))
    space = env.observation_space(params)
    binary = "MinAtar" in str(getattr(env, "name", ""))

    def part(key: str | None, array: jax.ShapeDtypeStruct) -> ObservationPart:
        if key == ACTION_MASK:
            return ObservationPart(key, tuple(int(n) for n in array.shape), "bool")
        dtype = jnp.dtype(array.dtype)
        eight_bit = dtype in (jnp.dtype(jnp.uint8), jnp.dtype(jnp.bool_)) or binary
        stored = "uint8" if eight_bit and not normalized else "float32"
        declared = space if key is None else space.spaces[key]
        scale = 1.0 / _eight_bit_top(declared) if dtype == jnp.dtype(jnp.uint8) and not normalized else 1.0
        return ObservationPart(key, tuple(int(n) for n in array.shape), stored, scale)

    if isinstance(example, dict):
        parts = tuple(part(key, example[key]) for key in sorted(example))
    else:
        parts = (part(None, example),)
    return dataclasses.replace(env_args, observation_parts=parts)


def _eight_bit_top(space: Any) -> float:
    """The largest value a uint8 `space` declares, or 255 where it declares none that fits."""
    top = float(np.max(np.asarray(getattr(space, "high", 255))))
    return top if 0 < top <= 255 else 255.0
