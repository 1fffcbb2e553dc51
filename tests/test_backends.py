"""Brax, MuJoCo Playground and TargetGym behind Ajax's environment layer.

Routing by id, the time limit against a true termination on each physics backend (the
bootstrap computed by hand from the transitions the collector records), the auto-reset
computed only when an episode ended, bad input, and short training runs.
MJX compiles slowly on a CPU: environments are built once per module and kept small.
"""

import importlib
import subprocess

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax.agents.SAC.core import soft_q_target
from ajax.environments import ids
from ajax.environments.brax_like import BraxLikeEnv, make_brax, make_playground
from ajax.environments.create import EnvironmentAssetsMissingError, make_env, prepare_env
from ajax.environments.interaction import reset_envs, step_envs
from ajax.state import SEED_AXIS

K = 4  # the step at which the twins' episodes end


class TerminateAt:
    """A Brax/Playground env whose episode truly terminates after `k` steps (a counter in info)."""

    def __init__(self, env, k: int):
        self.env, self.k = env, k

    @property
    def action_size(self) -> int:
        return self.env.action_size

    def reset(self, rng):
        state = self.env.reset(rng)
        return state.replace(info={**state.info, "twin_t": jnp.zeros((), jnp.int32)})

    def step(self, state, action):
        stepped = self.env.step(state, action)
        t = state.info["twin_t"] + 1
        done = jnp.maximum(stepped.done, (t >= self.k).astype(jnp.float32))
        return stepped.replace(done=done, info={**stepped.info, "twin_t": t})


@pytest.fixture(scope="module")
def brax_pendulum():
    import brax.envs

    return brax.envs.get_environment("inverted_pendulum")


@pytest.fixture(scope="module")
def playground_cartpole():
    from mujoco_playground import registry

    return registry.load("CartpoleBalance", config_overrides={"impl": "jax"})


def test_id_lists_match_the_installed_packages():
    import brax.envs
    import target_gym
    from gymnax.environments import environment
    from mujoco_playground import registry

    assert set(ids.BRAX_IDS) == set(brax.envs._envs) - {"fast"}  # "fast" is Brax's own test stub
    assert set(ids.PLAYGROUND_SUITE_IDS) == set(registry.dm_control_suite.ALL_ENVS)
    assert set(ids.PLAYGROUND_IDS) == set(registry.ALL_ENVS)
    envs = {n for n in dir(target_gym) if isinstance(getattr(target_gym, n), type)}
    assert set(ids.TARGETGYM_IDS) == {n for n in envs if issubclass(getattr(target_gym, n), environment.Environment)}
    sets = [set(ids.gymnax_ids()), set(ids.BRAX_IDS), set(ids.PLAYGROUND_IDS), set(ids.TARGETGYM_IDS)]
    assert sum(map(len, sets)) == len(set().union(*sets)), "an id names two backends"


def test_ids_route_to_their_backend():
    assert ids.backend_of("Pendulum-v1") == "gymnax"
    assert ids.backend_of("halfcheetah") == "brax" and ids.backend_of("CheetahRun") == "playground"
    assert ids.backend_of("Plane") == "targetgym" and ids.backend_of("nope") is None
    env, params = make_env("CSTR")
    assert type(env).__module__.startswith("target_gym") and params.max_steps_in_episode == 100


def test_an_unknown_id_names_the_closest_ones():
    with pytest.raises(ValueError, match="Closest ids: halfcheetah"):
        prepare_env("halfchetah")
    with pytest.raises(ValueError, match="CartpoleBalance"):
        prepare_env("CartpoleBalanse")
    with pytest.raises(ValueError, match="Closest ids: Pendulum-v1"):
        prepare_env("pendulum")


def test_a_missing_backend_package_says_how_to_install_it(monkeypatch):
    real = importlib.import_module

    def without_brax(name, *args):
        if name == "brax":
            raise ModuleNotFoundError("No module named 'brax'")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", without_brax)
    with pytest.raises(ImportError, match=r"'ant' is a brax environment.*pip install 'ajax\[brax\]'"):
        prepare_env("ant")


def test_a_menagerie_env_without_its_models_fails_with_what_is_missing(monkeypatch, tmp_path):
    from mujoco_playground._src import mjx_env

    def offline_clone(*args, **kwargs):
        raise subprocess.CalledProcessError(128, ["git", "clone"], stderr="Could not resolve host")

    monkeypatch.setattr(mjx_env, "MENAGERIE_PATH", tmp_path / "mujoco_menagerie")
    monkeypatch.setattr(mjx_env, "_clone_with_progress", offline_clone)
    with pytest.raises(EnvironmentAssetsMissingError, match="needs the MuJoCo Menagerie.*CartpoleBalance") as caught:
        prepare_env("Go1JoystickFlatTerrain")
    assert caught.value.__cause__ is None  # the message, not the subprocess's traceback


def test_physics_envs_report_their_spaces_without_a_reset(brax_pendulum):
    env_args = prepare_env("inverted_pendulum", n_envs=2, episode_length=30)
    assert env_args.continuous and env_args.observation_dim == 4 and env_args.action_dim == 1
    assert env_args.action_low == (-1.0,) and env_args.max_episode_steps == 30


def twin_transitions(env: BraxLikeEnv, steps: int, n_envs: int = 2):
    """Step `n_envs` copies `steps` times with zero actions; the per-step outputs of step_envs."""
    env_args = prepare_env(env, n_envs=n_envs)

    @jax.jit
    def run(key):
        obs, state = reset_envs(key, env_args)

        def step(carry, key):
            obs, state = carry
            out = step_envs(key, state, jnp.zeros((n_envs, env_args.action_dim)), env_args)
            return out[:2], (obs,) + out

        return jax.lax.scan(step, (obs, state), jax.random.split(key, steps))[1]

    return run(jax.random.PRNGKey(3))


@pytest.mark.parametrize("backend", ["brax", "playground"])
def test_time_limit_twin_bootstraps_apart_from_a_true_termination(backend, brax_pendulum, playground_cartpole):
    inner = brax_pendulum if backend == "brax" else playground_cartpole
    limited = BraxLikeEnv(inner, "limited", episode_length=K)
    terminal = BraxLikeEnv(TerminateAt(inner, K), "terminal", episode_length=1000)
    obs_l, next_l, _, reward_l, term_l, trunc_l, final_l = twin_transitions(limited, K + 1)
    obs_t, next_t, _, reward_t, term_t, trunc_t, final_t = twin_transitions(terminal, K + 1)
    end = K - 1  # the K-th step ends both episodes
    assert trunc_l[end].all() and not term_l[end].any()
    assert term_t[end].all() and not trunc_t[end].any()
    assert not (term_l[:end].any() or trunc_l[:end].any() or term_t[:end].any() or trunc_t[:end].any())
    # Same dynamics, same final observation; the next observation is a fresh episode's.
    np.testing.assert_allclose(final_l[end], final_t[end], rtol=1e-5)
    assert not np.allclose(next_l[end], final_l[end])
    np.testing.assert_allclose(obs_l[end + 1], next_l[end])
    # SAC's target with a hand-made critic Q(s', a') = sum(s'), alpha = 0, gamma = 0.9.
    next_q = lambda final: jnp.sum(final, axis=-1)  # noqa: E731
    target_l = soft_q_target(reward_l[end], term_l[end], next_q(final_l[end]), 0.0, 0.0, 0.9)
    target_t = soft_q_target(reward_t[end], term_t[end], next_q(final_t[end]), 0.0, 0.0, 0.9)
    np.testing.assert_allclose(target_l, reward_l[end] + 0.9 * np.sum(final_l[end], axis=-1), rtol=1e-5)
    np.testing.assert_allclose(target_t, reward_t[end], rtol=1e-6)
    assert not np.allclose(target_l, target_t)


def test_the_reset_runs_only_when_some_episode_ended(brax_pendulum):
    limited = BraxLikeEnv(brax_pendulum, "limited", episode_length=K)
    env_args = prepare_env(limited, n_envs=2)
    key = jax.random.PRNGKey(0)
    obs, state = reset_envs(key, env_args)
    action = jnp.zeros((2, 1))

    def step(state):
        return step_envs(key, state, action, env_args)

    # A branch, still a branch under the seed vmap: the reset's flag is shared by every copy and seed.
    assert "cond[" in str(jax.make_jaxpr(step)(state))
    seeds = jax.tree.map(lambda x: jnp.stack([x, x]), state)
    assert "cond[" in str(jax.make_jaxpr(jax.vmap(step, axis_name=SEED_AXIS))(seeds))
    every = prepare_env(BraxLikeEnv(brax_pendulum, "every", episode_length=K, differentiable_reset=True), n_envs=2)
    assert "cond[" not in str(jax.make_jaxpr(lambda s: step_envs(key, s, action, every))(state))
    # The definitions: no episode ended -> the stepped state; one ended -> a fresh state for that copy only.
    ended = state.replace(info={**state.info, "steps": jnp.array([K - 1, 0])})
    for args in (env_args, every):
        obs1, state1, *_ = step_envs(key, ended, action, args)
        _, fresh = reset_envs(key, args)
        stepped_obs = step_envs(key, state, action, args)[0]
        assert int(state1.info["steps"][0]) == 0 and int(state1.info["steps"][1]) == 1
        np.testing.assert_allclose(obs1[1], stepped_obs[1], rtol=1e-6)
        assert not np.allclose(obs1[0], state1.info["final_obs"][0])
    np.testing.assert_allclose(
        step_envs(key, ended, action, env_args)[0], step_envs(key, ended, action, every)[0], rtol=1e-6
    )


def test_playground_draws_a_fresh_initial_state_each_episode(playground_cartpole):
    env = make_playground("CartpoleBalance", 2, False)
    _, next_obs, _, _, _, truncated, _ = twin_transitions(env, 6, n_envs=1)
    starts = np.asarray(next_obs)[np.asarray(truncated)[:, 0], 0]
    assert len(starts) == 3 and not np.allclose(starts[0], starts[1]) and not np.allclose(starts[1], starts[2])


def test_brax_env_by_id_is_the_brax_env():
    env = make_brax("inverted_pendulum", 50, False)
    assert env.default_params.max_steps_in_episode == 50 and env.num_actions == 1


def finite_run(agent, n_timesteps: int, log_frequency: int) -> dict[str, np.ndarray]:
    from ajax.logging import LoggingConfig

    logging = LoggingConfig(log_frequency=log_frequency)
    state, evaluations = agent.train(seed=[0], n_timesteps=n_timesteps, logging_config=logging, num_episode_test=2)
    assert all(np.isfinite(leaf).all() for leaf in jax.tree.leaves(state) if jnp.issubdtype(leaf.dtype, jnp.floating))
    evaluations = {name: np.asarray(value) for name, value in evaluations.items()}
    assert (evaluations["timestep"] > 0).all()
    for name in ("Eval/episodic mean reward", "value/critic_loss"):
        assert np.isfinite(evaluations[name]).all(), name
    return evaluations


def test_sac_trains_on_brax_inverted_pendulum_whose_episodes_terminate():
    from ajax import SAC

    agent = SAC("inverted_pendulum", n_envs=2, learning_starts=256, episode_length=100)
    evaluations = finite_run(agent, 1024, 512)
    # Random balancing falls within ~30 steps: evaluation episodes end by termination, before the limit.
    assert (evaluations["Eval/mean episodic length"] < 100).all()


def test_ppo_trains_on_playground_cartpole_balance():
    from ajax import PPO

    agent = PPO("CartpoleBalance", n_envs=2, n_steps=64, batch_size=64, n_epochs=2, episode_length=50)
    evaluations = finite_run(agent, 512, 256)
    assert (evaluations["Eval/mean episodic length"] == 50).all()  # balancing never terminates


def test_sac_trains_on_a_targetgym_plane():
    from ajax import SAC

    agent = SAC("Plane", n_envs=2, learning_starts=256, episode_length=100)
    finite_run(agent, 1024, 512)


def test_without_fresh_resets_every_episode_restarts_from_the_first_state(playground_cartpole):
    env = BraxLikeEnv(playground_cartpole, "first", episode_length=2, fresh_reset=False)
    obs, next_obs, _, _, _, truncated, _ = twin_transitions(env, 6, n_envs=2)
    starts = np.asarray(next_obs)[np.asarray(truncated)[:, 0]]  # (episodes, copies, obs)
    np.testing.assert_allclose(starts, np.broadcast_to(np.asarray(obs)[0], starts.shape), rtol=1e-6)
    assert not np.allclose(starts[:, 0], starts[:, 1])  # each copy keeps its own first state


def test_a_physics_env_refuses_an_agent_of_the_other_action_space():
    from ajax import DQN

    with pytest.raises(ValueError, match="DQN acts in discrete action spaces, but inverted_pendulum is continuous"):
        DQN("inverted_pendulum")
