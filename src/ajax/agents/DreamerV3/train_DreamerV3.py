"""DreamerV3 on the shared loop: a row per env per tick, then the train ratio's updates.

Each update, in the order the reference's `Agent.loss` runs (danijar/dreamerv3, `agent.py`):

1. Sample `batch_size` sequences of 1 + `batch_length` rows. The first row is the context:
   its stored latent and action start the sequence (the reference's `replay_context`).
2. World model: encode the rows, run the posterior through them (resets zero the latent),
   and score reconstruction (symlog MSE), reward (two-hot), continuation (binary, target
   (1 - terminal)(1 - 1/horizon)) and the KL balance (dyn and rep, floored at free nats).
3. Imagination: from every posterior state, `imag_horizon` steps of the prior under the
   actor, all out of the gradient's reach.
4. Actor and critic on the imagined trajectories: lambda-returns from the predicted
   rewards, continues and values; REINFORCE on advantages divided by max(1, the
   5th-95th percentile range of returns); the critic's two-hot loss towards the returns and
   towards the slow critic's prediction.
5. Replayed value: lambda-returns along the replayed rows, bootstrapped from each row's
   imagined return, train the critic (and through it the representation) on real rewards.
6. One LaProp step on the weighted sum; the slow critic follows the critic (EMA 0.02);
   the sequences' new latents are written back into their rows.

Steps 2.-5. are `losses.make_objective`'s pure function of the parameters, which returns every
loss apart as well as their weighted sum, so a test can take each term's gradient on its own.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from ajax.agents.DreamerV3.losses import BehaviourLosses, WorldModelLosses, make_objective
from ajax.agents.DreamerV3.networks import (
    Actor,
    Critic,
    Latent,
    WorldModel,
    features,
    initial_latent,
    masked,
    mode_one_hot,
    observe_sampled,
    observe_step,
    observed_mask,
    rssm_action,
)
from ajax.agents.DreamerV3.state import DreamerV3Config, DreamerV3State
from ajax.agents.loop import RunSettings, TrainLoop
from ajax.agents.updates_owed import UpdatesOwed
from ajax.environments.interaction import init_collector
from ajax.environments.row_collector import (
    Rows,
    collect_row,
    empty_replay,
    initial_row_carry,
    sample_sequences,
    write_entries,
)
from ajax.evaluate import EvalPolicy, PolicyCarry
from ajax.extensions import ExtensionStack
from ajax.networks.optim import laprop, tensor_norms, with_traced_numbers
from ajax.normalizers import PercentileScale
from ajax.state import EnvironmentConfig, LoopTrainState, NetworkConfig

sg = jax.lax.stop_gradient


@struct.dataclass
class AuxiliaryLogs:
    world_model: WorldModelLosses
    behaviour: BehaviourLosses
    loss: jax.Array
    grad_norm: jax.Array


def make_train(
    *,
    env_args: EnvironmentConfig,
    network_args: NetworkConfig,
    agent_config: DreamerV3Config,
    extensions: ExtensionStack,
    run: RunSettings,
):
    del network_args  # DreamerV3's sizes are its model size's
    config = agent_config
    size, n_envs, continuous = config.size, env_args.n_envs, env_args.continuous
    mask_actions = env_args.action_dim if env_args.action_masked else 0
    model = WorldModel(size, env_args.observation_dim, config.unimix, env_args.observation_parts, mask_actions)
    actor = Actor(size.units, env_args.action_dim, continuous)
    critic = Critic(size.units)
    objective = make_objective(model, actor, critic, config)
    owed = UpdatesOwed.train_ratio(config.train_ratio, config.batch_size, config.batch_length, n_envs)
    sequence_length = config.batch_length + 1

    def policy_carry(n: int) -> tuple[Latent, jax.Array]:
        return initial_latent(size, (n,)), jnp.zeros((n, env_args.action_dim))

    # Initial state --------------------------------------------------------------------
    def init(key: jax.Array) -> DreamerV3State:
        rng, model_key, actor_key, critic_key, env_key, eval_key = jax.random.split(key, 6)
        latent, action = policy_carry(1)
        feat = features(latent)
        params = {
            "model": model.init(model_key, latent, action, env_args.observation_zeros(1)),
            "actor": actor.init(actor_key, feat),
            "critic": critic.init(critic_key, feat),
        }
        tx = with_traced_numbers(
            lambda learning_rate: laprop(learning_rate, agc=config.agc, warmup=config.warmup),
            learning_rate=config.learning_rate,
        )
        train_state = LoopTrainState.create(apply_fn=model.apply, params=params, tx=tx, target_params=params["critic"])
        collector = init_collector(env_key, env_args)
        example = Rows(
            obs=collector.last_obs,
            action=jnp.zeros((n_envs, env_args.action_dim)) if continuous else jnp.zeros((n_envs,), jnp.int32),
            reward=jnp.zeros((n_envs,)),
            is_first=jnp.zeros((n_envs,), bool),
            is_last=jnp.zeros((n_envs,), bool),
            is_terminal=jnp.zeros((n_envs,), bool),
            entry=initial_latent(size, (n_envs,)),
        )
        collector = collector.replace(
            buffer_state=empty_replay(example, config.capacity),
            memory=initial_row_carry(collector.last_obs, policy_carry(n_envs)),
        )
        return DreamerV3State(
            rng=rng,
            actor_state=train_state,
            critic_state=None,
            collector_state=collector,
            eval_rng=eval_key,
            n_updates=jnp.zeros((), jnp.int32),
            n_logs=jnp.zeros((), jnp.int32),
            return_scale=PercentileScale.create(),
        )

    # 1. Acting: one row per env ------------------------------------------------------
    def behaviour(state: DreamerV3State, carry: Any, obs: jax.Array, first: jax.Array, key: jax.Array):
        action, carry, _ = sampled_step(model, actor, continuous, state.actor_state.params, carry, obs, first, key)
        return action, carry, carry[0]

    def collect(state: DreamerV3State, tick: jax.Array) -> DreamerV3State:
        del tick
        return collect_row(state, behaviour, env_args)[0]

    # 6. One update ---------------------------------------------------------------------
    def learn(state: DreamerV3State) -> tuple[DreamerV3State, AuxiliaryLogs]:
        state, (sample_key, model_key, imagine_key) = state.next_keys(3)
        collector = state.collector_state
        replay = collector.buffer_state
        sequences, envs, slots = sample_sequences(
            replay, sample_key, collector.timestep // n_envs, config.batch_size, sequence_length
        )
        context = jax.tree.map(lambda x: x[:, 0], sequences)
        rows = jax.tree.map(lambda x: x[:, 1:], sequences)
        train_state = state.actor_state

        (total, (posterior, model_losses, behaviour_losses, scale)), grads = jax.value_and_grad(
            objective, has_aux=True
        )(train_state.params, train_state.target_params, state.return_scale, rows, context, (model_key, imagine_key))
        train_state = train_state.apply_gradients(grads=grads)
        rate = config.slow_critic_rate
        slow = jax.tree.map(
            lambda fast, slow: rate * fast + (1 - rate) * slow, train_state.params["critic"], train_state.target_params
        )
        replay = write_entries(replay, envs, slots[:, 1:], sg(posterior))
        aux = AuxiliaryLogs(
            world_model=jax.tree.map(jnp.mean, model_losses),
            behaviour=behaviour_losses,
            loss=total,
            grad_norm=jnp.linalg.norm(tensor_norms(grads)),
        )
        state = state.replace(
            actor_state=train_state.replace(target_params=slow),
            collector_state=collector.replace(buffer_state=replay),
            return_scale=scale,
        )
        return state, aux

    evaluation = (sampled_evaluation if config.sampled_evaluation else latent_evaluation)(model, actor, size, env_args)
    loop = TrainLoop.create(env_args, run, extensions, evaluation)
    return loop.off_policy(init, learn, schedule=owed, collect=collect)


def sampled_step(
    model: WorldModel,
    actor: Actor,
    continuous: bool,
    params: Any,
    carry: tuple[Latent, jax.Array],
    obs: jax.Array,
    first: jax.Array,
    key: jax.Array,
) -> tuple[jax.Array, tuple[Latent, jax.Array], Any]:
    """How the reference acts, in collection and in its evaluation alike: a sampled posterior on
    `obs`, then an action sampled on it (clipped to [-1, 1] when continuous, as the env takes it).
    Returns the action, the carry after it (the latent, the action as the RSSM reads it) and the
    policy it was drawn from."""
    latent_key, action_key = jax.random.split(key)
    latent, previous = carry
    embedding = model.apply(params["model"], obs, method=WorldModel.encode)
    latent, _ = observe_sampled(model, params["model"], latent, previous, embedding, first, latent_key)
    policy = masked(actor.apply(params["actor"], features(latent)), observed_mask(obs))
    action = policy.sample(seed=action_key)
    action = jnp.clip(action, -1.0, 1.0) if continuous else action
    return action, (latent, rssm_action(actor, action)), policy


def latent_evaluation(model: WorldModel, actor: Actor, size: Any, env_args: EnvironmentConfig) -> EvalPolicy:
    """The policy's mode on the posterior's mode, the latent carried through each episode."""
    continuous = env_args.continuous

    def greedy(state: DreamerV3State, obs: jax.Array, carry: tuple[Latent, jax.Array]):
        params = state.actor_state.params
        latent, previous = carry
        embedding = model.apply(params["model"], obs, method=WorldModel.encode)
        # each evaluation episode starts from the initial latent
        first = jnp.zeros(jax.tree.leaves(obs)[0].shape[:1], bool)
        latent, _ = observe_step(model, params["model"], latent, previous, embedding, first, mode_one_hot)
        policy = masked(actor.apply(params["actor"], features(latent)), observed_mask(obs))
        action = jnp.clip(policy.mode(), -1.0, 1.0) if continuous else policy.mode()
        previous = rssm_action(actor, action)
        return action, policy.entropy(), (latent, previous)

    def start(state: DreamerV3State, n: int) -> tuple[Latent, jax.Array]:
        del state
        return initial_latent(size, (n,)), jnp.zeros((n, env_args.action_dim))

    return EvalPolicy(greedy, carry=PolicyCarry(init=start, advance=lambda carry, reward: carry))


def sampled_evaluation(model: WorldModel, actor: Actor, size: Any, env_args: EnvironmentConfig) -> EvalPolicy:
    """A sampled posterior and a sampled action, as the reference evaluates: its policy ignores
    `mode='eval'`, so its evaluation episodes act as its training episodes, whose returns are
    its published scores.

    The key starts from the seed's evaluation key and the evaluation's count, so an evaluation
    is reproducible and each one draws afresh; it is split at every step.
    """

    def sampled(state: DreamerV3State, obs: jax.Array, carry: tuple[tuple[Latent, jax.Array], jax.Array]):
        policy_carry, key = carry
        key, step_key = jax.random.split(key)
        first = jnp.zeros(jax.tree.leaves(obs)[0].shape[:1], bool)  # each episode starts from the initial latent
        params = state.actor_state.params
        action, policy_carry, policy = sampled_step(
            model, actor, env_args.continuous, params, policy_carry, obs, first, step_key
        )
        return action, policy.entropy(), (policy_carry, key)

    def start(state: DreamerV3State, n: int) -> tuple[tuple[Latent, jax.Array], jax.Array]:
        key = jax.random.fold_in(jax.random.fold_in(state.eval_rng, state.n_logs), 1)
        return (initial_latent(size, (n,)), jnp.zeros((n, env_args.action_dim))), key

    return EvalPolicy(sampled, carry=PolicyCarry(init=start, advance=lambda carry, reward: carry))
