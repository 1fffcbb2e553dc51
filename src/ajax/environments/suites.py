"""Craftax, Navix and Jumanji environments behind gymnax's 1.x interface.

Each suite has its own step contract: Craftax's is gymnax's older one, whose `done` joins
a death and the time limit; Navix's timesteps carry a step type (transition, truncation,
termination); Jumanji's carry a discount, zero only at a true termination. Ajax keeps its
own contract for all three, as for Brax:

- the time limit is Ajax's (`params.max_steps_in_episode`, set by `episode_length`, by
  default the suite's own) and is a truncation, so agents bootstrap there; the suite's own
  limit is lifted (Craftax, and Jumanji, whose Maze ends its episodes there with a zero
  discount) or set to the same length (Navix). A Jumanji episode that ends with a nonzero
  discount is a truncation too;
- `terminated` is the suite's true end of an episode only;
- the auto-reset is Ajax's (`step_resetting_when_done`), computed only on steps where some
  episode ended: Craftax's world generation is costly, and the suites' own auto-resets
  compute it on every step under `vmap`;
- spaces are gymnax's; Jumanji's named-tuple observations become dicts (nested fields
  joined with "."), whose `action_mask` Ajax's discrete agents apply.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import environment, spaces

from ajax.environments.ids import unsupported_env_message
from ajax.wrappers import step_resetting_when_done

NEVER = 2**31 - 1  # a suite's own time limit, lifted where Ajax keeps the limit


@struct.dataclass
class SuiteParams:
    max_steps_in_episode: int = 1000
    game: Any = None  # the suite's own params, where it has them (Craftax)


@struct.dataclass
class SuiteState:
    game: Any
    time: jax.Array
    ended_by_env: jax.Array  # the suite's own time limit ended the episode (Jumanji)


def _started(game: Any) -> SuiteState:
    return SuiteState(game, jnp.zeros((), jnp.int32), jnp.zeros((), bool))


class SuiteEnv(environment.Environment):
    """The parts the three suites share: the name, the time limit and Ajax's auto-reset."""

    def __init__(self, name: str, episode_length: int):
        super().__init__()
        self._name = name
        self._episode_length = int(episode_length)

    @property
    def name(self) -> str:
        return self._name

    @property
    def default_params(self) -> SuiteParams:
        return SuiteParams(max_steps_in_episode=self._episode_length)

    def action_space(self, params: Any = None) -> spaces.Discrete:
        return spaces.Discrete(self.num_actions)

    def is_truncated(self, state: SuiteState, params: SuiteParams) -> jax.Array:
        return (state.time >= params.max_steps_in_episode) | state.ended_by_env

    @property
    def reset_policy(self) -> dict[str, Any]:
        return {"differentiable": False, "restart": None}

    def step(self, key: jax.Array, state: SuiteState, action: jax.Array, params: Any = None):
        params = self.default_params if params is None else params
        return step_resetting_when_done(self, key, state, action, params, **self.reset_policy)


def _box(low: Any, high: Any, shape: tuple[int, ...], dtype: Any) -> spaces.Box:
    return spaces.Box(low, high, tuple(int(n) for n in shape), dtype)


class CraftaxEnv(SuiteEnv):
    """A Craftax game (Classic or full, symbolic or pixels); its episode ends at death (or, in
    full Craftax, at the boss's defeat), its 10,000 or 100,000 steps are Ajax's time limit."""

    def __init__(self, game: Any, name: str, episode_length: int | None):
        super().__init__(name, episode_length or game.default_params.max_timesteps)
        self._game = game

    @property
    def default_params(self) -> SuiteParams:
        return super().default_params.replace(game=self._game.default_params.replace(max_timesteps=NEVER))

    @property
    def num_actions(self) -> int:
        return int(self._game.num_actions)

    def observation_space(self, params: Any = None) -> spaces.Box:
        space = self._game.observation_space(self._game.default_params)
        return _box(space.low, space.high, space.shape, space.dtype)

    def reset_env(self, key: jax.Array, params: SuiteParams) -> tuple[jax.Array, SuiteState]:
        obs, game = self._game.reset_env(key, params.game)
        return obs, _started(game)

    def step_env(self, key: jax.Array, state: SuiteState, action: jax.Array, params: SuiteParams):
        obs, game, reward, done, info = self._game.step_env(key, state.game, action, params.game)
        return obs, state.replace(game=game, time=state.time + 1), reward, done, info


class NavixEnv(SuiteEnv):
    """A Navix grid world; its observation is the symbolic grid (uint8 codes, read over their range)."""

    def __init__(self, game: Any, name: str):
        super().__init__(name, game.max_steps)
        self._game = game

    @property
    def num_actions(self) -> int:
        return len(self._game.action_set)

    def observation_space(self, params: Any = None) -> spaces.Box:
        space = self._game.observation_space
        return _box(space.minimum, space.maximum, space.shape, space.dtype)

    def reset_env(self, key: jax.Array, params: SuiteParams) -> tuple[jax.Array, SuiteState]:
        timestep = self._game.reset(key)
        return timestep.observation, _started(timestep)

    def step_env(self, key: jax.Array, state: SuiteState, action: jax.Array, params: SuiteParams):
        """Navix's step without its auto-reset (Ajax's resets), its own randomness drawn from its state."""
        del key
        from navix.environments.environment import StepType

        timestep = self._game._step(state.game, action)
        terminated = timestep.step_type == StepType.TERMINATION
        return timestep.observation, state.replace(game=timestep, time=state.time + 1), timestep.reward, terminated, {}


def _as_dict(observation: Any, prefix: str = "") -> dict[str, jax.Array]:
    """A Jumanji observation (a named tuple, perhaps nested) as one flat dict of arrays."""
    out: dict[str, jax.Array] = {}
    for field, value in observation._asdict().items():
        if hasattr(value, "_asdict"):
            out.update(_as_dict(value, f"{prefix}{field}."))
        else:
            out[f"{prefix}{field}"] = jnp.asarray(value)
    return out


class JumanjiEnv(SuiteEnv):
    """A Jumanji environment with one discrete action; its observation is a dict, with its action mask.

    Its time limit, where it has one (Snake's 4,000 steps, Maze's 100, PacMan's 1,000), is Ajax's;
    the others end their episodes themselves, and default to 1,000 steps.
    """

    def __init__(self, game: Any, name: str, episode_length: int | None):
        super().__init__(name, episode_length or 1000)
        self._game = game
        self._example = jax.eval_shape(lambda key: _as_dict(game.reset(key)[1].observation), jax.random.PRNGKey(0))

    @property
    def num_actions(self) -> int:
        return int(self._game.action_spec.num_values)

    def observation_space(self, params: Any = None) -> spaces.Dict:
        def space(array: jax.ShapeDtypeStruct) -> spaces.Box:
            if array.dtype == jnp.bool_:
                return _box(0, 1, array.shape, jnp.bool_)
            return _box(-jnp.inf, jnp.inf, array.shape, array.dtype)

        return spaces.Dict({key: space(array) for key, array in self._example.items()})

    def reset_env(self, key: jax.Array, params: SuiteParams) -> tuple[dict[str, jax.Array], SuiteState]:
        game, timestep = self._game.reset(key)
        return _as_dict(timestep.observation), _started(game)

    def step_env(self, key: jax.Array, state: SuiteState, action: jax.Array, params: SuiteParams):
        """Jumanji's step; its episode end with a zero discount is a termination, any other a truncation."""
        del key
        game, timestep = self._game.step(state.game, action)
        ended = timestep.last()
        terminated = ended & (timestep.discount == 0)
        state = SuiteState(game, state.time + 1, ended & ~terminated)
        return _as_dict(timestep.observation), state, jnp.asarray(timestep.reward, jnp.float32), terminated, {}


def make_craftax(env_id: str, episode_length: int | None) -> CraftaxEnv:
    from craftax.craftax_env import make_craftax_env_from_name

    return CraftaxEnv(make_craftax_env_from_name(env_id, auto_reset=False), env_id, episode_length)


def make_navix(env_id: str, episode_length: int | None) -> NavixEnv:
    import navix

    return NavixEnv(navix.make(env_id, max_steps=episode_length or 100), env_id)


def make_jumanji(env_id: str, episode_length: int | None) -> JumanjiEnv:
    import jumanji
    from jumanji import specs

    game = jumanji.make(env_id)
    own_limit = getattr(game, "time_limit", None)
    if own_limit is not None:  # Maze's ends with a zero discount: lifted, and kept as Ajax's truncation
        game = jumanji.make(env_id, time_limit=NEVER)
    if not isinstance(game.action_spec, specs.DiscreteArray):
        reason = (
            f"it acts in a {type(game.action_spec).__name__} of shape {tuple(game.action_spec.shape)} (several "
            "actions or agents per step), and Ajax's agents take one discrete action per step"
        )
        raise TypeError(unsupported_env_message(env_id, "jumanji", reason))
    return JumanjiEnv(game, env_id, episode_length or own_limit)
