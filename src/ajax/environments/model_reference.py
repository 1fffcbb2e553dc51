"""Model-reference tracking: make a plant's output follow a reference model's response.

After Busetto, Breschi, Forgione, Piga & Formentin (2024), "One controller to rule them
all", arXiv:2411.06482. Instead of rewarding closeness to the reference itself, which no
real plant can jump to in one step, the task rewards closeness to what a chosen linear
*reference model* driven by the reference would output: the designer states the closed
loop they want (its speed, its overshoot) and the reward measures the mismatch.

At every step t the controller sees the tracking error e_t = r_t - y_t and its previous
input u_{t-1}, as a PI-like controller would, and acts u_t; the plant reaches y_{t+1}, the
model steps with r_t to y_d, and the reward is -(y_d - y_{t+1})^2. The whole step is
differentiable, so analytic policy gradients flow through it when the plant's do.

    env, _ = gymnax.make("Pendulum-v1")
    env = ModelReferenceWrapper(env, StepReference(200, -1.0, 1.0, 20, 60),
                                LinearReferenceModel.first_order(), pendulum_angle)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment, spaces

from ajax.wrappers import Wrapper

__all__ = [
    "LinearReferenceModel",
    "ModelReferenceState",
    "ModelReferenceWrapper",
    "StepReference",
    "pendulum_angle",
]


def pendulum_angle(obs: jax.Array) -> jax.Array:
    """Pendulum-v1's angle from its observation [cos, sin, thetadot]; 0 is upright.

    The angle wraps at +-pi, so track references inside (-pi, pi), away from hanging down.
    """
    return jnp.arctan2(obs[1], obs[0])


@dataclasses.dataclass(frozen=True)
class StepReference:
    """A piecewise-constant reference: levels U[min_value, max_value], each held U{min_duration..max_duration} steps.

    Steps of random size and timing excite the closed loop at every amplitude and from every
    resting point, as the paper's training references do; `horizon` is the episode length.
    """

    horizon: int
    min_value: float
    max_value: float
    min_duration: int
    max_duration: int

    def __post_init__(self) -> None:
        for name in ("horizon", "min_duration", "max_duration"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise ValueError(f"StepReference needs {name} a positive integer (a number of steps), got {value!r}.")
        if self.min_duration > self.max_duration:
            raise ValueError(
                f"StepReference needs min_duration <= max_duration, got {self.min_duration} > {self.max_duration}."
            )
        if not (math.isfinite(self.min_value) and math.isfinite(self.max_value)) or self.min_value > self.max_value:
            raise ValueError(
                f"StepReference needs finite min_value <= max_value, got {self.min_value} and {self.max_value}."
            )

    @property
    def n_segments(self) -> int:
        """Enough levels to cover the horizon even if each lasts only min_duration steps."""
        return -(-self.horizon // self.min_duration)

    def sample(self, key: jax.Array) -> jax.Array:
        level_key, duration_key = jax.random.split(key)
        levels = jax.random.uniform(level_key, (self.n_segments,), minval=self.min_value, maxval=self.max_value)
        durations = jax.random.randint(duration_key, (self.n_segments,), self.min_duration, self.max_duration + 1)
        ends = jnp.cumsum(durations)  # segment i covers steps [ends[i-1], ends[i])
        segment = jnp.searchsorted(ends, jnp.arange(self.horizon), side="right")
        return levels[segment]


@dataclasses.dataclass(frozen=True, eq=False)
class LinearReferenceModel:
    """The closed loop the designer asks for: x+ = A x + B r, y_d = C x + D r, one input, one output.

    Stored as float64 NumPy arrays, so the model's constants follow the computation's
    precision (float32 by default, float64 under x64) rather than fixing it.
    """

    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    D: float

    def __init__(self, A: Any, B: Any, C: Any, D: Any):
        A, B, C, D = _state_space(A, B, C, D)
        object.__setattr__(self, "A", A)
        object.__setattr__(self, "B", B)
        object.__setattr__(self, "C", C)
        object.__setattr__(self, "D", D)
        _check_usable(self)

    @classmethod
    def first_order(
        cls, a: float = 0.4286, b: float = 0.7143, c: float = 0.5669, d: float = 0.2914
    ) -> LinearReferenceModel:
        """x+ = a x + b r, y_d = c x + d r. The defaults are Busetto et al.'s model: one pole at
        0.4286, unit DC gain, a fast and smooth step response at the paper's 1 s sampling."""
        return cls([[a]], [b], [c], d)

    @property
    def state_dim(self) -> int:
        return self.A.shape[0]

    def dc_gain(self) -> float:
        """The output per unit of a constant reference, once the model is at rest."""
        return float(self.C @ np.linalg.solve(np.eye(self.state_dim) - self.A, self.B) + self.D)

    def initial_state(self, y0: jax.Array) -> jax.Array:
        """The state at rest with output y0, so the model starts where the plant is and asks for no jump.

        The reference holding it there is y0 / dc_gain(): y0 itself for a unit-gain model.
        """
        per_unit_output = np.linalg.solve(np.eye(self.state_dim) - self.A, self.B) / self.dc_gain()
        return jnp.asarray(per_unit_output) * y0

    def step(self, x: jax.Array, r: jax.Array) -> tuple[jax.Array, jax.Array]:
        """(x_next, y_d): the next state, and the output now, which feeds r through D."""
        A, B, C = (jnp.asarray(m) for m in (self.A, self.B, self.C))
        return A @ x + B * r, C @ x + self.D * r


def _state_space(A: Any, B: Any, C: Any, D: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    A = np.atleast_2d(np.asarray(A, np.float64))
    n = A.shape[0]
    B = np.asarray(B, np.float64).reshape(-1)
    C = np.asarray(C, np.float64).reshape(-1)
    D = np.asarray(D, np.float64)
    if A.shape != (n, n) or B.shape != (n,) or C.shape != (n,) or D.size != 1:
        raise ValueError(
            "LinearReferenceModel is single input, single output: A (n, n), B and C n entries each, D one; "
            f"got A {A.shape}, B {B.shape}, C {C.shape}, D {D.shape}."
        )
    return A, B, C, float(D.reshape(()))


def _check_usable(model: LinearReferenceModel) -> None:
    """An unstable model or one with zero DC gain gives a target no controller should follow."""
    radius = float(np.max(np.abs(np.linalg.eigvals(model.A))))
    if not radius < 1.0:
        raise ValueError(
            f"LinearReferenceModel needs a stable A (every eigenvalue inside the unit circle), but its spectral "
            f"radius is {radius:.4g}: the reference model's response would diverge."
        )
    gain = model.dc_gain()
    if abs(gain) < 1e-8:
        raise ValueError(
            "LinearReferenceModel needs a nonzero DC gain: a model that settles at zero for every constant "
            "reference asks the plant to ignore the reference, and it cannot start at rest at the plant's output."
        )


@struct.dataclass
class ModelReferenceState:
    """Everything a step needs: the plant, this episode's reference, the model, the time, the last input."""

    env_state: Any
    reference: jax.Array
    model_state: jax.Array
    time: jax.Array
    last_action: jax.Array


class ModelReferenceWrapper(Wrapper):
    """Turn `env` into a tracking task: follow `model`'s response to a reference drawn from `reference`.

    `output_fn` maps `env`'s observation to the scalar output y to track (`pendulum_angle`
    for Pendulum-v1). The controller observes [e_t, u_{t-1}]: e_t = r_t - y_t is the error
    against the reference the coming step is driven by, and u_{t-1} the action it last took
    (zero at reset), as given, before any clipping by the plant. An episode lasts
    `reference.horizon` steps (`default_params` sets `max_steps_in_episode` to it); a longer
    limit holds the reference's last level. The plant's own termination is kept.
    """

    def __init__(
        self,
        env: environment.Environment,
        reference: StepReference,
        model: LinearReferenceModel,
        output_fn: Callable[[Any], jax.Array],
    ):
        super().__init__(env)
        self.reference = reference
        self.model = model
        self.output_fn = output_fn
        self._action_shape = tuple(env.action_space(env.default_params).shape)
        _check_output_fn(env, output_fn)

    @property
    def default_params(self) -> Any:
        return self.env.default_params.replace(max_steps_in_episode=self.reference.horizon)

    @property
    def reset_policy(self) -> dict[str, Any] | None:
        # An inner restart would return the plant's state, without reference or model.
        inner = super().reset_policy
        return None if inner is None else {**inner, "restart": None}

    def observation_space(self, params: Any) -> spaces.Box:
        low, high = self._action_bounds(params)
        return spaces.Box(
            jnp.concatenate([jnp.array([-jnp.inf]), low]),
            jnp.concatenate([jnp.array([jnp.inf]), high]),
            (1 + low.size,),
            jnp.float32,
        )

    def _action_bounds(self, params: Any) -> tuple[jax.Array, jax.Array]:
        space = self.env.action_space(params)
        size = math.prod(self._action_shape)
        if isinstance(space, spaces.Box):
            low = jnp.broadcast_to(jnp.asarray(space.low, jnp.float32), self._action_shape).reshape(size)
            high = jnp.broadcast_to(jnp.asarray(space.high, jnp.float32), self._action_shape).reshape(size)
            return low, high
        return jnp.full((size,), -jnp.inf), jnp.full((size,), jnp.inf)

    def _observe(self, state: ModelReferenceState, y: jax.Array) -> jax.Array:
        r = self._reference_at(state.reference, state.time)
        return jnp.concatenate([jnp.reshape(r - y, (1,)), jnp.ravel(state.last_action)])

    def _reference_at(self, reference: jax.Array, time: jax.Array) -> jax.Array:
        return reference[jnp.minimum(time, self.reference.horizon - 1)]

    def reset_env(self, key: jax.Array, params: Any) -> tuple[jax.Array, ModelReferenceState]:
        env_key, reference_key = jax.random.split(key)
        obs, env_state = self.env.reset_env(env_key, params)
        y0 = jnp.reshape(self.output_fn(obs), ())
        state = ModelReferenceState(
            env_state=env_state,
            reference=self.reference.sample(reference_key),
            model_state=self.model.initial_state(y0),
            time=jnp.zeros((), jnp.int32),
            last_action=jnp.zeros(self._action_shape, jnp.result_type(float)),
        )
        return self._observe(state, y0), state

    def step_env(self, key: jax.Array, state: ModelReferenceState, action: Any, params: Any):
        obs, env_state, _, terminated, info = self.env.step_env(key, state.env_state, action, params)
        y = jnp.reshape(self.output_fn(obs), ())
        r = self._reference_at(state.reference, state.time)
        model_state, y_ref = self.model.step(state.model_state, r)
        state = state.replace(
            env_state=env_state,
            model_state=model_state,
            time=state.time + 1,
            last_action=jnp.reshape(jnp.asarray(action, state.last_action.dtype), self._action_shape),
        )
        reward = -((y_ref - y) ** 2)
        return self._observe(state, y), state, reward, terminated, {**info, "y": y, "y_ref": y_ref, "reference": r}

    def is_truncated(self, state: ModelReferenceState, params: Any) -> jax.Array:
        return state.time >= params.max_steps_in_episode


def _check_output_fn(env: environment.Environment, output_fn: Callable[[Any], jax.Array]) -> None:
    """A vector output would broadcast the error silently; refuse it where the mistake is made."""
    if not callable(output_fn):
        raise TypeError(f"ModelReferenceWrapper needs output_fn(obs) -> scalar, got {type(output_fn).__name__}.")
    obs, _ = jax.eval_shape(env.reset_env, jax.random.PRNGKey(0), env.default_params)
    output = jax.eval_shape(output_fn, obs)
    if math.prod(output.shape) != 1:
        raise ValueError(
            f"ModelReferenceWrapper tracks one output, but output_fn maps {env.name}'s observation of shape "
            f"{obs.shape} to shape {output.shape}. Return the one quantity to track, e.g. pendulum_angle for "
            "Pendulum-v1."
        )
