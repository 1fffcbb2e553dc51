"""Tiny gymnax-style environments whose values and best actions are known in closed form."""

from __future__ import annotations

import gymnax
import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import environment, spaces

from ajax.wrappers import Wrapper


@struct.dataclass
class ProbeState(environment.EnvState):
    time: int


@struct.dataclass
class ProbeParams(environment.EnvParams):
    max_steps_in_episode: int = 1


class _Probe(environment.Environment):
    """A constant observation [1.0]; subclasses set the reward, the ending and the actions.

    `noisy_observation` draws the observation uniformly in [-1, 1] at every step instead, still
    irrelevant to the reward: a network that normalises by its batch (CrossQ's) sees no variance
    in a constant input, and its training pass then carries no signal to its first layers.
    """

    def __init__(
        self, continuous: bool = False, episode_steps: int = 1, scale: float = 1.0, noisy_observation: bool = False
    ):
        super().__init__()
        self.continuous, self.episode_steps, self.scale = continuous, episode_steps, scale
        self.noisy_observation = noisy_observation

    def observation(self, key: jax.Array) -> jax.Array:
        return jax.random.uniform(key, (1,), minval=-1.0) if self.noisy_observation else jnp.ones(1)

    @property
    def default_params(self) -> ProbeParams:
        return ProbeParams(max_steps_in_episode=self.episode_steps)

    def reset_env(self, key, params):
        return self.observation(key), ProbeState(time=0)

    def action_space(self, params):
        return spaces.Box(-1.0, 1.0, (1,)) if self.continuous else spaces.Discrete(2)

    def observation_space(self, params):
        return spaces.Box(-1.0, 1.0, (1,))

    def reward(self, action: jax.Array) -> jax.Array:
        raise NotImplementedError

    terminates = True

    def step_env(self, key, state, action, params):
        state = ProbeState(time=state.time + 1)
        terminated = jnp.asarray(self.terminates) & (state.time >= self.episode_steps)
        return self.observation(key), state, self.reward(action), terminated, {}


class OneStepReward(_Probe):
    """Reward 1, then a true terminal: V(s) = Q(s, a) = 1 for every action."""

    def reward(self, action):
        return jnp.asarray(1.0)


class BestAction(_Probe):
    """One step then a terminal. Discrete: action 1 pays 1, action 0 pays 0.
    Continuous: reward 1 - (a - 0.5)^2 in env units, best a = 0.5, worth 1."""

    def reward(self, action):
        if self.continuous:
            return 1.0 - jnp.square(jnp.reshape(action, ()) - 0.5)
        return jnp.asarray(action == 1, jnp.float32)


class EndlessReward(_Probe):
    """Reward `scale` at every step, never terminating, truncated every `episode_steps` steps.

    A correct agent bootstraps at the time limit: V(s) = scale / (1 - gamma). One that
    treats the limit as a terminal learns at most `scale * episode_steps`.
    """

    terminates = False

    def reward(self, action):
        return jnp.asarray(self.scale)


class ActionReward(EndlessReward):
    """Reward equal to the (continuous) action, never terminating: the best action is 1 at every step."""

    def reward(self, action):
        return jnp.reshape(action, ())


class TerminalTwin(EndlessReward):
    """Like EndlessReward but the episode truly terminates at `episode_steps`."""

    terminates = True


@struct.dataclass
class RecallState(environment.EnvState):
    time: int
    cue: jax.Array


class CueRecall(environment.Environment):
    """A memory probe: a cue of -1 or +1 shown at the first step only, then zeros.

    Every step pays a * cue for the action a in [-1, 1], and the episode truly ends after
    `episode_steps` steps. With memory the best return is `episode_steps`; an agent that sees
    only the current observation can earn the first step's 1, after which its expected
    reward is 0 whatever it does.
    """

    def __init__(self, episode_steps: int = 5):
        super().__init__()
        self.episode_steps = episode_steps

    @property
    def default_params(self) -> ProbeParams:
        return ProbeParams(max_steps_in_episode=self.episode_steps + 1)

    def reset_env(self, key, params):
        cue = jnp.where(jax.random.bernoulli(key), 1.0, -1.0)
        return jnp.stack([cue, 1.0]), RecallState(time=0, cue=cue)

    def action_space(self, params):
        return spaces.Box(-1.0, 1.0, (1,))

    def observation_space(self, params):
        return spaces.Box(-1.0, 1.0, (2,))

    def step_env(self, key, state, action, params):
        reward = jnp.reshape(action, ()) * state.cue
        state = state.replace(time=state.time + 1)
        terminated = state.time >= self.episode_steps
        return jnp.zeros(2), state, reward, terminated, {}


class LitSide(environment.Environment):
    """One step on an 8-bit image: one pixel lit (255) in a `size` x `size` frame, at random.

    Action 0 pays 1 when the pixel is in the left half, action 1 when it is in the right
    half, the other action 0, then a true terminal: the best return is 1, a guess's 0.5. The
    answer is where the pixel is, so an image encoder must pass on where it saw it.
    """

    def __init__(self, size: int = 6):
        super().__init__()
        self.size = size

    @property
    def default_params(self) -> ProbeParams:
        return ProbeParams(max_steps_in_episode=1)

    def frame(self, key: jax.Array) -> jax.Array:
        lit = jax.random.randint(key, (), 0, self.size * self.size)
        return (jnp.arange(self.size * self.size) == lit).astype(jnp.uint8).reshape(self.size, self.size, 1) * 255

    def reset_env(self, key, params):
        frame = self.frame(key)
        return frame, RecallState(time=0, cue=jnp.argmax(frame.reshape(-1)) % self.size)

    def step_env(self, key, state, action, params):
        right = state.cue >= self.size // 2
        reward = jnp.asarray(jnp.asarray(action, jnp.int32) == right.astype(jnp.int32), jnp.float32)
        return self.frame(key), RecallState(time=1, cue=state.cue), reward, jnp.asarray(True), {}

    def action_space(self, params):
        return spaces.Discrete(2)

    def observation_space(self, params):
        return spaces.Box(0, 255, (self.size, self.size, 1), jnp.uint8)


@struct.dataclass
class FlipState(environment.EnvState):
    time: int
    cue: jax.Array
    flip: jax.Array


class FlippedLitSide(LitSide):
    """`LitSide` with a dict observation: the frame under "frame", and under "flip" a coin
    (float32, 0 or 1) that swaps which action pays. The answer needs both keys."""

    def reset_env(self, key, params):
        frame_key, flip_key = jax.random.split(key)
        frame, state = super().reset_env(frame_key, params)
        flip = jax.random.bernoulli(flip_key).astype(jnp.int32)
        return {"frame": frame, "flip": flip.astype(jnp.float32)[None]}, FlipState(time=0, cue=state.cue, flip=flip)

    def step_env(self, key, state, action, params):
        right = (state.cue >= self.size // 2).astype(jnp.int32) ^ state.flip
        reward = jnp.asarray(jnp.asarray(action, jnp.int32) == right, jnp.float32)
        obs, _ = self.reset_env(key, params)
        return obs, state.replace(time=1), reward, jnp.asarray(True), {}

    def observation_space(self, params):
        return spaces.Dict(
            {"frame": spaces.Box(0, 255, (self.size, self.size, 1), jnp.uint8), "flip": spaces.Box(0.0, 1.0, (1,))}
        )


class MaskedBestAction(environment.Environment):
    """One step then a terminal, three actions paying 0, 1 and 10, the last forbidden.

    The observation is a dict: {"x": [1.0], "action_mask": [True, True, False]}. An agent
    that applies the mask earns 1 at best and never 10; one that ignored it would learn to
    take the forbidden action.
    """

    @property
    def default_params(self) -> ProbeParams:
        return ProbeParams(max_steps_in_episode=1)

    def observe(self) -> dict[str, jax.Array]:
        return {"x": jnp.ones(1), "action_mask": jnp.array([True, True, False])}

    def reset_env(self, key, params):
        return self.observe(), ProbeState(time=0)

    def step_env(self, key, state, action, params):
        reward = jnp.array([0.0, 1.0, 10.0])[action]
        return self.observe(), ProbeState(time=1), reward, jnp.asarray(True), {}

    def action_space(self, params):
        return spaces.Discrete(3)

    def observation_space(self, params):
        return spaces.Dict({"x": spaces.Box(-1.0, 1.0, (1,)), "action_mask": spaces.Box(0, 1, (3,), jnp.bool_)})


class DictPendulum(Wrapper):
    """Pendulum-v1 observing a dict: {"angle": [cos, sin], "velocity": [theta_dot]}."""

    def __init__(self):
        super().__init__(gymnax.make("Pendulum-v1")[0])

    @staticmethod
    def split(obs: jax.Array) -> dict[str, jax.Array]:
        return {"angle": obs[..., :2], "velocity": obs[..., 2:]}

    def reset_env(self, key, params):
        obs, state = self.env.reset_env(key, params)
        return self.split(obs), state

    def step_env(self, key, state, action, params):
        obs, *rest = self.env.step_env(key, state, action, params)
        return (self.split(obs), *rest)

    def observation_space(self, params):
        inner = self.env.observation_space(params)
        return spaces.Dict(
            {"angle": spaces.Box(-1.0, 1.0, (2,)), "velocity": spaces.Box(-inner.high[2], inner.high[2], (1,))}
        )


class LitSideContinuous(LitSide):
    """`LitSide` with one continuous action in [-1, 1]: reward 1 - (a - target)^2 / 4, the target
    -0.5 when the lit pixel is in the left half and +0.5 in the right. Best return 1; an action
    blind to the frame (a = 0) earns 0.9375."""

    def step_env(self, key, state, action, params):
        target = jnp.where(state.cue >= self.size // 2, 0.5, -0.5)
        reward = 1.0 - jnp.square(jnp.reshape(action, ()) - target) / 4.0
        return self.frame(key), RecallState(time=1, cue=state.cue), reward, jnp.asarray(True), {}

    def action_space(self, params):
        return spaces.Box(-1.0, 1.0, (1,))


class ImageCueRecall(CueRecall):
    """`CueRecall` on 8-bit frames: at the first step one pixel lit in the left half of a 4x4 frame
    for a cue of -1, in the right half for +1; blank frames after. Same rewards and best return,
    so an agent must carry what an image encoder saw through its memory."""

    def frame(self, key: jax.Array, cue: jax.Array) -> jax.Array:
        row = jax.random.randint(key, (), 0, 4)
        column = jax.random.randint(key, (), 0, 2) + jnp.where(cue > 0, 2, 0)
        return jnp.zeros((4, 4, 1), jnp.uint8).at[row, column, 0].set(255)

    def reset_env(self, key, params):
        cue = jnp.where(jax.random.bernoulli(key), 1.0, -1.0)
        return self.frame(jax.random.fold_in(key, 1), cue), RecallState(time=0, cue=cue)

    def observation_space(self, params):
        return spaces.Box(0, 255, (4, 4, 1), jnp.uint8)

    def step_env(self, key, state, action, params):
        _, state, reward, terminated, info = super().step_env(key, state, action, params)
        return jnp.zeros((4, 4, 1), jnp.uint8), state, reward, terminated, info
