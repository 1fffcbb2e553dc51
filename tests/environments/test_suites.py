"""Craftax, Navix and Jumanji by id: gymnax's step contract, with each suite's time limit a truncation."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax.environments.create import prepare_env
from ajax.environments.suites import NEVER


def rollout(env_id: str, actions, episode_length: int | None = None, seed: int = 0):
    """Step the env by id through `actions`, as the agents do (Ajax's auto-reset included)."""
    config = prepare_env(env_id, episode_length=episode_length)
    env, params = config.env, config.env_params
    obs, state = env.reset(jax.random.PRNGKey(seed), params)

    def step(state, inputs):
        key, action = inputs
        step_key = jax.random.split(key)[0]  # gymnax's split: (step, reset)
        plain = env.step_env(step_key, state, action, params)[0]  # what the step reached, no reset
        obs, next_state, reward, terminated, truncated, info = env.step(key, state, action, params)
        return next_state, (reward, terminated, truncated, next_state.time, info["final_observation"], plain)

    keys = jax.random.split(jax.random.PRNGKey(seed + 1), len(actions))
    _, out = jax.jit(lambda s: jax.lax.scan(step, s, (keys, jnp.asarray(actions, jnp.int32))))(state)
    return config, jax.tree.map(np.asarray, out)


@pytest.mark.parametrize("env_id", ["Craftax-Classic-Symbolic-v1", "Navix-Empty-5x5-v0", "Game2048-v1"])
def test_the_time_limit_truncates_and_keeps_the_final_observation(env_id):
    _, (_, terminated, truncated, time, final, plain) = rollout(env_id, [0] * 4, episode_length=3)
    assert truncated.tolist() == [False, False, True, False] and not terminated.any()
    assert time.tolist() == [1, 2, 0, 1]  # the episode restarted after its third step
    # The final observation is the step's own (a bootstrap reads it), not the next episode's first.
    jax.tree.map(np.testing.assert_array_equal, final, plain)


def test_craftax_lifts_its_own_time_limit_for_ajaxs():
    config = prepare_env("Craftax-Classic-Symbolic-v1")
    assert config.env_params.max_steps_in_episode == 10_000 and config.max_episode_steps == 10_000
    assert config.env_params.game.max_timesteps == NEVER  # so its `done` is a death only: a termination
    assert (config.continuous, config.action_dim, config.observation_dim) == (False, 17, 1345)


def test_navix_reaching_the_goal_terminates():
    # Empty-5x5: the agent starts at (1, 1) facing east, the goal is at (3, 3); 2 = forward, 1 = turn right.
    _, (reward, terminated, truncated, time, _, _) = rollout("Navix-Empty-5x5-v0", [2, 2, 1, 2, 2, 2])
    assert terminated.tolist() == [False] * 4 + [True, False] and not truncated.any()
    assert reward[4] == 1.0 and time.tolist() == [1, 2, 3, 4, 0, 1]


def test_navix_symbolic_grid_is_kept_as_uint8_and_read_over_its_range():
    from ajax import PQN

    agent = PQN("Navix-DoorKey-5x5-v0", encoder="minatar_cnn", n_envs=2, n_steps=4)
    (part,) = agent.env_args.observation_parts
    assert (part.shape, part.dtype, part.scale) == ((5, 5, 3), "uint8", 1 / 8)  # codes 0..8, as Navix declares


def test_jumanji_snake_hitting_a_wall_terminates():
    config, (_, terminated, truncated, *_) = rollout("Snake-v1", [0] * 12)
    assert terminated.any() and not truncated.any()
    assert config.env_params.max_steps_in_episode == 4000  # Snake's own limit, now Ajax's truncation


def test_jumanji_mazes_own_time_limit_becomes_a_truncation():
    # Jumanji's Maze ends at 100 steps with a zero discount; Ajax keeps its 100 steps as a time limit.
    _, (_, terminated, truncated, *_) = rollout("Maze-v0", [0] * 101)
    assert not terminated.any() and np.flatnonzero(truncated).tolist() == [99]


def test_jumanji_observations_are_dicts_with_their_action_mask():
    config = prepare_env("Maze-v0")
    space = config.env.observation_space(config.env_params)
    assert set(space.spaces) == {
        "action_mask",
        "agent_position.col",
        "agent_position.row",
        "step_count",
        "target_position.col",
        "target_position.row",
        "walls",
    }
    assert config.observation_dim == 105  # the mask is applied, not read


def test_a_jumanji_env_with_several_actions_is_refused_with_why():
    refusal = r"'Tetris-v0' is a Jumanji environment that Ajax does not support: it acts in a MultiDiscreteArray"
    with pytest.raises(TypeError, match=rf"{refusal} of shape \(2,\).*supported Jumanji ids: Snake-v1"):
        prepare_env("Tetris-v0")


@pytest.mark.optimized
def test_ppo_trains_on_game2048_by_id_with_its_action_mask():
    from ajax import PPO
    from ajax.logging.wandb_logging import LoggingConfig

    agent = PPO("Game2048-v1", n_envs=4, n_steps=32)
    _, evaluations = agent.train(
        seed=0, n_timesteps=512, num_episode_test=2, logging_config=LoggingConfig(log_frequency=512)
    )
    # It runs by id through the dict observation and its mask; every merge scores, so returns are positive.
    assert np.all(np.asarray(evaluations["Eval/episodic mean reward"])[..., -1] > 100)
