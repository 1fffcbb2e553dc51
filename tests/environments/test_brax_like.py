"""Brax and MuJoCo Playground behind Ajax's layer (brax_like): time limits, resets, training (TargetGym's too).

Physics compiles slowly on a CPU: each backend's reset and step are compiled once per module,
with the time limit and the termination step as data, and serve every rollout check.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from ajax.agents.SAC.core import soft_q_target
from ajax.environments.brax_like import BraxLikeEnv, BraxLikeParams, make_brax, make_playground
from ajax.environments.create import prepare_env
from ajax.environments.interaction import reset_envs, step_envs
from ajax.logging import LoggingConfig
from ajax.state import SEED_AXIS
from tests.conftest import count_conds

K = 4  # the step at which the twins' episodes end
NEVER = 1_000_000
TINY = {"actor_architecture": ("8", "relu"), "critic_architecture": ("8", "relu")}


@struct.dataclass
class TwinParams(BraxLikeParams):
    terminate_at: int = NEVER


class TerminatesAt(BraxLikeEnv):
    """A Brax/Playground env whose episode also truly terminates at `params.terminate_at` steps.

    Both limits are params, data to a jitted step: one program steps both twins below.
    """

    @property
    def default_params(self) -> TwinParams:
        return TwinParams(max_steps_in_episode=self._episode_length)

    def step_env(self, key, state, action, params):
        obs, stepped, reward, terminated, info = super().step_env(key, state, action, params)
        return obs, stepped, reward, terminated | (stepped.info["steps"] >= params.terminate_at), info


LIMITED = TwinParams(max_steps_in_episode=K, terminate_at=NEVER)  # truncated after K steps
TERMINAL = TwinParams(max_steps_in_episode=NEVER, terminate_at=K)  # terminated after K steps


@dataclasses.dataclass(frozen=True)
class Transitions:
    """Per step (time axis first): what step_envs returns, and the observation it stepped from."""

    obs: np.ndarray
    next_obs: np.ndarray
    reward: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    final_obs: np.ndarray


class Rollout:
    """Copies of an env, with a jitted reset and a jitted step that takes the env params as data."""

    def __init__(self, env: BraxLikeEnv, n_envs: int = 2):
        self.env_args = prepare_env(env, n_envs=n_envs)
        self.zeros = jnp.zeros((n_envs, self.env_args.action_dim))
        self.reset = jax.jit(lambda key: reset_envs(key, self.env_args))
        self.step = jax.jit(self.step_with)

    def step_with(self, key, state, action, params):
        return step_envs(key, state, action, dataclasses.replace(self.env_args, env_params=params))

    def transitions(self, params: TwinParams, steps: int) -> Transitions:
        """Step `steps` times with zero actions from the reset of PRNGKey(3)."""
        obs, state = self.reset(jax.random.PRNGKey(3))
        rows = []
        for key in jax.random.split(jax.random.PRNGKey(3), steps):
            next_obs, state, *rest = self.step(key, state, self.zeros, params)
            rows.append((obs, next_obs, *rest))
            obs = next_obs
        return Transitions(*(np.stack(column) for column in zip(*rows, strict=True)))


@pytest.fixture(scope="module")
def brax_pendulum():
    import brax.envs

    return brax.envs.get_environment("inverted_pendulum")


@pytest.fixture(scope="module")
def brax_twin(brax_pendulum):
    return Rollout(TerminatesAt(brax_pendulum, "twin", episode_length=K))


@pytest.fixture(scope="module")
def playground_twin():
    """PendulumSwingup (no constraint to solve: the cheapest MJX step to compile), each copy restarting
    from its first state (the auto-reset then compiles no MJX forward)."""
    from mujoco_playground import registry

    pendulum = registry.load("PendulumSwingup", config_overrides={"impl": "jax"})
    return Rollout(TerminatesAt(pendulum, "twin", episode_length=K, fresh_reset=False))


def test_physics_envs_report_their_spaces_without_a_reset():
    env_args = prepare_env("inverted_pendulum", n_envs=2, episode_length=30)
    assert env_args.continuous and env_args.observation_dim == 4 and env_args.action_dim == 1
    assert env_args.action_low == (-1.0,) and env_args.max_episode_steps == 30


def test_brax_env_by_id_is_the_brax_env():
    env = make_brax("inverted_pendulum", 50, False)
    assert env.default_params.max_steps_in_episode == 50 and env.num_actions == 1


def test_the_backends_physics_is_traced_once_for_the_programs_that_step_as_many_copies(monkeypatch):
    """A run's initial state, its collection with the auto-reset and an evaluation at as many
    copies trace the backend's reset and step once between them, and each program's jaxpr is the
    one the backend's own methods make. Brax's `fast` stub stands in for physics."""
    import collections

    import brax.envs

    stub, traced = type(brax.envs.get_environment("fast")), collections.Counter()
    for name in ("reset", "step"):
        method = getattr(stub, name)

        def counted(self, *args, method=method, name=name):
            traced[name] += 1
            return method(self, *args)

        monkeypatch.setattr(stub, name, counted)
    env_args = prepare_env(make_brax("fast", K), n_envs=2)
    constructed = traced.copy()  # the shapes read at construction, one copy unbatched
    key, action = jax.random.PRNGKey(0), jnp.zeros((2, env_args.action_dim))
    initial = jax.make_jaxpr(lambda key: reset_envs(key, env_args))(key)
    state = reset_envs(key, env_args)[1]
    collect = jax.make_jaxpr(lambda key, state: step_envs(key, state, action, env_args))(key, state)
    evaluate = jax.make_jaxpr(lambda key, state: step_envs(key, state, action, env_args, reset=False))(key, state)
    assert traced - constructed == {"reset": 1, "step": 1}
    env_args.env._reset, env_args.env._step = env_args.env._env.reset, env_args.env._env.step
    assert str(initial) == str(jax.make_jaxpr(lambda key: reset_envs(key, env_args))(key))
    assert str(collect) == str(jax.make_jaxpr(lambda key, state: step_envs(key, state, action, env_args))(key, state))
    unreset = jax.make_jaxpr(lambda key, state: step_envs(key, state, action, env_args, reset=False))(key, state)
    assert str(evaluate) == str(unreset)


@pytest.mark.parametrize("backend", ["brax", "playground"])
def test_time_limit_twin_bootstraps_apart_from_a_true_termination(backend, request):
    rollout = request.getfixturevalue(f"{backend}_twin")
    limited, terminal = rollout.transitions(LIMITED, K + 1), rollout.transitions(TERMINAL, K + 1)
    end = K - 1  # the K-th step ends both episodes
    assert limited.truncated[end].all() and not limited.terminated[end].any()
    assert terminal.terminated[end].all() and not terminal.truncated[end].any()
    for run in (limited, terminal):
        assert not (run.terminated[:end].any() or run.truncated[:end].any())
    # Same dynamics, same final observation; the next observation is a new episode's.
    np.testing.assert_allclose(limited.final_obs[end], terminal.final_obs[end], rtol=1e-5)
    assert not np.allclose(limited.next_obs[end], limited.final_obs[end])
    np.testing.assert_allclose(limited.obs[end + 1], limited.next_obs[end])
    # SAC's target with a hand-made critic Q(s', a') = sum(s'), alpha = 0, gamma = 0.9.
    targets = [
        soft_q_target(run.reward[end], run.terminated[end], jnp.sum(run.final_obs[end], axis=-1), 0.0, 0.0, 0.9)
        for run in (limited, terminal)
    ]
    bootstrapped = limited.reward[end] + 0.9 * np.sum(limited.final_obs[end], axis=-1)
    np.testing.assert_allclose(targets[0], bootstrapped, rtol=1e-5)
    np.testing.assert_allclose(targets[1], terminal.reward[end], rtol=1e-6)
    assert not np.allclose(*targets)


def test_the_reset_runs_only_when_some_episode_ended(brax_pendulum, brax_twin):
    every = Rollout(TerminatesAt(brax_pendulum, "every", episode_length=K, differentiable_reset=True))
    key, action = jax.random.PRNGKey(0), brax_twin.zeros
    _, state = brax_twin.reset(key)

    def step(state):
        return brax_twin.step_with(key, state, action, LIMITED)

    # A branch, still a branch under the seed vmap: the reset's flag is shared by every copy and seed.
    assert count_conds(brax_twin.step.trace(key, state, action, LIMITED).jaxpr.jaxpr) > 0
    seeds = jax.tree.map(lambda x: jnp.stack([x, x]), state)
    assert count_conds(jax.make_jaxpr(jax.vmap(step, axis_name=SEED_AXIS))(seeds).jaxpr) > 0
    assert count_conds(every.step.trace(key, state, action, LIMITED).jaxpr.jaxpr) == 0
    # The definitions: no episode ended -> the stepped state; one ended -> a new state for that copy only.
    ended = state.replace(info={**state.info, "steps": jnp.array([K - 1, 0])})
    for rollout in (brax_twin, every):
        obs1, state1, *_ = rollout.step(key, ended, action, LIMITED)
        stepped_obs = rollout.step(key, state, action, LIMITED)[0]
        assert int(state1.info["steps"][0]) == 0 and int(state1.info["steps"][1]) == 1
        np.testing.assert_allclose(obs1[1], stepped_obs[1], rtol=1e-6)
        assert not np.allclose(obs1[0], state1.info["final_obs"][0])
    np.testing.assert_allclose(
        brax_twin.step(key, ended, action, LIMITED)[0], every.step(key, ended, action, LIMITED)[0], rtol=1e-6
    )


def test_fresh_resets_draw_a_new_initial_state_each_episode(brax_twin):
    run = brax_twin.transitions(LIMITED, 3 * K)
    starts = run.next_obs[run.truncated[:, 0], 0]
    assert len(starts) == 3 and not np.allclose(starts[0], starts[1]) and not np.allclose(starts[1], starts[2])


def test_without_fresh_resets_every_episode_restarts_from_the_first_state(playground_twin):
    run = playground_twin.transitions(LIMITED, 3 * K)
    starts = run.next_obs[run.truncated[:, 0]]  # (episodes, copies, obs)
    assert len(starts) == 3
    np.testing.assert_allclose(starts, np.broadcast_to(run.obs[0], starts.shape), rtol=1e-6)
    assert not np.allclose(starts[:, 0], starts[:, 1])  # each copy keeps its own first state


def finite_run(agent, n_timesteps: int, log_frequency: int) -> dict[str, np.ndarray]:
    """One seed, one evaluation episode per log: finite state, evaluations and critic loss.

    Each env copy must end an episode within the budget: its last return is NaN before one.
    """
    logging = LoggingConfig(log_frequency=log_frequency)
    state, evaluations = agent.train(seed=[0], n_timesteps=n_timesteps, logging_config=logging, num_episode_test=1)
    assert all(np.isfinite(leaf).all() for leaf in jax.tree.leaves(state) if jnp.issubdtype(leaf.dtype, jnp.floating))
    evaluations = {name: np.asarray(value) for name, value in evaluations.items()}
    assert (evaluations["timestep"] > 0).all()
    for name in ("Eval/episodic mean reward", "value/critic_loss"):
        assert np.isfinite(evaluations[name]).all(), name
    return evaluations


def tiny_sac(env, episode_length: int):
    from ajax import SAC

    budget = {"learning_starts": 32, "batch_size": 32, "buffer_size": 256}
    return SAC(env, n_envs=2, episode_length=episode_length, **budget, **TINY)


# The physics training runs restart each copy from its first state: the auto-reset then
# compiles no physics reset (two fewer in each program; ids route to these builders, test_ids).
def test_sac_trains_on_brax_inverted_pendulum_whose_episodes_terminate():
    env = make_brax("inverted_pendulum", 100, fresh_reset=False)
    evaluations = finite_run(tiny_sac(env, 100), 64, 64)
    # Random balancing falls within ~30 steps: evaluation episodes end by termination, before the limit.
    assert (evaluations["Eval/mean episodic length"] < 100).all()


# About 25 s: Playground's physics compiled into a whole training program. The default suite
# checks Playground at the env level (the twin and reset tests above) and an agent's whole
# program on Brax physics (SAC above).
@pytest.mark.slow
def test_ppo_trains_on_playground_pendulum_swingup():
    from ajax import PPO

    agent = PPO(
        make_playground("PendulumSwingup", 16, fresh_reset=False),
        n_envs=2,
        n_steps=8,
        batch_size=16,
        n_epochs=1,
        episode_length=16,
        **TINY,
    )
    evaluations = finite_run(agent, 32, 16)
    assert (evaluations["Eval/mean episodic length"] == 16).all()  # the swing-up never terminates


def test_sac_trains_on_targetgym_cstr():
    finite_run(tiny_sac("CSTR", 20), 64, 64)


def test_a_physics_env_refuses_an_agent_of_the_other_action_space():
    from ajax import DQN

    with pytest.raises(ValueError, match="DQN acts in discrete action spaces, but inverted_pendulum is continuous"):
        DQN("inverted_pendulum")


class LoadedError(Exception):
    """Stops make_playground at Playground's load, holding the overrides it was asked for."""


@pytest.mark.parametrize(("backend", "impl"), [("cpu", "jax"), ("tpu", "jax"), ("gpu", None)])
def test_playground_takes_mjxs_jax_implementation_anywhere_but_a_gpu(backend, impl, monkeypatch):
    from mujoco_playground import registry

    def load(env_id: str, config_overrides: dict) -> None:
        raise LoadedError(config_overrides)

    monkeypatch.setattr(jax, "default_backend", lambda: backend)
    monkeypatch.setattr(registry, "load", load)
    with pytest.raises(LoadedError) as loaded:
        make_playground("PendulumSwingup", episode_length=None)
    assert loaded.value.args[0].get("impl") == impl  # warp, Playground's default, runs on CUDA GPUs and CPUs only
