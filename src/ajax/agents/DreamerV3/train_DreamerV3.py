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

Steps 2.-5. are `make_objective`'s pure function of the parameters, which returns every loss
apart as well as their weighted sum, so a test can take each term's gradient on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import distrax
import jax
import jax.numpy as jnp
import optax
from flax import struct

from ajax import normalizers
from ajax.agents.DreamerV3.core import (
    advantages,
    continue_target,
    kl_balance,
    lambda_returns,
    policy_loss,
    trajectory_weight,
)
from ajax.agents.DreamerV3.networks import (
    N_BINS,
    Actor,
    Critic,
    Latent,
    WorldModel,
    features,
    initial_latent,
    mode_one_hot,
    sample_one_hot,
)
from ajax.agents.DreamerV3.state import DreamerV3Config, DreamerV3State
from ajax.agents.loop import RunSettings, TrainLoop
from ajax.distributional import bins_mean, symexp, symlog, symlog_bins, two_hot_cross_entropy
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
from ajax.networks.optim import laprop, with_traced_numbers
from ajax.normalizers import PercentileScale, denominator
from ajax.state import EnvironmentConfig, LoopTrainState, NetworkConfig, OptimizerConfig

sg = jax.lax.stop_gradient


@struct.dataclass
class WorldModelLosses:
    reconstruction_loss: jax.Array
    reward_loss: jax.Array
    continuation_loss: jax.Array
    dynamics_loss: jax.Array
    representation_loss: jax.Array


@struct.dataclass
class BehaviourLosses:
    policy_loss: jax.Array
    value_loss: jax.Array
    replay_value_loss: jax.Array
    entropy: jax.Array
    imagined_return: jax.Array
    return_scale: jax.Array


@struct.dataclass
class AuxiliaryLogs:
    world_model: WorldModelLosses
    behaviour: BehaviourLosses
    loss: jax.Array
    grad_norm: jax.Array


class TrainRatio(struct.PyTreeNode):
    """How many updates a tick owes: the reference's `Ratio(train_ratio / (batch_size * batch_length))`.

    Training starts at the first tick where the replay holds `batch_size * batch_length`
    sequences, as the reference counts its replay's length: each env's ring offers one
    sequence of batch_length + 1 rows per row past its first batch_length. That tick makes
    one update, and from there every `batch_size * batch_length / train_ratio` rows owe one
    more. The rate is a fraction p / q and the count integer arithmetic, exact over any run.
    """

    start_rows: int = struct.field(pytree_node=False)
    numerator: int = struct.field(pytree_node=False)
    denominator: int = struct.field(pytree_node=False)

    @classmethod
    def create(cls, config: DreamerV3Config, n_envs: int) -> TrainRatio:
        per_row = Fraction(config.train_ratio).limit_denominator(1_000) / (config.batch_size * config.batch_length)
        ticks = config.batch_length + -(-config.batch_size * config.batch_length // n_envs)
        return cls(ticks * n_envs, per_row.numerator, per_row.denominator)

    def due(self, rows: jax.Array) -> jax.Array:
        """The updates owed once `rows` rows are collected."""
        past = jnp.maximum(rows - self.start_rows, 0)
        whole, part = past // self.denominator, past % self.denominator
        owed = whole * self.numerator + part * self.numerator // self.denominator
        return jnp.where(rows >= self.start_rows, 1 + owed, 0)

    def between(self, rows_before: jax.Array, rows_after: jax.Array) -> jax.Array:
        return self.due(rows_after) - self.due(rows_before)


def make_train(
    *,
    env_args: EnvironmentConfig,
    network_args: NetworkConfig,
    actor_optimizer_args: OptimizerConfig,
    critic_optimizer_args: OptimizerConfig,
    agent_config: DreamerV3Config,
    extensions: ExtensionStack,
    run: RunSettings,
):
    del network_args, actor_optimizer_args, critic_optimizer_args  # DreamerV3's sizes are its model size's
    config = agent_config
    size, n_envs, continuous = config.size, env_args.n_envs, env_args.continuous
    model = WorldModel(size, env_args.observation_dim, config.unimix)
    actor = Actor(size.units, env_args.action_dim, continuous)
    critic = Critic(size.units)
    objective = make_objective(model, actor, critic, config)
    ratio = TrainRatio.create(config, n_envs)
    sequence_length = config.batch_length + 1

    def policy_carry(n: int) -> tuple[Latent, jax.Array]:
        return initial_latent(size, (n,)), jnp.zeros((n, env_args.action_dim))

    def env_action(action: jax.Array) -> jax.Array:
        return jnp.clip(action, -1.0, 1.0) if continuous else action

    # Initial state --------------------------------------------------------------------
    def init(key: jax.Array) -> DreamerV3State:
        rng, model_key, actor_key, critic_key, env_key, eval_key = jax.random.split(key, 6)
        latent, action = policy_carry(1)
        feat = features(latent)
        params = {
            "model": model.init(model_key, latent, action, jnp.zeros((1, env_args.observation_dim))),
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
        latent_key, action_key = jax.random.split(key)
        params = state.actor_state.params
        latent, previous = carry
        embedding = model.apply(params["model"], obs, method=WorldModel.encode)
        latent, _ = observe_sampled(model, params["model"], latent, previous, embedding, first, latent_key)
        action = env_action(actor.apply(params["actor"], features(latent)).sample(seed=action_key))
        return action, (latent, rssm_action(actor, action)), latent

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
            grad_norm=optax.tree.norm(grads),
        )
        state = state.replace(
            actor_state=train_state.replace(target_params=slow),
            collector_state=collector.replace(buffer_state=replay),
            return_scale=scale,
        )
        return state, aux

    def n_updates(tick: jax.Array, state: DreamerV3State) -> jax.Array:
        return ratio.between(tick * n_envs, state.collector_state.timestep)

    loop = TrainLoop.create(env_args, run, extensions, latent_evaluation(model, actor, size, env_args))
    return loop.off_policy(init, learn, collect=collect, n_updates=n_updates)


def make_objective(
    model: WorldModel, actor: Actor, critic: Critic, config: DreamerV3Config
) -> Callable[..., tuple[jax.Array, tuple[Latent, WorldModelLosses, BehaviourLosses, PercentileScale]]]:
    """Steps 2.-5. of an update as one pure function of the parameters, each loss kept apart.

    `objective(params, slow, return_scale, rows, context, (model_key, imagine_key))`: `params`
    are the train state's {"model", "actor", "critic"} (the only argument `learn` differentiates),
    `slow` the slow critic's, `rows` and `context` a sampled batch as `learn` splits it. It returns
    the weighted total and (the posterior, the world model's losses per element, the behaviour
    losses, the updated return scale), so each term's gradient can also be taken on its own.
    """
    # The reference's heads (`symexp_twohot`): bins spaced evenly in symlog space, targets
    # encoded and predictions read between them in the env's own units.
    bins = symexp(symlog_bins(N_BINS))

    def predict(logits: jax.Array) -> jax.Array:
        return bins_mean(logits, bins)

    def two_hot_loss(logits: jax.Array, target: jax.Array) -> jax.Array:
        return two_hot_cross_entropy(logits, target, bins)

    continue_discount = 1.0 - 1.0 / config.horizon

    # The RSSM, read as the equations write it -------------------------------------
    def imagine(params: Any, latent: Latent, action: jax.Array, key: jax.Array) -> Latent:
        """h' = f(h, z, a), z' ~ p(z | h')."""
        deter = model.apply(params, latent, action, method=WorldModel.step)
        logits = model.apply(params, deter, method=WorldModel.prior)
        return Latent(deter, sample_one_hot(logits, key))

    def pi(params: Any, latent: Latent) -> distrax.Distribution:
        return actor.apply(params["actor"], features(latent))

    # The losses ---------------------------------------------------------------------
    def world_model_loss(params: Any, rows: Rows, context: Rows, key: jax.Array):
        """The posterior over the trained rows and the world model's five losses, each (B, T)."""
        model_params = params["model"]
        embedding = model.apply(model_params, rows.obs, method=WorldModel.encode)
        previous = jnp.concatenate([context.action[:, None], rows.action[:, :-1]], 1)
        time_first = lambda x: jnp.swapaxes(x, 0, 1)  # noqa: E731

        def step(latent: Latent, inputs: tuple[jax.Array, ...]):
            embedding_t, action_t, first_t, key_t = inputs
            action_t = rssm_action(actor, action_t)
            latent, logits = observe_sampled(model, model_params, latent, action_t, embedding_t, first_t, key_t)
            return latent, (latent, logits)

        keys = jax.random.split(key, config.batch_length)
        inputs = (time_first(embedding), time_first(previous), time_first(rows.is_first), keys)
        _, (posterior, posterior_logits) = jax.lax.scan(step, context.entry, inputs)
        posterior, posterior_logits = jax.tree.map(time_first, (posterior, posterior_logits))
        prior_logits = model.apply(model_params, posterior.deter, method=WorldModel.prior)
        dynamics, representation = kl_balance(posterior_logits, prior_logits, config.free_nats)
        feat = features(posterior)
        decoded = model.apply(model_params, feat, method=WorldModel.decode)
        continuation = continue_target(rows.is_terminal, config.horizon)
        losses = WorldModelLosses(
            reconstruction_loss=jnp.sum(jnp.square(decoded - symlog(rows.obs)), -1),
            reward_loss=two_hot_loss(model.apply(model_params, feat, method=WorldModel.reward_logits), rows.reward),
            continuation_loss=optax.sigmoid_binary_cross_entropy(
                model.apply(model_params, feat, method=WorldModel.continue_logit), continuation
            ),
            dynamics_loss=dynamics,
            representation_loss=representation,
        )
        return posterior, losses

    def imagined_trajectories(params: Any, starts: Latent, key: jax.Array) -> tuple[Latent, jax.Array]:
        """H steps of the prior under the actor from every start: states (H + 1, N), actions (H + 1, N)."""
        frozen = sg(params)

        def step(latent: Latent, key: jax.Array):
            action_key, latent_key = jax.random.split(key)
            action = pi(frozen, latent).sample(seed=action_key)
            return imagine(frozen["model"], latent, rssm_action(actor, action), latent_key), (latent, action)

        keys = jax.random.split(key, config.imag_horizon + 1)
        last, (states, actions) = jax.lax.scan(step, starts, keys[:-1])
        final_action = pi(frozen, last).sample(seed=keys[-1])
        states = jax.tree.map(lambda xs, x: jnp.concatenate([xs, x[None]]), states, last)
        return sg(states), sg(jnp.concatenate([actions, final_action[None]]))

    def behaviour_loss(params: Any, slow: Any, scale: PercentileScale, posterior: Latent, rows: Rows, key: jax.Array):
        """The actor's and critic's losses on imagination, and the critic's on replay."""
        batch, length = rows.reward.shape
        starts = jax.tree.map(lambda x: sg(x).reshape(batch * length, *x.shape[2:]), posterior)
        states, actions = imagined_trajectories(params, starts, key)
        feat = features(states)  # (H + 1, N, F)
        model_params = sg(params["model"])
        reward = predict(model.apply(model_params, feat, method=WorldModel.reward_logits))
        continues = jax.nn.sigmoid(model.apply(model_params, feat, method=WorldModel.continue_logit))
        value_logits = critic.apply(params["critic"], feat)
        value = predict(value_logits)
        slow_value = predict(critic.apply(slow, feat))
        # The continue head already discounts (its target carries 1 - 1/horizon): imagination uses discount 1.
        weight = trajectory_weight(continues)
        ret = lambda_returns(reward, continues, sg(value), config.lam)  # (H, N)
        scale = normalizers.update(scale, ret)
        advantage = advantages(ret, sg(value[:-1]), denominator(scale))
        policy = actor.apply(params["actor"], feat)
        entropy = policy.entropy()[:-1]
        actor_loss = policy_loss(policy.log_prob(actions)[:-1], entropy, advantage, weight[:-1], config.actor_entropy)
        value_loss = weight[:-1] * (
            two_hot_loss(value_logits[:-1], sg(ret))
            + config.slow_critic_regularizer * two_hot_loss(value_logits[:-1], sg(slow_value[:-1]))
        )
        # Replayed value: the real rewards, bootstrapped from each row's imagined return.
        replay_feat = features(posterior)  # the representation learns from this loss too
        replay_logits = critic.apply(params["critic"], replay_feat)
        replay_return = replay_returns(ret[0], rows, config.lam, continue_discount)  # (B, T - 1)
        replay_slow = predict(critic.apply(slow, replay_feat))
        replay_value_loss = (1.0 - rows.is_last[:, :-1]) * (
            two_hot_loss(replay_logits[:, :-1], sg(replay_return))
            + config.slow_critic_regularizer * two_hot_loss(replay_logits[:, :-1], sg(replay_slow[:, :-1]))
        )
        losses = BehaviourLosses(
            policy_loss=jnp.mean(actor_loss),
            value_loss=jnp.mean(value_loss),
            replay_value_loss=jnp.mean(replay_value_loss),
            entropy=jnp.mean(entropy),
            imagined_return=jnp.mean(ret),
            return_scale=denominator(scale),
        )
        return losses, scale

    def objective(params: Any, slow: Any, return_scale: PercentileScale, rows: Rows, context: Rows, keys: Any):
        """The weighted sum of the losses (the reference's `loss_scales`), and the parts `learn` keeps."""
        model_key, imagine_key = keys
        scales = config.scales
        posterior, model_losses = world_model_loss(params, rows, context, model_key)
        behaviour_losses, scale = behaviour_loss(params, slow, return_scale, posterior, rows, imagine_key)
        total = (
            scales.reconstruction * jnp.mean(model_losses.reconstruction_loss)
            + scales.reward * jnp.mean(model_losses.reward_loss)
            + scales.continuation * jnp.mean(model_losses.continuation_loss)
            + scales.dynamics * jnp.mean(model_losses.dynamics_loss)
            + scales.representation * jnp.mean(model_losses.representation_loss)
            + scales.policy * behaviour_losses.policy_loss
            + scales.value * behaviour_losses.value_loss
            + scales.replay_value * behaviour_losses.replay_value_loss
        )
        return total, (posterior, model_losses, behaviour_losses, scale)

    return objective


def replay_returns(imagined_return: jax.Array, rows: Rows, lam: float, discount: float) -> jax.Array:
    """The replayed rows' lambda-returns (B, T - 1), each bootstrapped from the imagined return of its row.

    `imagined_return` (B T,) is R_0 of the imagination started from each posterior state, which
    `behaviour_loss` flattens row-major: entry b T + t belongs to row (b, t), as the reference's
    `ret[:, 0].reshape(B, K)`. `lambda_returns` runs time first, hence the transposes.
    """
    batch, length = rows.reward.shape
    boot = imagined_return.reshape(batch, length)
    return lambda_returns(rows.reward.T, 1.0 - rows.is_terminal.T, boot.T, lam, discount, lasts=rows.is_last.T).T


def rssm_action(actor: Actor, action: jax.Array) -> jax.Array:
    """The action as the RSSM reads it: one-hot when discrete (acting, training and evaluation alike)."""
    return action if actor.continuous else jax.nn.one_hot(action, actor.action_dim)


def observe_sampled(
    model: WorldModel,
    params: Any,
    latent: Latent,
    action: jax.Array,
    embedding: jax.Array,
    first: jax.Array,
    key: jax.Array,
) -> tuple[Latent, jax.Array]:
    """h_t = f(h_{t-1}, z_{t-1}, a_{t-1}), z_t ~ q(z | h_t, e_t); a reset starts from zeros."""
    return observe_step(model, params, latent, action, embedding, first, lambda logits: sample_one_hot(logits, key))


def observe_step(
    model: WorldModel,
    params: Any,
    latent: Latent,
    action: jax.Array,
    embedding: jax.Array,
    first: jax.Array,
    draw: Callable[[jax.Array], jax.Array],
) -> tuple[Latent, jax.Array]:
    """One posterior step of the RSSM, the stochastic state drawn from its logits by `draw`
    (a sample while collecting and training, the mode in evaluation): the latent and the logits."""
    keep = (~first)[..., None]
    latent = Latent(latent.deter * keep, latent.stoch * keep[..., None])
    deter = model.apply(params, latent, action * keep, method=WorldModel.step)
    logits = model.apply(params, deter, embedding, method=WorldModel.posterior)
    return Latent(deter, draw(logits)), logits


def latent_evaluation(model: WorldModel, actor: Actor, size: Any, env_args: EnvironmentConfig) -> EvalPolicy:
    """The policy's mode on the posterior's mode, the latent carried through each episode."""
    continuous = env_args.continuous

    def greedy(state: DreamerV3State, obs: jax.Array, carry: tuple[Latent, jax.Array]):
        params = state.actor_state.params
        latent, previous = carry
        embedding = model.apply(params["model"], obs, method=WorldModel.encode)
        first = jnp.zeros(obs.shape[:1], bool)  # each evaluation episode starts from the initial latent
        latent, _ = observe_step(model, params["model"], latent, previous, embedding, first, mode_one_hot)
        policy = actor.apply(params["actor"], features(latent))
        action = jnp.clip(policy.mode(), -1.0, 1.0) if continuous else policy.mode()
        previous = rssm_action(actor, action)
        return action, policy.entropy(), (latent, previous)

    def start(state: DreamerV3State, n: int) -> tuple[Latent, jax.Array]:
        del state
        return initial_latent(size, (n,)), jnp.zeros((n, env_args.action_dim))

    return EvalPolicy(greedy, carry=PolicyCarry(init=start, advance=lambda carry, reward: carry))
