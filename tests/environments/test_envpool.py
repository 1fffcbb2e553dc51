"""EnvPool tasks stepped on the host: the other backends' contract, not EnvPool's next-step reset."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import PPO, SAC
from ajax.environments.create import make_env
from ajax.environments.host import HostEnvError, host_errors
from ajax.logging.wandb_logging import LoggingConfig
from tests.environments.test_host import rollout

pytest.importorskip("envpool")


def test_an_ended_episode_is_reset_in_its_own_step_with_its_final_observation_kept():
    env, params = make_env("envpool:Pendulum-v1", episode_length=3)
    assert params.max_steps_in_episode == 3
    before = env.pool.calls
    _, (obs, reward, terminated, truncated, final) = rollout(env, params, [0.0] * 7, n_envs=2, n_seeds=2)
    assert env.pool.calls - before == 1 + 7  # one reset, one call per step for all four copies
    assert truncated[0, :, 0].tolist() == [False, False, True, False, False, True, False]
    assert not terminated.any()
    ended = truncated[0, :, 0]
    assert not np.allclose(obs[0, ended, 0], final[0, ended, 0])  # the next episode's first observation
    np.testing.assert_array_equal(obs[0, ~ended, 0], final[0, ~ended, 0])


def test_a_terminal_step_pays_and_the_next_step_is_a_real_one():
    env, params = make_env("envpool:CartPole-v1")
    _, (_, reward, terminated, truncated, _) = rollout(env, params, [1] * 12)
    assert terminated[0, :, 0].any() and not truncated.any()
    # EnvPool's own auto-reset spends the step after a terminal on the reset, paying 0: not here.
    assert (reward == 1.0).all()


def test_a_task_raising_in_a_run_is_raised_naming_it_and_the_step(monkeypatch):
    import envpool

    class Failing:
        """An EnvPool pool whose third step raises."""

        def __init__(self, pool):
            self.pool, self.steps = pool, 0

        def __getattr__(self, name):
            return getattr(self.pool, name)

        def step(self, *args):
            self.steps += 1
            if self.steps == 3:
                raise RuntimeError("the emulator crashed")
            return self.pool.step(*args)

    env, params = make_env("envpool:CartPole-v1")
    make = envpool.make
    monkeypatch.setattr(envpool, "make", lambda *args, **kwargs: Failing(make(*args, **kwargs)))
    message = "envpool:CartPole-v1 raised RuntimeError in step 3 of its pool of 2 copies: the emulator crashed"
    with pytest.raises(HostEnvError, match=message), host_errors():
        rollout(env, params, [0] * 5, n_envs=2)


def test_atari_frames_come_channels_last_as_uint8_and_unknown_ids_name_the_closest():
    env, params = make_env("envpool:Pong-v5")
    space = env.observation_space(params)
    assert space.shape == (84, 84, 4) and space.dtype == np.uint8 and env.num_actions == 6
    with pytest.raises(ValueError, match="Closest EnvPool ids: envpool:Pong-v5"):
        make_env("envpool:Pongg-v5")


def test_an_agent_trains_on_it_and_the_same_seed_gives_the_same_run():
    agent = SAC("envpool:Pendulum-v1", n_envs=2, learning_starts=64, batch_size=32, buffer_size=1_000)
    logging = LoggingConfig(log_frequency=200)
    runs = [agent.train(seed=[0, 1], n_timesteps=400, num_episode_test=1, logging_config=logging) for _ in range(2)]
    (state, evaluations), (again, _) = runs
    returns = np.asarray(evaluations["Eval/episodic mean reward"])
    assert returns.shape == (2, 2) and np.isfinite(returns).all() and returns[0].tolist() != returns[1].tolist()
    jax.tree.map(np.testing.assert_array_equal, state.actor_state.params, again.actor_state.params)
    agent.env_args.env.pool.close()  # a new process knows none of the restored slots: fresh episodes
    resumed, _ = agent.train(initial_state=state, n_timesteps=200, num_episode_test=1, total_timesteps=600)
    assert int(np.asarray(resumed.collector_state.timestep)[0]) == 600


def test_apg_refuses_an_envpool_task_too():
    from ajax import APG

    with pytest.raises(ValueError, match="steps on the host, where no gradient flows"):
        APG("envpool:Pendulum-v1")


# EnvPool's XLA interface: the same contract, the host called only where episodes start.


def test_through_the_xla_interface_only_resets_leave_the_program_and_the_contract_holds():
    env, params = make_env("envpool-xla:Pendulum-v1", episode_length=3)
    _, (obs, reward, terminated, truncated, final) = rollout(env, params, [0.0] * 7, n_envs=2, n_seeds=2)
    assert env.pool.calls == 1 + 2  # the reset, and the two steps where every copy's episode ended
    assert truncated[0, :, 0].tolist() == [False, False, True, False, False, True, False]
    assert not terminated.any() and (reward < 0).all()  # every step a real one: Pendulum pays -cost
    ended = truncated[0, :, 0]
    assert not np.allclose(obs[0, ended, 0], final[0, ended, 0])
    np.testing.assert_array_equal(obs[0, ~ended, 0], final[0, ~ended, 0])


def test_through_the_xla_interface_a_terminal_step_pays_and_the_next_step_is_a_real_one():
    env, params = make_env("envpool-xla:CartPole-v1")
    _, (_, reward, terminated, truncated, _) = rollout(env, params, [1] * 12, n_envs=2, n_seeds=2)
    assert terminated.any() and not truncated.any()
    assert (reward == 1.0).all()  # EnvPool's next-step reset would pay 0 after each terminal
    assert env.pool.calls < 12  # the reset and the steps where an episode ended, not every step


def test_the_xla_interface_refuses_a_task_with_64_bit_arrays_naming_the_host_id():
    with pytest.raises(ValueError, match=r"64-bit numbers.*\(action, obs.*Use 'envpool:HalfCheetah-v4'"):
        make_env("envpool-xla:HalfCheetah-v4")
    with pytest.raises(ValueError, match="Closest EnvPool ids: envpool-xla:Pong-v5"):
        make_env("envpool-xla:Pongg-v5")


def test_an_agent_trains_through_the_xla_interface_and_a_fresh_agent_repeats_the_run():
    def run():
        agent = PPO("envpool-xla:CartPole-v1", n_envs=2, n_steps=16, batch_size=16)
        return agent, agent.train(seed=[0, 1], n_timesteps=256)[0]

    (agent, state), (_, again) = run(), run()
    jax.tree.map(np.testing.assert_array_equal, state.actor_state.params, again.actor_state.params)
    assert agent.env_args.env.pool.calls < 256 // 2  # resets only, not a host call per loop step


def test_a_state_another_pool_stepped_starts_fresh_episodes_recorded_as_truncations():
    # A state restored in a new process (or into another agent) names pools this env never built.
    env, params = make_env("envpool-xla:CartPole-v1")
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    obs, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(keys, params)
    _, _, reward, terminated, truncated, _ = step(keys, state, jnp.ones(2, jnp.int32), params)
    assert reward.tolist() == [1.0, 1.0] and not truncated.any()
    restored = state.replace(pool=state.pool + 1)
    fresh, after, reward, terminated, truncated, info = step(keys, restored, jnp.ones(2, jnp.int32), params)
    assert reward.tolist() == [0.0, 0.0] and truncated.all() and not terminated.any()
    np.testing.assert_array_equal(fresh, info["final_observation"])  # the new episode's first observation
    assert (np.asarray(after.pool) == np.asarray(state.pool)).all()  # this env's pool from here on
