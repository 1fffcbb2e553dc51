"""Gymnasium environments, stepped on the host from inside the compiled run.

A Gymnasium env is Python: it cannot be traced. `GymnasiumEnv` puts it behind gymnax's
interface all the same, so the agents, the replay, the updates and the evaluations stay one
compiled program and only the env's own step leaves it:

- each reset and step is a host callback wrapped in `jax.custom_batching.custom_vmap`,
  whose batching rule calls the same function again on the batched arguments. `vmap` over
  env copies and then over seeds therefore adds leading axes to one call instead of
  looping over calls: one host call per loop step steps every copy of every seed. The
  callback is a `pure_callback`, as JAX refuses an `io_callback` inside the evaluation's
  vmapped `lax.cond`; its outputs are always read, and each step takes the slots the
  previous call returned, so the calls run once each and in the program's order;
- the env state in the compiled program is a slot number per copy; the envs themselves live
  in a `HostPool`, one Gymnasium env per slot. Each place in the program that resets envs
  (the collector's start, the evaluation) owns its slots and reuses them every time it runs,
  so evaluating every few thousand steps does not build new envs;
- Gymnasium's own contract is kept: `terminated` and `truncated` apart (the time limit is
  Gymnasium's `TimeLimit`, at the id's `max_episode_steps` or `episode_length`), and each
  copy is reset on the host in the step that ended its episode, its final observation
  returned beside the first of the next one, as every other Ajax backend does. Single
  envs are used, not a vector env, so there is no next-step auto-reset to undo;
- a reset draws its Gymnasium seed from the JAX key, and later episodes continue that env's
  own generator: the same seed gives the same run.

A state restored in a new process names slots its pool never built: those copies start
fresh episodes (their first step is recorded as a truncation at the new episode's first
observation), which `docs/environments.md#gymnasium` states and the CLI's `--resume` says.
"""

from __future__ import annotations

import copy
import difflib
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment, spaces

from ajax.environments.ids import GYMNASIUM_PREFIX as PREFIX

DEFAULT_EPISODE_LENGTH = 1000  # the time limit of an env whose spec has none


@struct.dataclass
class HostParams:
    max_steps_in_episode: int = DEFAULT_EPISODE_LENGTH


@struct.dataclass
class HostState:
    slot: jax.Array  # int32: the pool's env this copy steps


def over_every_copy(body: Callable[..., Any], *args: jax.Array) -> Any:
    """`body(batch_shape, *args)` traced once, with every vmap around the call as leading axes of
    `args` (`batch_shape`: those of `args[0]` beyond its unbatched rank): one call for every copy
    of every seed, where a vmap would make one per copy."""
    core_rank = jnp.ndim(args[0])

    @jax.custom_batching.custom_vmap
    def call(*args: jax.Array) -> Any:
        return body(tuple(jnp.shape(args[0])[: jnp.ndim(args[0]) - core_rank]), *args)

    @call.def_vmap
    def batched(axis_size: int, in_batched: Sequence[bool], *args: jax.Array) -> tuple[Any, Any]:
        args = tuple(
            arg if is_batched else jnp.broadcast_to(arg, (axis_size, *jnp.shape(arg)))
            for arg, is_batched in zip(args, in_batched, strict=True)
        )
        out = call(*args)
        return out, jax.tree.map(lambda _: True, out)

    return call(*args)


def host_call(host_fn: Callable[..., Any], result: Callable[[tuple[int, ...]], Any], *args: jax.Array) -> Any:
    """`host_fn(*args)` on the host, once for every copy of every vmap around the call.

    `result(batch_shape)` gives the output's shapes for the leading shape of `args[0]`
    beyond its unbatched rank; `host_fn` receives and returns arrays with those axes.
    """
    return over_every_copy(lambda batch_shape, *args: jax.pure_callback(host_fn, result(batch_shape), *args), *args)


def _space(space: Any, where: str) -> Any:
    """Gymnasium's observation or action space as gymnax's (Box, Discrete, a Dict of Boxes)."""
    import gymnasium

    if isinstance(space, gymnasium.spaces.Box):
        dtype = jnp.uint8 if space.dtype == np.uint8 else jnp.float32
        return spaces.Box(np.asarray(space.low, np.float32), np.asarray(space.high, np.float32), space.shape, dtype)
    if isinstance(space, gymnasium.spaces.Discrete) and where == "action":
        return spaces.Discrete(int(space.n))
    if isinstance(space, gymnasium.spaces.Dict) and where == "observation":
        return spaces.Dict({key: _space(part, f"{where} {key!r}") for key, part in space.spaces.items()})
    kind = "a Box or a Discrete" if where == "action" else "a Box, or a Dict of Boxes"
    raise TypeError(
        f"The env's {where} space is {space}; Ajax takes {kind} there. Wrap the env to change it "
        "(gymnasium.wrappers.FlattenObservation for a Tuple, a one-hot observation for a Discrete one)."
    )


def _as_numpy(obs: Any, space: Any) -> Any:
    if isinstance(space, spaces.Dict):
        return {key: _as_numpy(obs[key], part) for key, part in space.spaces.items()}
    return np.asarray(obs, dtype=space.dtype).reshape(space.shape)


def _stack(observations: Sequence[Any], batch_shape: tuple[int, ...], space: Any) -> Any:
    if isinstance(space, spaces.Dict):
        return {key: _stack([o[key] for o in observations], batch_shape, part) for key, part in space.spaces.items()}
    return np.stack(observations).reshape(batch_shape + tuple(space.shape))


def _result(space: Any, batch_shape: tuple[int, ...]) -> Any:
    if isinstance(space, spaces.Dict):
        return {key: _result(part, batch_shape) for key, part in space.spaces.items()}
    return jax.ShapeDtypeStruct(batch_shape + tuple(space.shape), space.dtype)


def key_seed(key: np.ndarray) -> int:
    """A Gymnasium seed drawn from one JAX key's data (its first and last words)."""
    key = key.astype(np.uint64)
    return int(key[0]) << 32 | int(key[-1])


def host_actions(space: Any, actions: np.ndarray, n: int) -> np.ndarray:
    """Ajax's actions for `n` copies in a Gymnasium `space`'s terms: a Discrete's counted from its
    `start` (Ajax counts from 0), a Box's in its dtype and shape."""
    if hasattr(space, "n"):
        return actions.reshape(n).astype(np.int64) + int(space.start)
    return actions.reshape(n, *space.shape).astype(space.dtype)


class GymnasiumPool:
    """The Gymnasium envs behind one `GymnasiumEnv`: one per slot, built on first use.

    A pool answers `reset(site, keys) -> (slots, obs)` and `step(slots, actions) -> (slots,
    obs, reward, terminated, truncated, final_obs)` on numpy arrays with any leading shape,
    counts its `calls` and can `close()`; `HostEnv` calls them from the compiled program.
    """

    def __init__(self, make: Callable[[], Any], observation_space: Any, action_space: Any):
        self.make = make
        self.observation_space = observation_space
        self.action_space = action_space  # Gymnasium's own: actions go back in its dtype, shape and start
        self.envs: dict[int, Any] = {}
        self.sites: dict[int, np.ndarray] = {}
        self.calls = 0  # host calls made: one per reset or loop step, whatever the copies

    def _observe(self, obs: Any) -> Any:
        return _as_numpy(obs, self.observation_space)

    def _env(self, slot: int) -> Any:
        if slot not in self.envs:
            self.envs[slot] = self.make()
        return self.envs[slot]

    def reset(self, site: int, keys: np.ndarray) -> tuple[np.ndarray, Any]:
        """Reset the envs the program place `site` owns, one per key, seeded from the keys."""
        self.calls += 1
        batch_shape = keys.shape[:-1]
        flat = keys.reshape(-1, keys.shape[-1])
        slots = self.sites.get(site)
        if slots is None or slots.size != len(flat):
            start = max(self.envs, default=-1) + 1
            slots = np.arange(start, start + len(flat), dtype=np.int32)
            self.sites[site] = slots
        observations = []
        for slot, key in zip(slots, flat, strict=True):
            obs, _ = self._env(int(slot)).reset(seed=key_seed(key))
            observations.append(self._observe(obs))
        return slots.reshape(batch_shape), _stack(observations, batch_shape, self.observation_space)

    def step(self, slots: np.ndarray, actions: np.ndarray) -> tuple[Any, ...]:
        """Step every copy; a copy whose episode ended is reset here, its final observation kept."""
        self.calls += 1
        batch_shape = slots.shape
        flat_actions = host_actions(self.action_space, actions, slots.size)
        observations, finals = [], []
        rewards = np.zeros(len(flat_actions), np.float32)
        terminated = np.zeros(len(flat_actions), bool)
        truncated = np.zeros(len(flat_actions), bool)
        for i, (slot, action) in enumerate(zip(slots.reshape(-1), flat_actions, strict=True)):
            slot = int(slot)
            if slot not in self.envs:  # a state restored in a new process: a fresh episode
                obs, _ = self._env(slot).reset()
                obs = self._observe(obs)
                observations.append(obs)
                finals.append(obs)
                truncated[i] = True
                continue
            env = self.envs[slot]
            obs, reward, term, trunc, _ = env.step(action)
            obs = self._observe(obs)
            rewards[i], terminated[i], truncated[i] = float(reward), bool(term), bool(trunc) and not term
            finals.append(obs)
            if term or trunc:
                obs = self._observe(env.reset()[0])
            observations.append(obs)
        space = self.observation_space
        return (
            slots,
            _stack(observations, batch_shape, space),
            rewards.reshape(batch_shape),
            terminated.reshape(batch_shape),
            truncated.reshape(batch_shape),
            _stack(finals, batch_shape, space),
        )

    def close(self) -> None:
        for env in self.envs.values():
            env.close()
        self.envs.clear()
        self.sites.clear()


class HostEnv(environment.Environment):
    """An env stepped on the host behind gymnax's interface (see the module's docstring): `pool`
    holds the envs, the compiled program holds a slot per copy."""

    def __init__(self, pool: Any, observation_space: Any, action_space: Any, name: str, episode_length: int):
        super().__init__()
        self.pool = pool
        self._observation_space = observation_space
        self._action_space = action_space
        self._name = name
        self._episode_length = int(episode_length)
        self._sites = itertools.count()

    @property
    def name(self) -> str:
        return self._name

    @property
    def default_params(self) -> HostParams:
        return HostParams(max_steps_in_episode=self._episode_length)

    @property
    def num_actions(self) -> int:
        space = self._action_space
        return int(space.n) if isinstance(space, spaces.Discrete) else int(np.prod(space.shape))

    def action_space(self, params: Any = None) -> Any:
        return self._action_space

    def observation_space(self, params: Any = None) -> Any:
        return self._observation_space

    def reset(self, key: jax.Array, params: Any = None) -> tuple[Any, HostState]:
        site = next(self._sites)  # this place in the program owns its envs
        space = self._observation_space
        key = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
        slot, obs = host_call(
            lambda keys: self.pool.reset(site, np.asarray(keys)),
            lambda shape: (jax.ShapeDtypeStruct(shape, jnp.int32), _result(space, shape)),
            key,
        )
        return obs, HostState(slot=slot)

    def step(self, key: jax.Array, state: HostState, action: jax.Array, params: Any = None):
        """(obs after the reset of an ended episode, state, reward, terminated, truncated, info)."""
        del key  # the env draws from its own generator, seeded at reset
        space = self._observation_space
        action = jnp.asarray(action, jnp.int32 if isinstance(self._action_space, spaces.Discrete) else jnp.float32)

        def result(shape: tuple[int, ...]) -> tuple[Any, ...]:
            flag = jax.ShapeDtypeStruct(shape, jnp.bool_)
            observation = _result(space, shape)
            return (
                jax.ShapeDtypeStruct(shape, jnp.int32),
                observation,
                jax.ShapeDtypeStruct(shape, jnp.float32),
                flag,
                flag,
                observation,
            )

        slot, obs, reward, terminated, truncated, final = host_call(
            lambda slots, actions: self.pool.step(np.asarray(slots), np.asarray(actions)),
            result,
            state.slot,
            action,
        )
        return obs, HostState(slot=slot), reward, terminated, truncated, {"final_observation": final}

    def reset_env(self, key: jax.Array, params: Any) -> tuple[Any, HostState]:
        return self.reset(key, params)

    def step_env(self, key: jax.Array, state: HostState, action: jax.Array, params: Any):
        raise TypeError(
            f"{self._name} steps on the host and resets itself when an episode ends; call its step, not step_env "
            "(wrappers that rewrite a gymnax env's step_env cannot wrap it: wrap the env before Ajax takes it)."
        )


class GymnasiumEnv(HostEnv):
    """A Gymnasium env stepped on the host. `make` builds one copy; `from_id` and `from_env`
    build it from an id or an env object."""

    def __init__(self, make: Callable[[], Any], name: str, episode_length: int | None = None):
        probe = make()
        observation_space = _space(probe.observation_space, "observation")
        action_space = _space(probe.action_space, "action")
        length = episode_length or _time_limit(probe) or DEFAULT_EPISODE_LENGTH
        probe.close()
        pool = GymnasiumPool(make, observation_space, probe.action_space)
        super().__init__(pool, observation_space, action_space, name, length)

    @classmethod
    def from_id(cls, env_id: str, episode_length: int | None = None, **kwargs: Any) -> GymnasiumEnv:
        """The env Gymnasium registers as `env_id` (with or without the "gymnasium:" prefix)."""
        import gymnasium

        name = env_id.removeprefix(PREFIX)
        if name not in gymnasium.registry:
            raise ValueError(unknown_gymnasium_message(name))
        limit = {"max_episode_steps": int(episode_length)} if episode_length is not None else {}
        return cls(lambda: _limited(gymnasium.make(name, **limit, **kwargs), None), PREFIX + name, episode_length)

    @classmethod
    def from_env(cls, env: Any, episode_length: int | None = None, n_envs: int | None = None) -> GymnasiumEnv:
        """Copies of a Gymnasium env object: remade from its spec (wrappers included) where it has
        one, else deep copies of it.

        A vector env stands for its single env, whose copies Ajax steps itself (resetting each
        in the step that ends its episode, not in the next as Gymnasium's vector envs do):
        `n_envs` must then be its `num_envs`, so that no setting goes unused.
        """
        import gymnasium

        if isinstance(env, gymnasium.vector.VectorEnv):
            if n_envs is not None and n_envs != env.num_envs:
                raise ValueError(
                    f"The Gymnasium vector env holds {env.num_envs} copies, but n_envs={n_envs}: pass "
                    f"n_envs={env.num_envs}, or the single env (or its id) with the n_envs you want."
                )
            single = getattr(env, "envs", [None])[0]  # a SyncVectorEnv's own envs
            if single is None and getattr(env, "spec", None) is None:
                raise TypeError(
                    f"{type(env).__name__} shows neither its envs nor a spec to remake them from; pass the single "
                    "env or its id, with n_envs."
                )
            if single is None:
                limit = {"max_episode_steps": env.spec.max_episode_steps} if env.spec.max_episode_steps else {}
                single = gymnasium.make(env.spec.id, **limit)
            return cls.from_env(single, episode_length)
        spec = getattr(env, "spec", None)
        if spec is not None:
            if episode_length is not None:
                spec = copy.copy(spec)
                spec.max_episode_steps = int(episode_length)
            return cls(lambda: gymnasium.make(spec), PREFIX + spec.id, episode_length)
        name = PREFIX + type(env.unwrapped).__name__
        return cls(lambda: _limited(copy.deepcopy(env), episode_length), name, episode_length)


def _time_limit(env: Any) -> int | None:
    spec = getattr(env, "spec", None)
    return getattr(spec, "max_episode_steps", None)


def _limited(env: Any, episode_length: int | None) -> Any:
    """`env` with a time limit: `episode_length`, else its own, else `DEFAULT_EPISODE_LENGTH`."""
    from gymnasium.wrappers import TimeLimit

    if episode_length is None and _time_limit(env) is not None:
        return env
    return TimeLimit(env, int(episode_length or DEFAULT_EPISODE_LENGTH))


def unknown_gymnasium_message(name: str) -> str:
    import gymnasium

    close = difflib.get_close_matches(name, list(gymnasium.registry), n=5, cutoff=0.6)
    hint = f" Closest Gymnasium ids: {', '.join(PREFIX + c for c in close)}." if close else ""
    return (
        f"Gymnasium has no environment {name!r}.{hint} Ids are Gymnasium's own after the prefix, "
        "e.g. 'gymnasium:Pendulum-v1'; a third-party package registers its ids when imported, so import it first."
    )
