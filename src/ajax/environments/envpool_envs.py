"""EnvPool's environments (Atari, MuJoCo, classic control, ...), stepped on the host in C++.

An EnvPool pool steps all its copies in one call, on its own threads. Ajax makes one pool
per place in the program that resets envs (the collector's start, the evaluation), sized
for every copy of every seed, and calls it through `host.HostEnv`: one host call per loop
step. What Ajax keeps of EnvPool's contract, and what it changes:

- EnvPool resets an ended episode in the *next* step, which ignores its action and pays
  nothing. Ajax resets the ended copies in the step that ended their episode instead
  (EnvPool's partial `reset(env_id)`), keeping the final observation apart, so every step
  the agent takes is a real one and the contract is the other backends';
- EnvPool's seed is fixed when a pool is built: each reset builds its pool afresh, seeded
  from the JAX key, so the same seed gives the same run;
- `terminated` and `truncated` are EnvPool's; its time limit is the task's
  `max_episode_steps`, or `episode_length`;
- channels-first image observations (Atari's 4 x 84 x 84 frame stacks) are given to the
  agents channels-last, as Ajax's image encoders read them.

`envpool-xla:` ids step the same tasks through EnvPool's XLA interface instead, with the
trade-offs `envpool_xla.py` states (docs/environments.md#envpool).
"""

from __future__ import annotations

import difflib
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnax.environments import spaces

from ajax.environments.host import HostEnv, HostEnvError, _space, host_actions, key_seed
from ajax.environments.ids import ENVPOOL_PREFIX as PREFIX

SITE_BITS = 20  # a slot is (site << SITE_BITS) | copy: a million copies per place in the program


def _channels_first(space: Any) -> bool:
    """Whether an image observation puts its few channels first (Atari's frame stack)."""
    shape = tuple(space.shape)
    return len(shape) == 3 and space.dtype == np.uint8 and shape[0] <= 4 < shape[-1]


class EnvPoolPool:
    """The EnvPool pools behind one `EnvPoolEnv`, one per site (see `host.GymnasiumPool` for the protocol)."""

    def __init__(self, task: str, settings: dict[str, Any], observation_space: Any, action_space: Any, flip: bool):
        self.task = task
        self.settings = settings  # envpool.make's keywords (the time limit)
        self.observation_space = observation_space
        self.action_space = action_space  # EnvPool's own: actions go back in its dtype
        self.flip = flip  # channels first in EnvPool, last in Ajax
        self.pools: dict[int, Any] = {}
        self.steps: dict[int, int] = {}  # each site's steps since its pool was built
        self.calls = 0

    def _observe(self, obs: np.ndarray) -> np.ndarray:
        obs = np.asarray(obs)
        if self.flip:
            obs = np.moveaxis(obs, 1, -1)
        return obs.astype(self.observation_space.dtype, copy=False)

    def _start(self, site: int, n: int, seed: int) -> np.ndarray:
        """Build the site's pool of `n` copies afresh, seeded with `seed`, and reset it: its first observations."""
        import envpool

        if site in self.pools:
            self.pools[site].close()
        with warnings.catch_warnings():  # Gymnasium's notes on float64 space bounds, at every build
            warnings.simplefilter("ignore", UserWarning)
            pool = envpool.make(self.task, env_type="gymnasium", num_envs=n, batch_size=n, seed=seed, **self.settings)
            obs, info = pool.reset()
        self.pools[site] = pool
        self.steps[site] = 0
        return self._observe(obs)[np.argsort(info["env_id"])]

    def reset(self, site: int, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.calls += 1
        batch_shape = keys.shape[:-1]
        n = int(np.prod(batch_shape))
        obs = self._start(site, n, key_seed(keys.reshape(-1, keys.shape[-1])[0]) % 2**31)  # EnvPool's seed is int32
        slots = (site << SITE_BITS) | np.arange(n, dtype=np.int32)
        return slots.reshape(batch_shape), obs.reshape(batch_shape + obs.shape[1:])

    def step(self, slots: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, ...]:
        self.calls += 1
        batch_shape, flat = slots.shape, slots.reshape(-1)
        site = int(flat[0]) >> SITE_BITS
        if not np.array_equal(flat, (site << SITE_BITS) | np.arange(flat.size)):
            raise RuntimeError(f"EnvPool steps all copies of one reset together; got slots {flat[:8]} ...")
        n = flat.size
        if site not in self.pools:  # a state restored in a new process: fresh episodes, each a truncation
            obs = self._start(site, n, 0)
            zeros = np.zeros(n, bool)
            return self._shaped(batch_shape, slots, obs, np.zeros(n, np.float32), zeros, ~zeros, obs)
        pool = self.pools[site]
        action = host_actions(self.action_space, actions, n)
        self.steps[site] += 1
        try:
            obs, reward, terminated, truncated, info = pool.step(action, np.arange(n, dtype=np.int32))
            order = np.argsort(info["env_id"])
            obs, reward = self._observe(obs)[order], np.asarray(reward, np.float32)[order]
            terminated = np.asarray(terminated, bool)[order]
            truncated = np.asarray(truncated, bool)[order] & ~terminated
            final = obs.copy()
            ended = np.flatnonzero(terminated | truncated).astype(np.int32)
            if ended.size:
                fresh, fresh_info = pool.reset(ended)
                obs[np.asarray(fresh_info["env_id"])] = self._observe(fresh)
        except Exception as error:
            raise HostEnvError(
                f"{PREFIX}{self.task} raised {type(error).__name__} in step {self.steps[site]:,} of its pool of {n} "
                f"copies: {error}"
            ) from error
        return self._shaped(batch_shape, slots, obs, reward, terminated, truncated, final)

    @staticmethod
    def _shaped(batch_shape: tuple[int, ...], slots: np.ndarray, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return (slots, *(a.reshape(batch_shape + a.shape[1:]) for a in arrays))

    def close(self) -> None:
        for pool in self.pools.values():
            pool.close()
        self.pools.clear()
        self.steps.clear()


@dataclass(frozen=True)
class EnvPoolTask:
    """What Ajax reads of an EnvPool task once, from a one-copy probe: its keywords and spaces."""

    task: str
    settings: dict[str, Any]  # envpool.make's keywords (the time limit)
    observation_space: Any  # Ajax's: channels last
    action_space: Any  # Ajax's
    acted: Any  # EnvPool's own action space: actions go back in its dtype
    flip: bool  # channels first in EnvPool, last in Ajax
    episode_length: int
    wide: tuple[str, ...]  # the action and state arrays EnvPool passes that hold 64-bit numbers

    @classmethod
    def probe(cls, env_id: str, prefix: str, episode_length: int | None = None) -> EnvPoolTask:
        import envpool

        task = env_id.removeprefix(prefix)
        if task not in envpool.list_all_envs():
            raise ValueError(unknown_envpool_message(task, prefix))
        settings = {"max_episode_steps": int(episode_length)} if episode_length is not None else {}
        with warnings.catch_warnings():  # Gymnasium's notes on float64 space bounds
            warnings.simplefilter("ignore", UserWarning)
            probe = envpool.make(task, env_type="gymnasium", num_envs=1, **settings)
            observed, acted = probe.observation_space, probe.action_space
            length = int(probe.spec.config.max_episode_steps)
            arrays = {**probe.spec.action_array_spec, **probe.spec.state_array_spec}
            probe.close()
        wide = tuple(name for name, array in arrays.items() if np.dtype(array.dtype).itemsize == 8)
        flip = _channels_first(observed)
        observation_space = _space(observed, "observation", prefix + task)
        if not isinstance(observation_space, spaces.Box):
            raise TypeError(f"EnvPool's {task!r} observes {observed}; Ajax takes one Box from EnvPool.")
        if flip:
            c, h, w = observation_space.shape
            observation_space = spaces.Box(0, 255, (h, w, c), observation_space.dtype)
        action_space = _space(acted, "action", prefix + task)
        return cls(task, settings, observation_space, action_space, acted, flip, length, wide)


class EnvPoolEnv(HostEnv):
    """An EnvPool task stepped on the host in C++ (see the module's docstring)."""

    def __init__(self, env_id: str, episode_length: int | None = None):
        spec = EnvPoolTask.probe(env_id, PREFIX, episode_length)
        pool = EnvPoolPool(spec.task, spec.settings, spec.observation_space, spec.acted, spec.flip)
        super().__init__(pool, spec.observation_space, spec.action_space, PREFIX + spec.task, spec.episode_length)


def unknown_envpool_message(task: str, prefix: str = PREFIX) -> str:
    import envpool

    close = difflib.get_close_matches(task, envpool.list_all_envs(), n=5, cutoff=0.6)
    hint = f" Closest EnvPool ids: {', '.join(prefix + c for c in close)}." if close else ""
    return f"EnvPool has no task {task!r}.{hint} Ids are EnvPool's own after the prefix, e.g. '{prefix}Pong-v5'."
