"""Gymnasium envs stepped on the host: gymnax's contract, one host call per loop step, seeds."""

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium.envs.classic_control import CartPoleEnv

from ajax import SAC
from ajax.environments.create import make_env, prepare_env
from ajax.environments.host import GymnasiumEnv, HostEnvError, host_errors
from ajax.logging.wandb_logging import LoggingConfig

RETURN = "Eval/episodic mean reward"


class Countdown(gymnasium.Env):
    """Observes its step count from 0; action 1 ends the episode (a terminal, reward 10), action 0 pays 1."""

    observation_space = gymnasium.spaces.Box(0.0, 100.0, (1,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0.0
        return np.array([self.t], np.float32), {}

    def step(self, action):
        self.t += 1
        return np.array([self.t], np.float32), 10.0 if action == 1 else 1.0, bool(action == 1), False, {}


gymnasium.register("AjaxTest/Countdown-v0", entry_point=Countdown, max_episode_steps=3)


class OldStep(Countdown):
    """Still on the old Gym API: step returns (obs, reward, done, info)."""

    def step(self, action):
        obs, reward, terminated, _, info = super().step(action)
        return obs, reward, terminated, info


class OldReset(Countdown):
    """Still on the old Gym API: reset returns the observation alone."""

    def reset(self, *, seed=None, options=None):
        return super().reset(seed=seed)[0]


class Unseeded(Countdown):
    """Still on the old Gym API: reset takes no seed."""

    def reset(self):
        return super().reset()


class WrongShape(Countdown):
    """Declares one number and observes two."""

    def step(self, action):
        obs, *rest = super().step(action)
        return np.concatenate([obs, obs]), *rest


class TwoRewards(Countdown):
    """Pays two rewards a step, as a vector env's step would."""

    def step(self, action):
        obs, reward, *rest = super().step(action)
        return obs, np.array([reward, reward]), *rest


class FloatImage(Countdown):
    """Declares a uint8 image and observes floats in it."""

    observation_space = gymnasium.spaces.Box(0, 255, (2, 2, 1), np.uint8)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.full((2, 2, 1), 0.5), {}


FAULT = {"at": None}  # the step at which each Faulty env raises; None: it never does


class Faulty(CartPoleEnv):
    """CartPole whose every copy raises at its `FAULT["at"]`-th step since it was built."""

    def step(self, action):
        self.steps_taken = getattr(self, "steps_taken", 0) + 1
        if self.steps_taken == FAULT["at"]:
            raise RuntimeError("the pole sensor came loose")
        return super().step(action)


gymnasium.register("AjaxTest/OldStep-v0", entry_point=OldStep, max_episode_steps=3)
gymnasium.register("AjaxTest/Faulty-v0", entry_point=Faulty, max_episode_steps=50)


def rollout(env, params, actions, n_envs=1, n_seeds=1):
    """Step `n_seeds` x `n_envs` copies through `actions` in one compiled scan, as the loop does."""

    def one(key):
        keys = jax.random.split(key, n_envs)
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)

        def step(state, action):
            step = jax.vmap(env.step, in_axes=(0, 0, 0, None))
            obs, state, reward, terminated, truncated, info = step(keys, state, jnp.full((n_envs,), action), params)
            return state, (obs, reward, terminated, truncated, info["final_observation"])

        return obs, jax.lax.scan(step, state, jnp.asarray(actions))[1]

    keys = jax.random.split(jax.random.PRNGKey(0), n_seeds)
    return jax.tree.map(np.asarray, jax.jit(jax.vmap(one))(keys))


def test_the_time_limit_truncates_a_terminal_terminates_and_the_final_observation_is_kept():
    env, params = make_env("gymnasium:AjaxTest/Countdown-v0")
    assert params.max_steps_in_episode == 3
    first, (obs, reward, terminated, truncated, final) = rollout(env, params, [0, 0, 0, 0, 1, 0])
    assert first[0, 0].tolist() == [0.0]
    assert terminated[0, :, 0].tolist() == [False, False, False, False, True, False]
    assert truncated[0, :, 0].tolist() == [False, False, True, False, False, False]
    assert reward[0, :, 0].tolist() == [1.0, 1.0, 1.0, 1.0, 10.0, 1.0]
    # The step that ended an episode returns the next one's first observation, its own apart.
    assert final[0, :, 0, 0].tolist() == [1.0, 2.0, 3.0, 1.0, 2.0, 1.0]
    assert obs[0, :, 0, 0].tolist() == [1.0, 2.0, 0.0, 1.0, 0.0, 1.0]


def test_episode_length_sets_the_time_limit():
    config = prepare_env("gymnasium:AjaxTest/Countdown-v0", episode_length=2)
    assert config.max_episode_steps == 2
    _, (_, _, _, truncated, _) = rollout(config.env, config.env_params, [0] * 4)
    assert truncated[0, :, 0].tolist() == [False, True, False, True]


def test_one_host_call_steps_every_copy_of_every_seed():
    env, params = make_env("gymnasium:Pendulum-v1")
    before = env.pool.calls
    first, (obs, *_) = rollout(env, params, [0.0] * 5, n_envs=3, n_seeds=2)
    assert env.pool.calls - before == 1 + 5  # one reset, then one call per step
    assert obs.shape == (2, 5, 3, 3) and len(env.pool.envs) == 6
    # Every copy its own episode: six distinct starts, drawn from the seeds' keys.
    assert len({tuple(row) for row in first.reshape(6, 3).round(6)}) == 6
    again, _ = rollout(env, params, [0.0] * 5, n_envs=3, n_seeds=2)
    np.testing.assert_array_equal(first, again)  # the same keys, the same starts


def test_spaces_are_read_from_the_env():
    config = prepare_env("gymnasium:Pendulum-v1")
    assert config.continuous and config.action_dim == 1 and config.observation_dim == 3
    assert (config.action_low, config.action_high) == ((-2.0,), (2.0,))
    assert config.max_episode_steps == 200
    discrete = prepare_env(gymnasium.make("CartPole-v1"))
    assert not discrete.continuous and discrete.action_dim == 2 and discrete.env.name == "gymnasium:CartPole-v1"


def test_unsupported_spaces_are_refused_with_what_to_do():
    class Tupled(Countdown):
        observation_space = gymnasium.spaces.Tuple((gymnasium.spaces.Discrete(3), gymnasium.spaces.Discrete(2)))

    with pytest.raises(TypeError, match="observation space is Tuple.*FlattenObservation"):
        GymnasiumEnv(Tupled, "tupled")


@pytest.mark.parametrize(
    ("build", "name"),
    [
        (lambda: prepare_env("gymnasium:AjaxTest/OldStep-v0"), "gymnasium:AjaxTest/OldStep-v0's step"),
        (lambda: prepare_env(OldStep()), "gymnasium:OldStep's step"),
        (lambda: GymnasiumEnv(OldStep, "unwrapped"), r"unwrapped's step returned 4 values .*: the old Gym API"),
        (lambda: prepare_env(OldReset()), "gymnasium:OldReset's reset returned one ndarray, not"),
        (lambda: prepare_env(Unseeded()), "gymnasium:Unseeded's reset"),
    ],
    ids=["step-id", "step-object", "step-unwrapped", "reset-pair", "reset-seed"],
)
def test_an_env_on_the_old_gym_api_is_refused_at_construction_naming_it(build, name):
    """Gymnasium's wrappers fail on the old API themselves: the env beneath is asked, so the
    message names the env and the fix rather than a wrapper's unpacking error."""
    with pytest.raises(TypeError, match=f"{name}.*Gymnasium's reset returns.*terminated, truncated"):
        build()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (WrongShape, r"WrongShape's step returned an observation of shape \(2,\) .*declares shape \(1,\)"),
        (FloatImage, r"FloatImage's reset returned an observation of shape \(2, 2, 1\) and dtype float64.*uint8"),
        (TwoRewards, r"TwoRewards's step returned a reward of shape \(2,\)"),
    ],
)
def test_what_the_run_could_not_hold_is_refused_at_construction(env, message):
    with pytest.raises(ValueError, match=message):
        prepare_env(env())


def test_an_env_raising_in_a_run_is_raised_as_itself_naming_the_env_and_its_step(monkeypatch):
    monkeypatch.setitem(FAULT, "at", 7)
    env, params = make_env("gymnasium:AjaxTest/Faulty-v0")
    with pytest.raises(HostEnvError) as raised, host_errors():
        rollout(env, params, [0] * 10, n_envs=2)
    assert str(raised.value).startswith("gymnasium:AjaxTest/Faulty-v0 raised RuntimeError in step 7 (action 0)")
    assert isinstance(raised.value.__cause__, RuntimeError)
    assert str(raised.value.__cause__) == "the pole sensor came loose"


@pytest.mark.parametrize("vectorization_mode", ["vector_entry_point", "sync"])
def test_a_vector_env_stands_for_its_single_env_with_its_copies_as_n_envs(vectorization_mode):
    vector = gymnasium.make_vec("CartPole-v1", num_envs=3, vectorization_mode=vectorization_mode)
    config = prepare_env(vector, n_envs=3)
    assert config.env.name == "gymnasium:CartPole-v1" and config.n_envs == 3 and config.max_episode_steps == 500
    with pytest.raises(ValueError, match="holds 3 copies, but n_envs=2: pass n_envs=3"):
        prepare_env(vector, n_envs=2)


def test_unknown_ids_name_the_closest():
    with pytest.raises(ValueError, match="Closest Gymnasium ids: gymnasium:Pendulum-v1"):
        make_env("gymnasium:Pendulm-v1")
    with pytest.raises(ValueError, match="Gymnasium registers 'HalfCheetah-v5': pass 'gymnasium:HalfCheetah-v5'"):
        make_env("HalfCheetah-v5")


@pytest.fixture(scope="module")
def sac_run():
    agent = SAC("gymnasium:Pendulum-v1", n_envs=2, learning_starts=64, batch_size=32, buffer_size=1_000)
    logging = LoggingConfig(log_frequency=200)
    state, evaluations = agent.train(seed=[0, 1], n_timesteps=400, num_episode_test=1, logging_config=logging)
    return agent, logging, state, evaluations


def test_an_agent_trains_and_evaluates_on_the_host_env(sac_run):
    agent, _, state, evaluations = sac_run
    returns = np.asarray(evaluations[RETURN])
    assert returns.shape == (2, 2) and np.isfinite(returns).all() and (returns < 0).all()
    assert int(np.asarray(state.collector_state.timestep)[0]) == 400
    assert returns[0].tolist() != returns[1].tolist()  # each seed its own run


def test_the_same_seed_gives_the_same_run_and_a_split_run_equals_one_call(sac_run):
    agent, logging, state, evaluations = sac_run
    half, _ = agent.train(seed=[0, 1], n_timesteps=200, num_episode_test=1, total_timesteps=400, logging_config=logging)
    resumed, _ = agent.train(initial_state=half, n_timesteps=200, num_episode_test=1, logging_config=logging)
    np.testing.assert_array_equal(
        np.asarray(resumed.collector_state.last_obs), np.asarray(state.collector_state.last_obs)
    )
    jax.tree.map(np.testing.assert_array_equal, resumed.actor_state.params, state.actor_state.params)


def test_a_state_restored_in_a_new_process_starts_fresh_episodes(sac_run):
    agent, logging, state, _ = sac_run
    pool = agent.env_args.env.pool
    pool.close()  # what a new process's pool knows of the restored slots: nothing
    resumed, evaluations = agent.train(initial_state=state, n_timesteps=200, num_episode_test=1, total_timesteps=600)
    assert int(np.asarray(resumed.collector_state.timestep)[0]) == 600
    assert len(pool.envs) >= 4  # the restored slots rebuilt, the evaluation's own built again


def test_apg_refuses_an_env_no_gradient_flows_through():
    from ajax import APG

    with pytest.raises(ValueError, match="steps on the host, where no gradient flows"):
        APG("gymnasium:Pendulum-v1")


def test_the_cli_trains_on_a_gymnasium_id_and_says_what_a_resume_cannot_restore(tmp_path):
    import contextlib
    import io

    from ajax.cli import main

    out = tmp_path / "run"
    run = ["train", "DQN", "gymnasium:CartPole-v1", "--timesteps", "400", "--n-envs", "2", "--log-frequency", "200"]
    run += ["--param", "architecture=32,relu", "--param", "learning_starts=100", "--out", str(out)]
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(run) == 0
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        assert main(["train", "--resume", str(out)]) == 0
    assert "every copy starts a fresh episode" in " ".join(said.getvalue().split())


def test_the_cli_keeps_the_last_checkpoint_when_the_env_raises_and_resumes_once_it_is_fixed(
    tmp_path, monkeypatch, capsys
):
    """The env raises in the run's second chunk: the error names it and its step, the first chunk's
    checkpoint loads, and `--resume` with the env fixed reaches the budget."""
    from ajax import DQN
    from ajax.checkpoint import restore_into
    from ajax.cli import main

    settings = {"n_envs": 1, "architecture": ("32", "relu"), "learning_starts": 50}
    out = tmp_path / "run"
    run = ["train", "DQN", "gymnasium:AjaxTest/Faulty-v0", "--timesteps", "200", "--log-frequency", "100"]
    run += ["--n-envs", "1", "--num-episode-test", "1", "--param", "architecture=32,relu"]
    run += ["--param", "learning_starts=50", "--out", str(out)]
    monkeypatch.setitem(FAULT, "at", 150)  # the second chunk's 50th step: 100 -> 200
    assert main(run) == 1
    said = capsys.readouterr().err
    assert "RuntimeError: the pole sensor came loose" in said  # the env's own traceback
    assert "gymnasium:AjaxTest/Faulty-v0 raised RuntimeError in step 150 (action" in said
    assert f"ajax train --resume {out}" in said and "CpuCallback" not in said

    def reached() -> int:
        skeleton, _ = agent.train(seed=[0], n_timesteps=0, total_timesteps=200)
        return int(restore_into(skeleton, out / "checkpoint.ckpt", agent=agent).collector_state.timestep[0])

    agent = DQN("gymnasium:AjaxTest/Faulty-v0", **settings)
    assert reached() == 100
    monkeypatch.setitem(FAULT, "at", None)  # the env fixed
    assert main(["train", "--resume", str(out)]) == 0
    assert reached() == 200
