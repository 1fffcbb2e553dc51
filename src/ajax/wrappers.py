"""Gymnax-style environment wrappers: pass one to an agent in place of an id.

Each wrapper overrides `step_env`/`reset_env` only, like `ActionRepeat`, so gymnax's own
`Environment.step` still auto-resets and reports `terminated` apart from `truncated`;
`is_truncated` is the inner env's, so a time limit stays in raw env steps.

    env, params = gymnax.make("Pendulum-v1")
    env = ObservationNoiseWrapper(ClipAction(InitialStateWrapper(env, hanging_down)), std=0.1)
    PPO(env, env_params=params).train(seed=0, n_timesteps=100_000)

Put `InitialStateWrapper` innermost: it needs the inner env's observation function,
which wrappers do not have.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from gymnax.environments import environment, spaces

from ajax.state import ACTION_MASK, ENV_AXIS, SEED_AXIS

__all__ = ["AutoReset", "ClipAction", "InitialStateWrapper", "ObservationMask", "ObservationNoiseWrapper", "Wrapper"]


def any_episode_ended(done: jax.Array) -> jax.Array:
    """True when any copy in any seed ended an episode: one flag for the whole program.

    The flag is summed over the env-copy and seed vmaps, so it is unbatched and `lax.cond`
    stays a branch instead of becoming a select that computes the reset every step.
    """
    count = jnp.any(done).astype(jnp.int32)
    for axis in (ENV_AXIS, SEED_AXIS):
        try:
            count = jax.lax.psum(count, axis)
        except NameError:  # that vmap is not around this call (a direct call in a test)
            pass
    return count > 0


def _stepped(env: environment.Environment, step_key: jax.Array, state: Any, action: jax.Array, params: Any):
    """`env.step_env`'s transition with the contract's flags: truncated only where not terminated."""
    obs, stepped, reward, terminated, info = env.step_env(step_key, state, action, params)
    terminated = jnp.asarray(terminated, bool)
    truncated = jnp.asarray(env.is_truncated(stepped, params), bool) & ~terminated
    return obs, stepped, reward, terminated, truncated, info


def step_resetting_when_done(
    env: environment.Environment,
    key: jax.Array,
    state: Any,
    action: jax.Array,
    params: Any,
    differentiable: bool = False,
    restart: Callable[[Any], tuple[jax.Array, Any]] | None = None,
):
    """gymnax's 1.x step contract (obs, state, reward, terminated, truncated, info) for `env`.

    The reset is computed only on steps where some episode ended, or on every step when
    `differentiable`; it is `env.reset_env`, or `restart(stepped_state)` when given. `env`
    is the outermost layer, so a wrapper's changes apply to the reset observation too. With
    the same key split as gymnax's own `Environment.step`, a gymnax env steps identically.
    """
    step_key, reset_key = jax.random.split(key)
    obs_stepped, stepped, reward, terminated, truncated, info = _stepped(env, step_key, state, action, params)
    done = terminated | truncated

    def reset(_: None) -> tuple[jax.Array, Any]:
        obs_reset, fresh = env.reset_env(reset_key, params) if restart is None else restart(stepped)
        pick = lambda new, old: jnp.where(done, new, old)  # noqa: E731
        return jax.tree.map(pick, obs_reset, obs_stepped), jax.tree.map(pick, fresh, stepped)

    if differentiable:
        obs, next_state = reset(None)
    else:
        obs, next_state = jax.lax.cond(any_episode_ended(done), reset, lambda _: (obs_stepped, stepped), None)
    if isinstance(getattr(next_state, "info", None), dict):  # Brax and Playground states keep it, gymnax's have none
        next_state = next_state.replace(info={**next_state.info, "final_obs": obs_stepped})
    info = {**info, "final_observation": obs_stepped}
    return obs, next_state, jnp.asarray(reward, jnp.float32), terminated, truncated, info


def resets_after_step_env(step: Callable) -> Callable:
    """Marks an env class's `step` as `step_env` followed by `step_resetting_when_done`'s reset."""
    step.resets_after_step_env = True
    return step


def steps_through_step_env(env: Any) -> bool:
    """Whether `env.step` is `step_env` and a reset: gymnax's own step, or one marked
    `resets_after_step_env` (Ajax's wrappers', Brax's and Playground's). An episode counted to its
    first end can then be stepped by `step_without_reset`, and a program that does so compiles no
    reset in its loop (a Brax or Playground reset is a full physics pass)."""
    step = type(env).step
    return step is environment.Environment.step or getattr(step, "resets_after_step_env", False)


def step_without_reset(env: environment.Environment, key: jax.Array, state: Any, action: jax.Array, params: Any):
    """`step_resetting_when_done`'s step with the reset left out, from the same key: the same
    transition up to an episode's end, and the ended episode stepped on after it."""
    step_key, _ = jax.random.split(key)
    obs, stepped, reward, terminated, truncated, info = _stepped(env, step_key, state, action, params)
    return obs, stepped, jnp.asarray(reward, jnp.float32), terminated, truncated, {**info, "final_observation": obs}


class Wrapper(environment.Environment):
    """Delegate everything to the inner env; subclasses change step_env or reset_env (and ActionRepeat)."""

    def __init__(self, env: environment.Environment):
        super().__init__()
        self.env = env

    @property
    def default_params(self) -> Any:
        return self.env.default_params

    def step_env(self, key, state, action, params):
        return self.env.step_env(key, state, action, params)

    def reset_env(self, key, params):
        return self.env.reset_env(key, params)

    def is_truncated(self, state, params):
        return self.env.is_truncated(state, params)

    @resets_after_step_env
    def step(self, key, state, action, params=None):
        """The auto-reset of the layer below that has one (Brax, Playground, AutoReset), else gymnax's."""
        if self.reset_policy is None:
            return super().step(key, state, action, params)
        params = self.default_params if params is None else params
        return step_resetting_when_done(self, key, state, action, params, **self.reset_policy)

    @property
    def reset_policy(self) -> dict[str, Any] | None:
        return getattr(self.env, "reset_policy", None)

    def action_space(self, params):
        return self.env.action_space(params)

    def observation_space(self, params):
        return self.env.observation_space(params)

    @property
    def num_actions(self) -> int:
        return self.env.num_actions

    @property
    def name(self) -> str:
        return f"{type(self).__name__}({self.env.name})"


class ObservationNoiseWrapper(Wrapper):
    """Add N(0, std^2) noise to every observation the agent sees, at reset and at every step.

    Only the observation is noisy: the state, rewards and flags are the inner env's. The
    step's final observation (`Transition.next_obs` at an episode's end) is noisy too, as
    the agent would have seen it. With `std == 0` the key is passed through untouched, so
    the wrapper is exactly the inner env.
    """

    def __init__(self, env: environment.Environment, std: float):
        if not std >= 0.0:  # also refuses NaN
            raise ValueError(f"ObservationNoiseWrapper needs std >= 0, got {std}.")
        super().__init__(env)
        self.std = float(std)

    def _noisy(self, key: jax.Array, obs: Any) -> Any:
        leaves, treedef = jax.tree.flatten(obs)
        keys = jax.random.split(key, len(leaves))
        noisy = [
            leaf + self.std * jax.random.normal(k, jnp.shape(leaf), jnp.result_type(leaf, jnp.float32))
            for k, leaf in zip(keys, leaves, strict=True)
        ]
        return jax.tree.unflatten(treedef, noisy)

    def step_env(self, key, state, action, params):
        if self.std == 0.0:
            return self.env.step_env(key, state, action, params)
        env_key, noise_key = jax.random.split(key)  # the inner env's randomness stays independent of the noise
        obs, state, reward, terminated, info = self.env.step_env(env_key, state, action, params)
        return self._noisy(noise_key, obs), state, reward, terminated, info

    def reset_env(self, key, params):
        if self.std == 0.0:
            return self.env.reset_env(key, params)
        env_key, noise_key = jax.random.split(key)
        obs, state = self.env.reset_env(env_key, params)
        return self._noisy(noise_key, obs), state

    @property
    def name(self) -> str:
        return f"ObservationNoiseWrapper({self.env.name}, {self.std})"


class ObservationMap(Wrapper):
    """The inner env with `mapped` applied to every observation, at reset and at every step
    (the final one included): the base of wrappers that change what the agent sees only."""

    def mapped(self, obs: Any) -> Any:
        raise NotImplementedError

    def step_env(self, key, state, action, params):
        obs, state, reward, terminated, info = self.env.step_env(key, state, action, params)
        return self.mapped(obs), state, reward, terminated, info

    def reset_env(self, key, params):
        obs, state = self.env.reset_env(key, params)
        return self.mapped(obs), state


class ObservationMask(ObservationMap):
    """Zero the observation entries where `keep` is False, at reset and at every step.

    Hiding part of the state makes a task partially observable: CartPole with its two
    velocities masked, `ObservationMask(env, (True, False, True, False))`, is the standard
    check that a recurrent agent infers what it cannot see.
    """

    def __init__(self, env: environment.Environment, keep: Any):
        super().__init__(env)
        self.keep = tuple(bool(k) for k in keep)
        shape = env.observation_space(env.default_params).shape
        if (len(self.keep),) != tuple(shape):
            raise ValueError(f"ObservationMask needs one flag per observation entry, {shape}; got {len(self.keep)}.")

    def mapped(self, obs: jax.Array) -> jax.Array:
        return obs * jnp.asarray(self.keep, jnp.result_type(obs))


class WithoutActionMask(ObservationMap):
    """Drop the `"action_mask"` key from a dict observation: every action becomes allowed.

    The ablation that shows what a mask is worth: the same task, the agent left to learn
    which actions are invalid from their consequences (Jumanji's Knapsack ends an episode on
    one). The env still refuses or penalises invalid actions as it always did.
    """

    def __init__(self, env: environment.Environment):
        super().__init__(env)
        space = env.observation_space(env.default_params)
        if not isinstance(space, spaces.Dict) or ACTION_MASK not in space.spaces:
            raise ValueError(
                f"WithoutActionMask needs a dict observation with an {ACTION_MASK!r} key; {env.name}'s has none."
            )

    def mapped(self, obs: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in obs.items() if key != ACTION_MASK}

    def observation_space(self, params):
        return spaces.Dict(self.mapped(self.env.observation_space(params).spaces))


def _observation_fn(env: Any) -> Callable[[jax.Array, Any, Any], Any]:
    """The inner env's state -> observation map as (key, state, params) -> obs.

    Gymnax's base class defines both hooks to raise NotImplementedError, so a hook counts
    only if the env's class overrides it; `observe` covers envs (FrozenLake) that have no get_obs.
    """
    base = environment.Environment
    get_obs = getattr(type(env), "get_obs", None)
    if get_obs is not None and get_obs is not base.get_obs:
        return lambda key, state, params: env.get_obs(state, params)
    observe = getattr(type(env), "observe", None)
    if observe is not None and observe is not base.observe:
        return lambda key, state, params: env.observe(key, state, None, params)
    raise TypeError(
        f"InitialStateWrapper needs the inner env's observation of a state, but {type(env).__name__} defines "
        "neither get_obs(state, params) nor observe(key, state, action, params). Wrap the bare gymnax env "
        "(InitialStateWrapper innermost), or give the env a get_obs."
    )


class InitialStateWrapper(Wrapper):
    """Start every episode, including gymnax's auto-resets, in the state `fn` returns.

    `fn(key, params)` builds the inner env's state; `fn(key, state, params)` edits the state
    the inner env's own reset drew (pinning Pendulum's angle and speed, say, keeps the
    rest). Either way set `time` to 0 if you build one, since the inner env's time limit
    counts from it. The observation is the inner env's view of that state, so a chosen start
    (Pendulum hanging down) looks like any other state.
    """

    def __init__(self, env: environment.Environment, fn: Callable[..., Any]):
        if not callable(fn):
            raise TypeError(
                "InitialStateWrapper needs fn(key, params) -> env_state or fn(key, state, params) -> env_state, "
                f"got {type(fn).__name__}."
            )
        arity = _positional_arity(fn)
        if arity not in (2, 3, None):
            raise TypeError(
                f"InitialStateWrapper's fn takes {arity} positional argument{'s' if arity != 1 else ''}; it must be "
                "fn(key, params) -> env_state (build the state) or fn(key, state, params) -> env_state (edit the "
                "state the inner env's reset drew)."
            )
        super().__init__(env)
        self.fn = fn
        self.edits_reset = arity == 3
        self._observe = _observation_fn(env)
        try:
            jax.eval_shape(self.reset_env, jax.random.PRNGKey(0), env.default_params)
        except Exception as failure:
            raise TypeError(
                f"InitialStateWrapper's fn failed when traced on {env.name} ({type(failure).__name__}: {failure}). "
                "It runs inside the compiled reset: fn(key, params) or fn(key, state, params), returning the env's "
                "state."
            ) from failure

    def reset_env(self, key, params):
        state_key, obs_key = jax.random.split(key)
        if self.edits_reset:
            _, drawn = self.env.reset_env(state_key, params)
            state = self.fn(state_key, drawn, params)
        else:
            state = self.fn(state_key, params)
        return self._observe(obs_key, state, params), state


def _positional_arity(fn: Callable[..., Any]) -> int | None:
    """How many positional arguments `fn` takes (None when it takes any number)."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    kinds = [p.kind for p in parameters]
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(kind in positional for kind in kinds)


class ClipAction(Wrapper):
    """Clip a continuous action into the inner env's action box before stepping.

    Ajax's loop already maps agent actions onto the box; this is for envs used outside it,
    or for policies (a user's, an evaluation script's) that can act out of bounds.
    """

    def __init__(self, env: environment.Environment):
        space = env.action_space(env.default_params)
        if not isinstance(space, spaces.Box):
            raise ValueError(
                f"ClipAction applies to continuous (Box) action spaces, but {env.name} has "
                f"{type(space).__name__} actions: there is nothing to clip."
            )
        super().__init__(env)

    def step_env(self, key, state, action, params):
        space = self.env.action_space(params)
        action = jnp.clip(action, space.low, space.high)
        return self.env.step_env(key, state, action, params)


class AutoReset(Wrapper):
    """gymnax's auto-reset, computed only on steps where some episode ended.

    gymnax's `Environment.step` computes a reset on every step and selects it where an
    episode ended; for an env whose reset is costly, this computes it under a branch taken
    only when some copy, in any seed, ended an episode (`differentiable=True` keeps the
    every-step select). Same keys, same episodes: the results equal gymnax's step.
    """

    def __init__(self, env: environment.Environment, differentiable: bool = False):
        super().__init__(env)
        self.differentiable = differentiable

    @property
    def reset_policy(self) -> dict[str, Any]:
        return {"differentiable": self.differentiable, "restart": None}
