"""Brax and MuJoCo Playground environments behind gymnax's interface.

Both backends step a `State(pipeline_state|data, obs, reward, done, metrics, info)` and
report `done` for a true termination only; their own training wrappers add the time limit
and the auto-reset. Ajax adds its own instead, so that every agent sees gymnax's
`terminated`/`truncated` split:

- the step counter lives in `state.info["steps"]` and a time limit is a truncation;
- `state.info["final_obs"]` keeps the observation each step reached, before any reset,
  and the step's `info["final_observation"]` carries it to the collector, so a value
  bootstraps from the last state of a truncated episode;
- the auto-reset draws a fresh initial state for each ended episode, computed only on steps
  where some copy's episode ended (`lax.cond` on a flag shared by every copy and seed);
  `differentiable_reset=True` computes it every step and selects, with no branch, for
  programs that differentiate through the environment. `fresh_reset=False` instead
  restarts every episode of a copy from the state its first reset drew (kept in
  `state.info["first_state"]`), as Brax's own training wrapper does: cheaper where a reset
  is costly (CheetahRun's runs 200 physics steps), at the price of one initial state per copy.

Observation shapes are read with `jax.eval_shape`: reading `observation_size` runs an
un-jitted reset (15 s for Brax's inverted_pendulum, 31 s for ant on a CPU).

The backend's `reset` and `step` are each called through a `jax.jit` the env keeps, inlined
into the caller's jaxpr (every program is the one the backend's own methods make), so JAX traces
each once for all the programs that vmap as many copies: a run's initial state and its
auto-reset share one trace of the reset, its collection and an evaluation of as many episodes
one of the step. Other counts of copies are traced apart (the vmapped axes key JAX's trace
cache). Brax's ant at Brax's PPO settings on 4 copies, one CPU core: the run's trace (initial
state and program) 5.0 -> 4.0 s, means of four.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import environment, spaces

from ajax.wrappers import resets_after_step_env, step_resetting_when_done


@struct.dataclass
class BraxLikeParams:
    max_steps_in_episode: int = 1000


def observation_of(obs: Any) -> jax.Array:
    """The policy's observation: Playground's dict observations hold it under "state"."""
    if isinstance(obs, dict):
        return obs["state"]
    return obs


class BraxLikeEnv(environment.Environment):
    """A Brax or Playground env as a gymnax `Environment`; actions are in [-1, 1] per actuator."""

    def __init__(
        self,
        env: Any,
        name: str,
        episode_length: int,
        differentiable_reset: bool = False,
        fresh_reset: bool = True,
    ):
        super().__init__()
        self._env = env
        self._name = name
        self._episode_length = int(episode_length)
        self.differentiable_reset = differentiable_reset
        self.fresh_reset = fresh_reset
        self._reset, self._step = jax.jit(env.reset, inline=True), jax.jit(env.step, inline=True)
        self._obs_shape = jax.eval_shape(lambda key: observation_of(self._reset(key).obs), jax.random.PRNGKey(0)).shape

    @property
    def default_params(self) -> BraxLikeParams:
        return BraxLikeParams(max_steps_in_episode=self._episode_length)

    @property
    def name(self) -> str:
        return self._name

    @property
    def num_actions(self) -> int:
        return int(self._env.action_size)

    def action_space(self, params: Any = None) -> spaces.Box:
        return spaces.Box(-1.0, 1.0, (int(self._env.action_size),), jnp.float32)

    def observation_space(self, params: Any = None) -> spaces.Box:
        return spaces.Box(-jnp.inf, jnp.inf, self._obs_shape, jnp.float32)

    def reset_env(self, key: jax.Array, params: Any) -> tuple[jax.Array, Any]:
        state = self._reset(key)
        obs = observation_of(state.obs)
        state = state.replace(info={**state.info, "steps": jnp.zeros((), jnp.int32), "final_obs": obs})
        if not self.fresh_reset:
            state = state.replace(info={**state.info, "first_state": state})
        return obs, state

    def restart(self, state: Any) -> tuple[jax.Array, Any]:
        """The episode start a `fresh_reset=False` env returns to: the first reset's state."""
        first = state.info["first_state"]
        return first.info["final_obs"], first.replace(info={**first.info, "first_state": first})

    def step_env(self, key: jax.Array, state: Any, action: jax.Array, params: Any):
        """One step, no reset. The backend draws its own noise from `state.info`, not `key`."""
        del key
        stepped = self._step(state, action)
        obs = observation_of(stepped.obs)
        kept = {"first_state": state.info["first_state"]} if not self.fresh_reset else {}
        info = {**stepped.info, **kept, "steps": state.info["steps"] + 1, "final_obs": obs}
        terminated = stepped.done > 0.5
        return obs, stepped.replace(info=info), stepped.reward, terminated, {}

    def is_terminal(self, state: Any, params: Any) -> jax.Array:
        return (state.done > 0.5) | self.is_truncated(state, params)

    def is_truncated(self, state: Any, params: Any) -> jax.Array:
        return state.info["steps"] >= params.max_steps_in_episode

    @resets_after_step_env
    def step(self, key: jax.Array, state: Any, action: jax.Array, params: Any = None):
        """gymnax's step, with the reset computed only when some episode ended."""
        params = self.default_params if params is None else params
        return step_resetting_when_done(self, key, state, action, params, **self.reset_policy)

    @property
    def reset_policy(self) -> dict[str, Any]:
        """How `step_resetting_when_done` resets this env, also from inside wrappers."""
        return {"differentiable": self.differentiable_reset, "restart": None if self.fresh_reset else self.restart}


def make_brax(
    env_id: str, episode_length: int | None, differentiable_reset: bool = False, fresh_reset: bool = True, **kwargs: Any
) -> BraxLikeEnv:
    import brax.envs

    env = brax.envs.get_environment(env_id, **kwargs)
    return BraxLikeEnv(env, env_id, episode_length or 1000, differentiable_reset, fresh_reset)


def load_playground(env_id: str, **config_overrides: Any) -> Any:
    """Playground's own env for `env_id`; off an NVIDIA GPU, on MJX's pure-JAX implementation.
    Playground's default, warp, runs on CUDA GPUs and CPUs only: ~35x slower on a CPU, and beside
    a TPU MJX would place the model on the host's CPU (or fail without warp installed)."""
    from mujoco_playground import registry

    config = registry.get_default_config(env_id)
    overrides = {"impl": "jax"} if "impl" in config and jax.default_backend() != "gpu" else {}
    overrides.update(config_overrides)
    return registry.load(env_id, config_overrides=overrides)


def make_playground(
    env_id: str,
    episode_length: int | None,
    differentiable_reset: bool = False,
    fresh_reset: bool = True,
    **config_overrides: Any,
) -> BraxLikeEnv:
    """A Playground env (`load_playground`) behind gymnax's interface."""
    env = load_playground(env_id, **config_overrides)
    length = episode_length or int(getattr(env._config, "episode_length", 1000))
    return BraxLikeEnv(env, env_id, length, differentiable_reset, fresh_reset)
