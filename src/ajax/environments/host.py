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
  own generator: the same seed gives the same run;
- an env is reset and stepped once at construction (`check_api`), so that one on the old
  Gym API, or one whose observations are not its space's, is refused before anything
  compiles; an exception the env raises during a run is recorded by the callback, which
  JAX then stops the program for, and `host_errors` raises it as a `HostEnvError` naming
  the env and the step, with the env's own exception as its cause (JAX alone gives a
  JaxRuntimeError whose text buries the env's message under the callback's traceback).

A state restored in a new process names slots its pool never built: those copies start
fresh episodes (their first step is recorded as a truncation at the new episode's first
observation), which `docs/environments.md#gymnasium` states and the CLI's `--resume` says.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import inspect
import itertools
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment, spaces

from ajax.environments.ids import GYMNASIUM_PREFIX as PREFIX

DEFAULT_EPISODE_LENGTH = 1000  # the time limit of an env whose spec has none
OLD_GYM_FIX = (
    "Gymnasium's reset returns (obs, info) and its step (obs, reward, terminated, truncated, info), which keep a "
    "time limit apart from a terminal state. Return those from the env "
    "(gymnasium.utils.step_api_compatibility.convert_to_terminated_truncated_step_api turns an old step's four "
    "values into the five), or wrap an env of the old `gym` package with Shimmy's GymV21CompatibilityV0."
)


class HostEnvError(RuntimeError):
    """A host environment raised while a compiled run called it: the message names the env and
    the step, and the env's own exception is its cause."""


# The failures host callbacks recorded before JAX stopped their program, for `host_errors` to
# raise. A callback runs on a thread of XLA's, so they are kept here rather than per thread.
_raised: list[HostEnvError] = []


class _RaisedByAjax(logging.Filter):
    """Drops JAX's log of a failed callback whose exception is a `HostEnvError`: `host_errors`
    raises that exception itself, and the env's traceback would otherwise print twice."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], HostEnvError))


logging.getLogger("jax._src.callback").addFilter(_RaisedByAjax())


def guarded(name: str, host_fn: Callable[..., Any]) -> Callable[..., Any]:
    """`host_fn`, a host callback of the env `name`, with the exception it raises recorded for `host_errors`.

    A pool raises a `HostEnvError` that names the step; any other exception is wrapped in one
    that names the env. The callback still raises, so that JAX stops the program there rather
    than run it on with results the env never gave.
    """

    def call(*args: Any) -> Any:
        try:
            return host_fn(*args)
        except HostEnvError as error:
            _raised.append(error)
            raise
        except Exception as error:
            failure = HostEnvError(f"{name} raised {type(error).__name__} on the host: {error}")
            _raised.append(failure)
            raise failure from error

    return call


@contextlib.contextmanager
def host_errors() -> Iterator[None]:
    """Run compiled programs, raising a host env's failure as itself.

    JAX reports an exception raised in a host callback as an error whose text holds the
    callback machinery's traceback, the env's message at its end, and no exception object (a
    JaxRuntimeError from a program's first call, a ValueError from later ones). Inside this
    context the error a program raises after a callback recorded a failure (`guarded`) is
    replaced by that `HostEnvError`, raised from the env's own exception. `train`, `evaluate`
    and `sweep` run in it.
    """
    _raised.clear()
    try:
        yield
    except Exception:
        if not _raised:
            raise
        failure = _raised[0]
        _raised.clear()
        raise failure.with_traceback(None) from failure.__cause__


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


def host_call(
    name: str, host_fn: Callable[..., Any], result: Callable[[tuple[int, ...]], Any], *args: jax.Array
) -> Any:
    """`host_fn(*args)` on the host, once for every copy of every vmap around the call, for the env `name`.

    `result(batch_shape)` gives the output's shapes for the leading shape of `args[0]`
    beyond its unbatched rank; `host_fn` receives and returns arrays with those axes. An
    exception it raises stops the program and is raised by `host_errors` (`guarded`).
    """
    host_fn = guarded(name, host_fn)
    return over_every_copy(lambda batch_shape, *args: jax.pure_callback(host_fn, result(batch_shape), *args), *args)


def _space(space: Any, where: str, name: str) -> Any:
    """Gymnasium's observation or action space of the env `name` as gymnax's (Box, Discrete, a Dict of Boxes)."""
    import gymnasium

    if isinstance(space, gymnasium.spaces.Box):
        dtype = jnp.uint8 if space.dtype == np.uint8 else jnp.float32
        return spaces.Box(np.asarray(space.low, np.float32), np.asarray(space.high, np.float32), space.shape, dtype)
    if isinstance(space, gymnasium.spaces.Discrete) and where == "action":
        return spaces.Discrete(int(space.n))
    if isinstance(space, gymnasium.spaces.Dict) and where == "observation":
        return spaces.Dict({key: _space(part, f"{where} {key!r}", name) for key, part in space.spaces.items()})
    kind = "a Box or a Discrete" if where == "action" else "a Box, or a Dict of Boxes"
    raise TypeError(
        f"{name}'s {where} space is {space}; Ajax takes {kind} there. Wrap the env to change it "
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
    """The Gymnasium envs behind one `GymnasiumEnv` named `name`: one per slot, built on first use.

    A pool answers `reset(site, keys) -> (slots, obs)` and `step(slots, actions) -> (slots,
    obs, reward, terminated, truncated, final_obs)` on numpy arrays with any leading shape,
    counts its `calls` and can `close()`; `HostEnv` calls them from the compiled program. An
    exception an env raises comes out as a `HostEnvError` naming the env, the copy and its step.
    """

    def __init__(self, make: Callable[[], Any], observation_space: Any, action_space: Any, name: str):
        self.make = make
        self.observation_space = observation_space
        self.action_space = action_space  # Gymnasium's own: actions go back in its dtype, shape and start
        self.name = name
        self.envs: dict[int, Any] = {}
        self.sites: dict[int, np.ndarray] = {}
        self.steps: dict[int, int] = {}  # each slot's steps since this process built its env
        self.calls = 0  # host calls made: one per reset or loop step, whatever the copies

    def _observe(self, obs: Any) -> Any:
        return _as_numpy(obs, self.observation_space)

    def _env(self, slot: int) -> Any:
        if slot not in self.envs:
            self.envs[slot] = self.make()
            self.steps[slot] = 0
        return self.envs[slot]

    def _failure(self, error: Exception, what: str, copy: int, n: int) -> HostEnvError:
        """`error`, which an env raised in `what` for its copy `copy` of `n`, as the run reports it."""
        return HostEnvError(f"{self.name} raised {type(error).__name__} in {what} of env copy {copy} of {n}: {error}")

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
        for i, (slot, key) in enumerate(zip(slots, flat, strict=True)):
            try:
                obs, _ = self._env(int(slot)).reset(seed=key_seed(key))
                observations.append(self._observe(obs))
            except Exception as error:
                raise self._failure(error, f"the reset seeded {key_seed(key)}", i, len(flat)) from error
        return slots.reshape(batch_shape), _stack(observations, batch_shape, self.observation_space)

    def step(self, slots: np.ndarray, actions: np.ndarray) -> tuple[Any, ...]:
        """Step every copy; a copy whose episode ended is reset here, its final observation kept."""
        self.calls += 1
        batch_shape = slots.shape
        flat_actions = host_actions(self.action_space, actions, slots.size)
        n = len(flat_actions)
        observations, finals = [], []
        rewards = np.zeros(n, np.float32)
        terminated = np.zeros(n, bool)
        truncated = np.zeros(n, bool)
        i, slot, doing = 0, 0, "step"  # where an exception came from, for its message
        try:
            for i, (slot, action) in enumerate(zip(slots.reshape(-1).tolist(), flat_actions, strict=True)):
                if slot not in self.envs:  # a state restored in a new process: a fresh episode
                    doing = "restart"
                    obs, _ = self._env(slot).reset()
                    obs = self._observe(obs)
                    observations.append(obs)
                    finals.append(obs)
                    truncated[i] = True
                    continue
                env = self.envs[slot]
                self.steps[slot] += 1
                doing = "step"
                obs, reward, term, trunc, _ = env.step(action)
                obs = self._observe(obs)
                rewards[i], terminated[i], truncated[i] = float(reward), bool(term), bool(trunc) and not term
                finals.append(obs)
                if term or trunc:
                    doing = "reset"
                    obs = self._observe(env.reset()[0])
                observations.append(obs)
        except Exception as error:
            step = self.steps.get(slot, 0)
            what = {
                "step": f"step {step:,} (action {np.array2string(np.asarray(flat_actions[i]), threshold=8)})",
                "reset": f"the reset after step {step:,}",
                "restart": "the first reset of a state restored from another process",
            }[doing]
            raise self._failure(error, what, i, n) from error
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
        self.steps.clear()


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
            self._name,
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
            self._name,
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
        try:
            observation_space = _space(probe.observation_space, "observation", name)
            action_space = _space(probe.action_space, "action", name)
            check_api(probe, name, observation_space)
            length = episode_length or _time_limit(probe) or DEFAULT_EPISODE_LENGTH
        finally:
            probe.close()
        pool = GymnasiumPool(make, observation_space, probe.action_space, name)
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


def check_api(env: Any, name: str, observation_space: Any) -> None:
    """Reset and step `env`, a copy of the env `name`, once as a run will, and refuse what the run
    could not take back.

    The run reads every reset as (obs, info) and every step as (obs, reward, terminated,
    truncated, info), and holds observations in arrays of `observation_space`'s shape and dtype.
    Inside the compiled run a mismatch would stop it after compilation, with the env's part at
    the end of a JAX runtime error, or a reshape that happens to fit would scramble the
    observations; here it is refused naming the env, what was expected and what came back.
    """
    returned = _probed(env, name, "reset", None)
    if not (isinstance(returned, tuple) and len(returned) == 2):
        raise TypeError(f"{name}'s reset returned {_described(returned)}, not (obs, info). {OLD_GYM_FIX}")
    _check_observation(returned[0], observation_space, f"{name}'s reset")
    returned = _probed(env, name, "step", _probe_action(env.action_space))
    if not (isinstance(returned, tuple) and len(returned) == 5):
        what = _described(returned)
        if isinstance(returned, tuple) and len(returned) == 4:
            what += " (obs, reward, done, info): the old Gym API"
        raise TypeError(f"{name}'s step returned {what}, not (obs, reward, terminated, truncated, info). {OLD_GYM_FIX}")
    obs, reward, terminated, truncated, _ = returned
    _check_observation(obs, observation_space, f"{name}'s step")
    for what, value in (("reward", reward), ("terminated", terminated), ("truncated", truncated)):
        if np.ndim(value) != 0:
            raise ValueError(
                f"{name}'s step returned a {what} of shape {np.shape(value)}; one env's step returns one number "
                "there (Ajax steps the copies itself: pass the single env, not a vector env's step)."
            )


def _probed(env: Any, name: str, what: str, action: Any) -> Any:
    """What `env`'s reset (seeded 0) or step (taking `action`) returns, with what it raises named.

    Gymnasium's wrappers fail to unpack an old Gym env's answers, raising their own error: the
    env underneath is then asked (`_old_gym_api`), so that the refusal says what to change.
    """
    try:
        return env.reset(seed=0) if what == "reset" else env.step(action)
    except Exception as error:
        if _old_gym_api(env.unwrapped, what, action):
            raise TypeError(f"{name}'s {what} follows the old Gym API. {OLD_GYM_FIX}") from error
        raise HostEnvError(
            f"{name} raised {type(error).__name__} in the {what} Ajax gives it at construction: {error}"
        ) from error


def _old_gym_api(bare: Any, what: str, action: Any) -> bool:
    """Whether the env `bare`, under no wrapper, answers `what` as the old Gym API does: a reset
    that takes no seed or returns no (obs, info) pair, a step that returns four values."""
    try:
        if what == "step":
            returned = bare.step(action)
            return isinstance(returned, tuple) and len(returned) == 4
        parameters = inspect.signature(bare.reset).parameters.values()
        if not any(p.name == "seed" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
            return True
        returned = bare.reset()
        return not (isinstance(returned, tuple) and len(returned) == 2)
    except Exception:  # the bare env fails too: its own error, not the API, is what the probe reports
        return False


def _probe_action(space: Any) -> Any:
    """A valid action of a Box or Discrete `space`, fixed rather than sampled: sampling would draw
    from the space's generator, which a class attribute shares between every copy."""
    if hasattr(space, "n"):
        return np.int64(space.start)
    return np.clip(np.zeros(space.shape, space.dtype), space.low, space.high).astype(space.dtype)


def _described(returned: Any) -> str:
    if isinstance(returned, tuple):
        return f"{len(returned)} values"
    return f"one {type(returned).__name__}"


def _check_observation(obs: Any, space: Any, where: str, part: str = "an observation") -> None:
    """Refuse an observation that `where` returned and the run could not hold in `space`'s arrays:
    a Dict's other keys, another shape, or a dtype that does not cast to the space's (floats
    where uint8 images are declared, strings, objects)."""
    if isinstance(space, spaces.Dict):
        keys = sorted(obs) if isinstance(obs, Mapping) else None
        if keys != sorted(space.spaces):
            got = f"the keys {keys}" if keys is not None else f"a {type(obs).__name__}"
            raise ValueError(
                f"{where} returned {got} as {part}, but its observation space is a Dict of {sorted(space.spaces)}."
            )
        for key, inner in space.spaces.items():
            _check_observation(obs[key], inner, where, f"{part}'s {key!r}")
        return
    array, dtype = np.asarray(obs), np.dtype(space.dtype)
    if array.shape != tuple(space.shape) or not np.can_cast(array.dtype, dtype, "same_kind"):
        raise ValueError(
            f"{where} returned {part} of shape {array.shape} and dtype {array.dtype}, but its observation space "
            f"declares shape {tuple(space.shape)}, held as {dtype}: the agents size their networks and buffers from "
            "the space. Make the two agree (gymnasium.wrappers.ReshapeObservation or DtypeObservation, or the "
            "space's own shape and dtype)."
        )


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
