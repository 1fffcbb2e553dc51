"""TDMPC2MultiTask: task routing (each row trains with its task's embedding, action mask and
discount), padded action dimensions never reaching an env, per-task evaluations, the resume
through a checkpoint, and the refusals. The shared maths is TDMPC2's (test_tdmpc2_core.py).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import TDMPC2MultiTask
from ajax.agents.TDMPC2.core import window_valid
from ajax.agents.TDMPC2.networks import WorldModel
from ajax.agents.TDMPC2.train_TDMPC2 import Networks, update
from ajax.agents.TDMPC2MultiTask.train_TDMPC2MultiTask import task_discounts, task_evaluation
from ajax.buffers import MultiTaskDataset, collect_dataset
from ajax.logging.wandb_logging import LoggingConfig
from tests.conftest import assert_same_state, first_seed

SMALL = {
    "model_size": 1,
    "task_dim": 8,
    "enc_dim": 16,
    "mlp_dim": 16,
    "latent_dim": 16,
    "batch_size": 16,
    "num_samples": 16,
    "num_elites": 4,
    "num_pi_trajs": 2,
    "iterations": 2,
}


def zeros(width: int):
    return lambda obs: jnp.zeros((*obs.shape[:-1], width))


@pytest.fixture(scope="module")
def dataset() -> MultiTaskDataset:
    """Pendulum (3 observations, 1 action, episodes of 200) and Reacher (8, 2, 100), noisy zero actions."""
    return MultiTaskDataset.from_datasets(
        {
            "Pendulum-v1": collect_dataset("Pendulum-v1", zeros(1), 400, noise=0.5),
            "Reacher-misc": collect_dataset("Reacher-misc", zeros(2), 200, noise=0.5),
        },
        episode_lengths={"Pendulum-v1": 200, "Reacher-misc": 100},
        score_ranges={"Pendulum-v1": (-1500.0, -150.0), "Reacher-misc": (-20.0, 20.0)},
    )


@pytest.fixture(scope="module")
def agent(dataset) -> TDMPC2MultiTask:
    return TDMPC2MultiTask(dataset, **SMALL)


def test_construction_resolves_each_tasks_discount_and_the_padded_sizes(agent, dataset):
    resolved = agent.config["resolved"]
    assert resolved["tasks"] == ["Pendulum-v1", "Reacher-misc"]
    assert resolved["discounts"] == pytest.approx([0.975, 0.95])  # episodes of 200 and 100
    np.testing.assert_allclose(task_discounts(dataset), [0.975, 0.95], rtol=1e-6)
    arch = agent.agent_config.arch
    assert (arch.observation_dim, arch.action_dim, arch.n_tasks, arch.task_dim) == (8, 2, 2, 8)
    assert "dataset" not in agent.config and "eval_envs" not in agent.config


def one_update(agent, dataset, task_of_every_row: int):
    """One update on windows of one task's rows only: the model and policy states before and after."""
    config = agent.agent_config
    state, _ = agent.train(seed=0, n_timesteps=0)
    state = first_seed(state)
    networks = Networks(WorldModel(config.arch), config)
    rows = np.nonzero(np.asarray(dataset.task) == task_of_every_row)[0]
    starts = jnp.asarray(rows[: config.batch_size])
    take = lambda x: x[starts[None, :] + jnp.arange(config.planner.horizon)[:, None]]  # noqa: E731
    window = jax.tree.map(take, (dataset.obs, dataset.action, dataset.reward, dataset.next_obs))
    terminated, truncated = take(dataset.terminated), take(dataset.truncated)
    from ajax.environments.interaction import Transition

    window = Transition(*window[:2], window[2], window[3], terminated, truncated)
    task = jnp.full((config.batch_size,), task_of_every_row, jnp.int32)
    run = jax.jit(lambda *args, **kwargs: update(networks, config, *args, **kwargs))
    after = run(
        state.critic_state,
        state.actor_state,
        state.q_scale,
        window,
        window_valid(terminated, truncated),
        task_discounts(dataset)[task],
        jax.random.key(0),
        task=task,
        action_mask=dataset.action_masks()[task],
    )
    return state, after


@pytest.mark.parametrize("task", [0, 1])
def test_a_batch_of_one_tasks_rows_moves_only_that_tasks_embedding(agent, dataset, task):
    state, (model_state, _, _, _) = one_update(agent, dataset, task)
    before = state.critic_state.params["task_embedding"]["embedding"]
    after = model_state.params["task_embedding"]["embedding"]
    moved = np.abs(np.asarray(after - before)).max(axis=1)
    assert moved[task] > 0
    assert moved[1 - task] == 0.0  # Adam moves nothing without a gradient


def test_the_policy_prior_and_the_planner_never_act_on_padded_dimensions(agent, dataset):
    config = agent.agent_config
    state, _ = agent.train(seed=0, n_timesteps=0)
    state = first_seed(state)
    params = {**state.critic_state.params, **state.actor_state.params}
    networks = Networks(WorldModel(config.arch), config)
    mask = dataset.action_masks()[0]  # Pendulum: one action of two
    task = jnp.zeros((4,), jnp.int32)
    act = jax.jit(lambda obs: networks.pi(params, networks.encode(params, obs, task), jax.random.key(1), task, mask))
    action, mean, _, _ = act(jnp.ones((4, 8)))
    assert float(jnp.abs(action[:, 1]).max()) == 0.0 and float(jnp.abs(mean[:, 1]).max()) == 0.0
    # The evaluation policy hands Pendulum's env its one action only.
    policy = task_evaluation(config, dataset, 0)
    obs = jnp.ones((3, 3))
    carry = policy.start(state, 3)
    executed = jax.eval_shape(lambda obs: policy.act(state, obs, carry)[0], obs)
    assert executed.shape == (3, 1)
    reacher = task_evaluation(config, dataset, 1)
    assert jax.eval_shape(lambda obs: reacher.act(state, obs, carry)[0], jnp.ones((3, 8))).shape == (3, 2)


def test_a_logged_run_evaluates_every_task_and_resumes_through_a_checkpoint(dataset, tmp_path):
    from ajax.checkpoint import restore_into, save_checkpoint

    # The policy prior evaluates (mpc=False): the planner's per-task path is traced in the test above,
    # and compiling it for both tasks' envs would double this test's time.
    agent = TDMPC2MultiTask(dataset, mpc=False, **SMALL)
    logging = LoggingConfig(log_frequency=20)
    whole, evaluations = agent.train(seed=[0, 1], n_timesteps=40, logging_config=logging, num_episode_test=2)
    assert whole.n_updates.tolist() == [40, 40]
    assert evaluations["timestep"].tolist() == [[20, 40], [20, 40]]
    for key in ("Eval/Pendulum-v1/episodic mean reward", "Eval/Reacher-misc/episodic mean reward"):
        assert evaluations[key].shape == (2, 2) and np.isfinite(evaluations[key]).all()
    mean_score = (
        evaluations["Eval/Pendulum-v1/normalized score"] + evaluations["Eval/Reacher-misc/normalized score"]
    ) / 2
    np.testing.assert_allclose(evaluations["Eval/normalized score"], mean_score, rtol=1e-6)
    # Half, a checkpoint restored into a skeleton, the other half: the state of one call.
    # (The same agent, so the chunks' and evaluations' programs compile once.)
    first, _ = agent.train(seed=[0, 1], n_timesteps=20, logging_config=logging, num_episode_test=2, total_timesteps=40)
    skeleton, _ = agent.train(seed=[0, 1], n_timesteps=0)
    restored = restore_into(skeleton, save_checkpoint(first, tmp_path / "multitask.ckpt"))
    second, later = agent.train(
        n_timesteps=20, initial_state=restored, logging_config=logging, num_episode_test=2, total_timesteps=40
    )
    assert_same_state(whole, second)
    np.testing.assert_array_equal(later["Eval/normalized score"][:, 0], evaluations["Eval/normalized score"][:, 1])


def test_mistakes_are_refused(dataset):
    with pytest.raises(TypeError, match="dataset must be a MultiTaskDataset"):
        TDMPC2MultiTask({"Pendulum-v1": None}, **SMALL)
    with pytest.raises(ValueError, match="eval_envs must name exactly the dataset's tasks"):
        TDMPC2MultiTask(dataset, eval_envs={"Pendulum-v1": "Pendulum-v1"}, **SMALL)
    with pytest.raises(ValueError, match="has 2 observation and 1 action dimensions; the dataset's task has 8 and 2"):
        TDMPC2MultiTask(
            dataset, eval_envs={"Pendulum-v1": "Pendulum-v1", "Reacher-misc": "MountainCarContinuous-v0"}, **SMALL
        )
    with pytest.raises(ValueError, match="task_dim must be a positive integer"):
        TDMPC2MultiTask(dataset, **{**SMALL, "task_dim": 0})
    # The datasets hold flat, zero-padded observations, as the reference's multi-task model reads.
    with pytest.raises(TypeError, match="TDMPC2MultiTask sets encoder='mlp' itself"):
        TDMPC2MultiTask(dataset, **{**SMALL, "encoder": "nature_cnn"})
    with pytest.raises(ValueError, match=r"Task 'Reacher-misc' has 200 rows in the dataset, fewer than one training "):
        TDMPC2MultiTask(dataset, **{**SMALL, "horizon": 201})
    # A dataset built in memory rather than loaded from a file is checked at construction.
    with pytest.raises(ValueError, match=r"TDMPC2MultiTask's dataset holds a NaN in reward at index 450 \(of 600\)"):
        TDMPC2MultiTask(dataset.replace(reward=dataset.reward.at[450].set(jnp.nan)), **SMALL)
