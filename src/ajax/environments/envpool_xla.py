"""EnvPool's tasks stepped through its XLA interface: the C++ step inside the compiled program.

`envpool-xla:<task>` runs the task as `envpool:<task>` does (`envpool_envs.py`), with the
same contract, but each loop step sends the actions and receives the results through
EnvPool's XLA custom calls (`envpool.python.xla_template.make_xla`): no Python between
steps. The host is called only where episodes start:

- at a reset (the collector's start, each evaluation's start), which resets the whole pool;
- in a step where a copy's episode ended, to reset those copies (EnvPool's partial
  `reset(env_id)`), the final observation kept apart, so the next step is a real one, as on
  every other backend. A step where nothing ended never leaves the program (a `lax.cond`).

What the XLA interface fixes, and what Ajax does about it:

- The pool is an object the program names: one pool per place in the program that resets
  envs (its site), sized for every copy of every seed, is built when that program is traced
  and lives as long as the env. Its seed is the env's `seed` (0 from an id), fixed when the
  pool is built: the copies of every seed draw from their own EnvPool streams, but a later
  call of the same agent continues those streams. A fresh agent reproduces a run exactly;
  `envpool:` ids (pools rebuilt at each reset from the run's key) reproduce every call.
- Each copy carries the token of the pool that stepped it. A state restored into another
  agent or process names another pool: its copies start fresh episodes in their first
  step, recorded as truncations, as a Gymnasium env's do.
- JAX holds no 64-bit numbers here (no `jax_enable_x64`), so a task whose custom calls pass
  any (MuJoCo's float64 actions and infos) is refused, naming its `envpool:` id.
"""

from __future__ import annotations

import math
import secrets
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import spaces

from ajax.environments.envpool_envs import EnvPoolTask
from ajax.environments.host import HostEnv, _result, guarded, over_every_copy
from ajax.environments.ids import ENVPOOL_PREFIX, ENVPOOL_XLA_PREFIX

SITE_SEEDS = 1 << 20  # each site's pool seeds its copies from seed + site * SITE_SEEDS


@struct.dataclass
class XlaState:
    # int32: the copy's env id in its pool, as the last call returned it; each step sends it
    # back, which orders the custom calls and the host's resets as the program has them.
    slot: jax.Array
    pool: jax.Array  # int32: the token of the pool that stepped the copy
    site: int = struct.field(pytree_node=False, default=0)


class XlaPool:
    """One EnvPool pool of `n` copies and its custom calls; the host functions its resets run."""

    def __init__(self, spec: EnvPoolTask, n: int, seed: int):
        import envpool
        from envpool.python.xla_template import make_xla

        with warnings.catch_warnings():  # Gymnasium's notes on float64 space bounds
            warnings.simplefilter("ignore", UserWarning)
            self.pool = envpool.make(
                spec.task, env_type="gymnasium", num_envs=n, batch_size=n, seed=seed % 2**31, **spec.settings
            )
        self.spec = spec
        self.n = n
        self.handle, self.recv, self.send = make_xla(self.pool)
        self.action_keys = list(self.pool.spec.action_array_spec)
        self.state_keys = list(self.pool.spec.state_array_spec)
        self.token = np.int32(secrets.randbits(31))
        self.calls = 0  # host calls: the resets

    def observe(self, obs: np.ndarray) -> np.ndarray:
        obs = np.moveaxis(np.asarray(obs), 1, -1) if self.spec.flip else np.asarray(obs)
        return obs.astype(self.spec.observation_space.dtype, copy=False)

    def start(self, _: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every copy reset: the first observations in env id order, and the ids."""
        self.calls += 1
        obs, info = self.pool.reset()
        return self.observe(obs)[np.argsort(info["env_id"])], np.arange(self.n, dtype=np.int32)

    def restart(
        self, obs: np.ndarray, ended: np.ndarray, stale: np.ndarray, ids: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The observations after resetting the copies whose episode ended (every copy, for a stale state)."""
        self.calls += 1
        obs = np.array(obs)
        reset = np.arange(self.n, dtype=np.int32) if stale.any() else np.flatnonzero(ended).astype(np.int32)
        fresh, info = self.pool.reset(reset)
        obs[np.asarray(info["env_id"])] = self.observe(fresh)
        return obs, ids

    def step(self, action: jax.Array, ids: jax.Array) -> dict[str, jax.Array]:
        """One send and recv of every copy (traced): EnvPool's state arrays by key, in env id order.

        `ids` are the copies' env ids (0 .. n-1) as the last call returned them: sending them,
        rather than constants, keeps the calls in the program's order, which XLA follows only
        along data.
        """
        arrays = [ids if key.endswith("env_id") else action for key in self.action_keys]
        _, *values = self.recv(self.send(jnp.asarray(self.handle), *arrays))
        state = dict(zip(self.state_keys, values, strict=True))
        order = jnp.argsort(state["info:env_id"])
        return {key: value[order] for key, value in state.items()}


class XlaPools:
    """The pools behind one `EnvPoolXlaEnv`, one per site and size, each built when a program using it
    is traced. A site is traced once per vmap around it (one copy, the env copies, then the seeds'
    copies too), and only the outermost size runs: the smaller pools are built and never stepped."""

    def __init__(self, spec: EnvPoolTask, seed: int):
        self.spec = spec
        self.seed = seed
        self.pools: dict[tuple[int, int], XlaPool] = {}

    def at(self, site: int, n: int) -> XlaPool:
        if (site, n) not in self.pools:
            self.pools[site, n] = XlaPool(self.spec, n, self.seed + site * SITE_SEEDS)
        return self.pools[site, n]

    @property
    def calls(self) -> int:
        """Host calls so far, over every site."""
        return sum(pool.calls for pool in self.pools.values())


class EnvPoolXlaEnv(HostEnv):
    """An EnvPool task stepped through EnvPool's XLA interface (see the module's docstring)."""

    def __init__(self, env_id: str, episode_length: int | None = None, seed: int = 0):
        spec = EnvPoolTask.probe(env_id, ENVPOOL_XLA_PREFIX, episode_length)
        if spec.wide:
            raise ValueError(
                f"EnvPool's {spec.task!r} passes 64-bit numbers through its XLA interface ({', '.join(spec.wide)}), "
                "which JAX holds only under jax_enable_x64, and Ajax's programs are 32-bit. Use "
                f"'{ENVPOOL_PREFIX}{spec.task}', stepped on the host."
            )
        pools = XlaPools(spec, int(seed))
        name = ENVPOOL_XLA_PREFIX + spec.task
        super().__init__(pools, spec.observation_space, spec.action_space, name, spec.episode_length)
        self._action_dtype = jnp.int32 if isinstance(spec.action_space, spaces.Discrete) else jnp.float32

    def reset(self, key: jax.Array, params: Any = None) -> tuple[Any, XlaState]:
        site = next(self._sites)  # this place in the program owns its pool
        space = self._observation_space
        key = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key

        def body(batch_shape: tuple[int, ...], keys: jax.Array) -> tuple[jax.Array, ...]:
            n = math.prod(batch_shape)
            pool = self.pool.at(site, n)
            ids = jax.ShapeDtypeStruct((n,), jnp.int32)
            obs, slot = jax.pure_callback(
                guarded(self.name, pool.start), (_result(space, (n,)), ids), keys.reshape(n, -1)
            )
            token = jnp.full((n,), pool.token, jnp.int32)
            return tuple(x.reshape(*batch_shape, *x.shape[1:]) for x in (obs, slot, token))

        obs, slot, token = over_every_copy(body, key)
        return obs, XlaState(slot=slot, pool=token, site=site)

    def step(self, key: jax.Array, state: XlaState, action: jax.Array, params: Any = None):
        """(obs after the reset of an ended episode, state, reward, terminated, truncated, info)."""
        del key  # the pool draws from its own generators
        site, space = state.site, self._observation_space
        acts = tuple(self._action_space.shape)  # one copy's action: () when discrete

        def body(batch_shape: tuple[int, ...], slot: jax.Array, token: jax.Array, action: jax.Array):
            n = math.prod(batch_shape)
            pool = self.pool.at(site, n)
            slot, token = slot.reshape(n), token.reshape(n)
            out = pool.step(action.reshape(n, *acts), slot)
            obs = out["obs"]
            obs = jnp.moveaxis(obs, 1, -1) if pool.spec.flip else obs
            obs = obs.astype(space.dtype)
            truncated = out["trunc"].astype(bool)
            terminated = out["done"].astype(bool) & ~truncated
            stale = token != pool.token  # a state another pool stepped: fresh episodes
            ended = terminated | truncated | stale
            final = obs
            returned = (_result(space, (n,)), jax.ShapeDtypeStruct((n,), jnp.int32))
            ids = out["info:env_id"]
            obs, slot = jax.lax.cond(
                jnp.any(ended),
                lambda: jax.pure_callback(guarded(self.name, pool.restart), returned, obs, ended, stale, ids),
                lambda: (obs, ids),
            )
            shaped = stale.reshape(n, *(1,) * (obs.ndim - 1))
            reward = jnp.where(stale, 0.0, out["reward"].astype(jnp.float32))
            terminated, truncated = terminated & ~stale, truncated | stale
            final = jnp.where(shaped, obs, final)
            token = jnp.full((n,), pool.token, jnp.int32)
            outputs = (slot, token, obs, reward, terminated, truncated, final)
            return tuple(x.reshape(*batch_shape, *x.shape[1:]) for x in outputs)

        action = jnp.asarray(action, self._action_dtype)
        slot, token, obs, reward, terminated, truncated, final = over_every_copy(body, state.slot, state.pool, action)
        new_state = XlaState(slot=slot, pool=token, site=site)
        return obs, new_state, reward, terminated, truncated, {"final_observation": final}
