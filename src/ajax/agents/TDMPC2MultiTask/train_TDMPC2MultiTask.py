"""TDMPC2MultiTask: TD-MPC2's update on a multi-task dataset, and each task's evaluation.

Training steps no environment: each iteration is one update (`TDMPC2.train_TDMPC2.update`)
on `batch_size` windows drawn uniformly from the dataset, every row trained with its task's
embedding, action mask and discount. The collector only holds the dataset and counts the
updates. Evaluation, per task, plans in that task's env with its embedding and mask and
executes only the task's own action dimensions; `TDMPC2MultiTask.train` runs it from Python
between compiled chunks of updates.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from ajax.agents.loop import RunSettings, TrainLoop, offline_collector
from ajax.agents.TDMPC2.core import discount_from_episode_length
from ajax.agents.TDMPC2.networks import WorldModel
from ajax.agents.TDMPC2.planner import PlanCarry, plan
from ajax.agents.TDMPC2.state import TDMPC2Config, TDMPC2State
from ajax.agents.TDMPC2.train_TDMPC2 import Networks, init_train_states, updated_on
from ajax.buffers.multitask import MultiTaskDataset
from ajax.evaluate import EvalPolicy, PolicyCarry
from ajax.extensions import ExtensionStack
from ajax.normalizers import RunningScale
from ajax.state import EnvironmentConfig, NetworkConfig


def task_discounts(dataset: MultiTaskDataset) -> jax.Array:
    """Each task's discount, from its episode length as the single-task agent's."""
    return jnp.asarray([discount_from_episode_length(task.episode_length) for task in dataset.tasks], jnp.float32)


def make_train(
    *,
    env_args: EnvironmentConfig,
    network_args: NetworkConfig,
    agent_config: TDMPC2Config,
    dataset: MultiTaskDataset,
    extensions: ExtensionStack,
    run: RunSettings,
):
    del network_args
    config = agent_config
    networks = Networks(WorldModel(config.arch), config)
    discounts, masks = task_discounts(dataset), dataset.action_masks()

    def init(key: jax.Array) -> TDMPC2State:
        rng, net_key, eval_key = jax.random.split(key, 3)
        model_state, policy_state = init_train_states(networks, config, net_key)
        return TDMPC2State(
            rng=rng,
            actor_state=policy_state,
            critic_state=model_state,
            collector_state=offline_collector(dataset),
            eval_rng=eval_key,
            n_updates=jnp.zeros((), jnp.int32),
            n_logs=jnp.zeros((), jnp.int32),
            q_scale=RunningScale.create(),
        )

    def learn(state: TDMPC2State) -> tuple[TDMPC2State, Any]:
        state, (sample_key, update_key) = state.next_keys(2)
        data = state.collector_state.buffer_state
        window, task = data.windows(sample_key, config.batch_size, config.planner.horizon)
        return updated_on(
            networks, config, state, window, discounts[task], update_key, task=task, action_mask=masks[task]
        )

    loop = TrainLoop.create(env_args, run, extensions)
    updated = loop.updated(learn)

    def iteration(state: TDMPC2State) -> tuple[TDMPC2State, Any]:
        collector = state.collector_state
        return updated(state.replace(collector_state=collector.replace(timestep=collector.timestep + 1)))

    return loop.train(init, iteration, run.end_timestep - run.start_timestep, steps_per_iteration=1)


def task_evaluation(config: TDMPC2Config, dataset: MultiTaskDataset, index: int) -> EvalPolicy:
    """Task `index`'s evaluation policy: padded observations in, the task's own action dimensions out."""
    networks = Networks(WorldModel(config.arch), config)
    info = dataset.tasks[index]
    mask = dataset.action_masks()[index]
    discount = discount_from_episode_length(info.episode_length)
    horizon, action_dim = config.planner.horizon, dataset.action_dim

    def greedy(state: TDMPC2State, obs: jax.Array, carry: tuple[PlanCarry, jax.Array]):
        plans, key = carry
        key, act_key, entropy_key = jax.random.split(key, 3)
        params = {**state.critic_state.params, **state.actor_state.params}
        padded = jnp.pad(obs, ((0, 0), (0, dataset.observation_dim - obs.shape[-1])))
        task = jnp.full((obs.shape[0],), index, jnp.int32)
        z = networks.encode(params, padded, task)
        _, mean_action, log_prob, _ = networks.pi(params, z, entropy_key, task, mask)
        if config.mpc:
            model = networks.latent_model(params, discount, jnp.asarray(index), mask)
            keys = jax.random.split(act_key, obs.shape[0])

            def decide(z, mean, first, key):
                return plan(model, z, mean, first, key, config.planner, True)

            action, means = jax.vmap(decide)(z, plans.mean, plans.episode_start, keys)
        else:
            action, means = mean_action, plans.mean
        carry = (PlanCarry(means, jnp.zeros_like(plans.episode_start)), key)
        return action[:, : info.action_dim], -log_prob, carry

    def start(state: TDMPC2State, n: int) -> tuple[PlanCarry, jax.Array]:
        key = jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(state.eval_rng, state.n_logs), 1), index)
        return PlanCarry(jnp.zeros((n, horizon, action_dim)), jnp.ones((n,), bool)), key

    return EvalPolicy(greedy, carry=PolicyCarry(init=start, advance=lambda carry, reward: carry))
