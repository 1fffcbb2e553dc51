"""Environment helpers: the map between agent units and env units, space queries.

Every continuous agent acts in [-1, 1]. Each env step maps the action onto the env's box
(`agent_action_to_env`), so an agent reaches the whole range whatever the bounds, and
replay stores the agent's own action. An expert written in env units is read through the
inverse map (`env_action_to_agent`), left unclipped so a saturating expert stays visible.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ajax.state import ACTION_MASK, EnvironmentConfig, ObservationPart, allowed_actions, unpacked


def agent_action_to_env(action: jax.Array, low: jax.Array, high: jax.Array) -> jax.Array:
    """c + h * clip(a, -1, 1), with c the box's centre and h its half-width."""
    centre, half_width = (high + low) / 2.0, (high - low) / 2.0
    return centre + half_width * jnp.clip(action, -1.0, 1.0)


def env_action_to_agent(action: jax.Array, low: jax.Array, high: jax.Array) -> jax.Array:
    """(a - c) / h: the inverse of `agent_action_to_env`, unclipped."""
    centre, half_width = (high + low) / 2.0, (high - low) / 2.0
    return (action - centre) / half_width


def action_bounds(env_args: EnvironmentConfig) -> tuple[jax.Array, jax.Array]:
    return (
        jnp.asarray(env_args.action_low, jnp.float32),
        jnp.asarray(env_args.action_high, jnp.float32),
    )


def to_env_action(action: jax.Array, env_args: EnvironmentConfig) -> jax.Array:
    """The action an env's step receives: mapped onto the box, or the discrete index."""
    if not env_args.continuous:
        return action
    return agent_action_to_env(action, *action_bounds(env_args))


def uniform_action(key: jax.Array, env_args: EnvironmentConfig, n: int, obs: Any = None) -> jax.Array:
    """`n` actions drawn uniformly over the agent's action space (warm-up), over the actions
    each observation's mask allows where observations carry one."""
    if env_args.continuous:
        return jax.random.uniform(key, (n, env_args.action_dim), minval=-1.0, maxval=1.0)
    if env_args.action_masked:
        return allowed_uniformly(key, obs[ACTION_MASK])
    return jax.random.randint(key, (n,), 0, env_args.action_dim)


def allowed_uniformly(key: jax.Array, mask: jax.Array) -> jax.Array:
    """One action per row of `mask` (..., n_actions), uniform over those it allows (over every
    action in a row that allows none, `allowed_actions`)."""
    return jax.random.categorical(key, jnp.where(allowed_actions(mask), 0.0, -jnp.inf))


def flatten_observation(obs: Any, batch_dims: int = 1) -> jax.Array:
    """One flat float32 vector per observation: what an agent without an image encoder reads.

    A dict observation's arrays are flattened and joined in the order of their keys (sorted,
    as JAX orders a dict's leaves); an action mask is not an input.
    """
    parts = [obs[key] for key in sorted(obs) if key != ACTION_MASK] if isinstance(obs, Mapping) else [obs]
    flat = [jnp.asarray(part).reshape(*part.shape[:batch_dims], -1).astype(jnp.float32) for part in parts]
    return flat[0] if len(flat) == 1 else jnp.concatenate(flat, axis=-1)


def stored_observation(obs: Any, env_args: EnvironmentConfig, batch_dims: int = 1) -> Any:
    """An observation as the agent keeps it: flat by default; behind an image encoder each
    array in its own shape and stored dtype (`EnvironmentConfig.observation_parts`)."""
    if env_args.observation_parts is None:
        return flatten_observation(obs, batch_dims)

    def kept(part: ObservationPart) -> jax.Array:
        array = obs if part.key is None else obs[part.key]
        return array.reshape(*array.shape[:batch_dims], *part.shape).astype(part.dtype)

    return unpacked({part.key: kept(part) for part in env_args.observation_parts})


class StatefulExpert:
    """An expert that carries state between steps, such as a PID controller's integral.

    Subclass it (a frozen dataclass keeps it hashable): `init_state()` is one copy's state
    at an episode's start, `__call__(obs, state) -> (action, state)` answers one raw
    observation in env units and returns the state to hand back at the next step. The
    collector resets a copy's state when its episode ends.
    """

    def init_state(self) -> Any:
        raise NotImplementedError

    def __call__(self, obs: jax.Array, state: Any) -> tuple[jax.Array, Any]:
        raise NotImplementedError


@dataclass(frozen=True)
class ExpertInAgentUnits:
    """An expert written in env units, read in the agent's: (a - c) / h, unclipped.

    Built once at construction from the env's box, so replay, losses and extensions see one
    unit. Discrete envs' experts answer action indices, which pass through unchanged.
    """

    expert: Callable[..., Any]
    low: tuple[float, ...] = ()
    high: tuple[float, ...] = ()

    @classmethod
    def for_env(
        cls, expert: Callable[..., Any], env_args: EnvironmentConfig, keyword: str = "the expert"
    ) -> ExpertInAgentUnits:
        """`expert` read in `env_args`' agent units, its answer checked (`check_expert_answer`);
        `keyword` names where it was given (`expert_policy=`, `ImitationLoss's expert`) in a refusal."""
        if not callable(expert):
            raise TypeError(f"An expert is a function from raw observations to actions, got {type(expert).__name__}.")
        check_expert_answer(expert, env_args, keyword)
        return cls(expert, env_args.action_low, env_args.action_high)

    @property
    def stateful(self) -> bool:
        return isinstance(self.expert, StatefulExpert)

    def _to_agent(self, action: jax.Array) -> jax.Array:
        if not self.low:
            return action
        low, high = jnp.asarray(self.low, jnp.float32), jnp.asarray(self.high, jnp.float32)
        return env_action_to_agent(jnp.asarray(action, jnp.float32).reshape(*action.shape[:-1], -1), low, high)

    def init_state(self, n: int) -> Any:
        """`n` copies of a stateful expert's initial state; () for a stateless expert."""
        if not self.stateful:
            return ()
        return jax.tree.map(lambda leaf: jnp.broadcast_to(leaf, (n, *jnp.shape(leaf))), self.expert.init_state())

    def act(self, obs: jax.Array, state: Any = ()) -> tuple[jax.Array, Any]:
        """The expert's actions in agent units for a batch of raw observations, and its next state."""
        if self.stateful:
            action, state = jax.vmap(self.expert)(obs, state)
            return self._to_agent(action), state
        return self._to_agent(self.expert(obs)), state

    def __call__(self, obs: jax.Array) -> jax.Array:
        """A stateless expert's actions in agent units (a stateful one needs `act` and its state)."""
        if self.stateful:
            raise TypeError(
                f"{type(self.expert).__name__} is a stateful expert: it needs its state at every step, which this "
                "use cannot give it. Pass a stateless expert (a function of the observation alone)."
            )
        return self._to_agent(self.expert(obs))


def _expert_answer(expert: Callable[..., Any], obs: jax.Array) -> jax.Array:
    """The expert's actions, env units, for a batch of raw observations (a stateful one from its start)."""
    in_env_units = ExpertInAgentUnits(expert)  # no box given: its answers pass through unconverted
    return in_env_units.act(obs, in_env_units.init_state(batch_size(obs)))[0]


def batch_size(obs: Any) -> int:
    """How many observations a batch holds: a dict observation's arrays share their leading axis."""
    return jax.tree.leaves(obs)[0].shape[0]


def check_expert_answer(
    expert: Callable[..., Any], env_args: EnvironmentConfig, keyword: str = "the expert", batch: int = 4
) -> None:
    """Refuse, at construction, an expert whose answer does not fit the env's action space.

    The expert is traced once on a batch of the env's observations: a continuous answer must
    be one float action per observation, shaped like the box, since a flat `(n,)` answer would
    broadcast against the agent's `(n, 1)` actions instead of failing. Its values are then
    checked on the env's first observations: a continuous action must be finite, since a NaN
    would be imitated, stored and acted on without a word (`keyword` names the expert's
    keyword in that refusal), and a discrete index must lie in the action set, where a label
    outside it would silently clone nothing.
    """
    env, params = env_args.env, env_args.env_params
    keys = jax.random.split(jax.random.PRNGKey(0), batch)
    observations = jax.eval_shape(jax.vmap(env.reset, in_axes=(0, None)), keys, params)[0]
    name = getattr(expert, "__name__", type(expert).__name__)
    try:
        answer = jax.eval_shape(lambda obs: _expert_answer(expert, obs), observations)
    except Exception as error:
        raise TypeError(
            f"The expert {name} failed on a batch of observations of shape "
            f"{jax.tree.map(lambda x: x.shape, observations)} "
            f"({type(error).__name__}: {error}). An expert maps a batch of raw observations to a batch of actions."
        ) from error
    if not isinstance(answer, jax.ShapeDtypeStruct):
        raise TypeError(f"The expert {name} must return one array of actions, got {type(answer).__name__}.")
    if env_args.continuous:
        box = tuple(env.action_space(params).shape) or (1,)
        accepted = {(batch, *box), (batch, env_args.action_dim)}
        if answer.shape not in accepted or not jnp.issubdtype(answer.dtype, jnp.floating):
            raise ValueError(
                f"The expert {name} answers {batch} observations with a {answer.dtype} array of shape {answer.shape}; "
                f"the action space is a Box of shape {box}, so it must return floats of shape {(batch, *box)}"
                + (" (e.g. action[:, None] for a one-dimensional box)." if answer.shape == (batch,) else ".")
            )
    elif answer.shape != (batch,) or not jnp.issubdtype(answer.dtype, jnp.integer):
        raise ValueError(
            f"The expert {name} answers {batch} observations with a {answer.dtype} array of shape {answer.shape}; "
            f"the action space is Discrete({env_args.action_dim}), so it must return integer indices of shape "
            f"{(batch,)} (e.g. jnp.argmax(scores, axis=-1))."
        )
    answers = np.asarray(jax.jit(lambda k: _expert_answer(expert, jax.vmap(env.reset, (0, None))(k, params)[0]))(keys))
    if env_args.continuous:
        broken = ~np.isfinite(answers).reshape(batch, -1).all(axis=1)
        if broken.any():
            row = int(np.argmax(broken))
            raise ValueError(
                f"{keyword} ({name}) answers the env's first {batch} observations with a non-finite action "
                f"({answers[row].tolist()} for observation {row}): Ajax would imitate, store or act on it without a "
                "word. Make the expert return finite actions."
            )
        return
    outside = answers[(answers < 0) | (answers >= env_args.action_dim)]
    if outside.size:
        raise ValueError(
            f"The expert {name} answered {sorted(set(outside.tolist()))} on the env's first observations; "
            f"the action space is Discrete({env_args.action_dim}), whose indices run from 0 to "
            f"{env_args.action_dim - 1}."
        )


def require_stateless(expert: Callable[..., Any], user: str) -> None:
    """Refuse, at construction, a stateful expert where nothing can carry its state."""
    if isinstance(expert, StatefulExpert):
        raise TypeError(
            f"{user} calls its expert on single observations without a state, but {type(expert).__name__} is a "
            "stateful expert. Give it a stateless expert (a function of the observation alone)."
        )
