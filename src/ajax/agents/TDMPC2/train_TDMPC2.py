"""TD-MPC2 on the shared loop: plan at every step, then one update per env step.

Collection: for the first `seed_steps` env steps actions are uniform; from there each env
copy acts by MPPI in the latent space (`planner.plan`), warm-started from its previous
plan. Every transition goes to a sequence replay, one time line per env copy.

Updates (the reference's `TDMPC2._update`, nicklashansen/tdmpc2 `tdmpc2.py`), each on
`batch_size` windows of `horizon` consecutive transitions:

1. Targets, out of the gradient's reach: z'_t = enc(s_{t+1}) (the final observation at a
   time limit), the TD target r_t + gamma (1 - terminated_t) min of two random target
   Q-functions at (z'_t, a' ~ pi(z'_t)).
2. World model: z_0 = enc(s_0), z_{t+1} = d(z_t, a_t); the consistency (MSE to z'_t),
   reward and value (two-hot cross-entropies) and, in episodic mode, termination losses,
   each step weighted by rho^t; one Adam step on 20 cons + 0.1 rew + 0.1 val (+ 1 term),
   gradients clipped at norm 20, the encoder at 0.3 times the rate.
3. Policy prior on the rollout's latents (detached): maximise the mean of two random
   Q-functions divided by their running scale, plus 1e-4 times the scaled entropy
   (`policy_objective`, which detaches the world model's parameters itself).

The losses of steps 1.-3. are pure functions in `losses.py`; `update` takes their gradients.
4. The target Q-functions follow by Polyak averaging (tau 0.01).

When the collected steps reach `seed_steps`, that tick makes `seed_steps` updates at once
(the reference's pretraining on the seed data), and every tick after one per env step.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct

from ajax import nonfinite
from ajax.agents.loop import RunSettings, TrainLoop
from ajax.agents.TDMPC2.core import soft_update, window_valid
from ajax.agents.TDMPC2.losses import policy_objective, td_targets, world_model_loss
from ajax.agents.TDMPC2.model import Networks
from ajax.agents.TDMPC2.networks import WorldModel
from ajax.agents.TDMPC2.planner import PlanCarry, plan
from ajax.agents.TDMPC2.state import TDMPC2Config, TDMPC2State
from ajax.agents.updates_owed import UpdatesOwed
from ajax.buffers.sequence import SequenceReplay
from ajax.environments.interaction import Transition, collect_experience, init_collector
from ajax.environments.utils import uniform_action
from ajax.evaluate import EvalPolicy, PolicyCarry
from ajax.extensions import ExtensionStack
from ajax.networks.optim import with_traced_numbers
from ajax.normalizers import RunningScale
from ajax.state import EnvironmentConfig, LoopTrainState, NetworkConfig

sg = jax.lax.stop_gradient
POLICY = "policy"  # the policy prior's parameters: the actor's train state; every other network is the model's


@struct.dataclass
class ModelLosses:
    consistency_loss: jax.Array
    reward_loss: jax.Array
    value_loss: jax.Array
    termination_loss: jax.Array
    total_loss: jax.Array
    grad_norm: jax.Array


@struct.dataclass
class PolicyLosses:
    pi_loss: jax.Array
    pi_grad_norm: jax.Array
    pi_entropy: jax.Array
    pi_scaled_entropy: jax.Array
    pi_scale: jax.Array


@struct.dataclass
class AuxiliaryLogs:
    model: ModelLosses
    policy: PolicyLosses


def model_optimizer(config: TDMPC2Config) -> optax.GradientTransformation:
    """Adam at the learning rate, the encoder at `enc_lr_scale` times it, after clipping the global norm."""

    def labels(params: Any) -> dict[str, str]:
        return {name: "encoder" if name == "encoder" else "rest" for name in params}

    def model_adam(learning_rate: float, enc_lr_scale: float, grad_clip_norm: float) -> optax.GradientTransformation:
        rates = {"encoder": optax.adam(learning_rate * enc_lr_scale), "rest": optax.adam(learning_rate)}
        return optax.chain(optax.clip_by_global_norm(grad_clip_norm), optax.multi_transform(rates, labels))

    return with_traced_numbers(
        model_adam,
        learning_rate=config.learning_rate,
        enc_lr_scale=config.enc_lr_scale,
        grad_clip_norm=config.grad_clip_norm,
    )


def policy_optimizer(config: TDMPC2Config) -> optax.GradientTransformation:
    def policy_adam(learning_rate: float, grad_clip_norm: float) -> optax.GradientTransformation:
        return optax.chain(optax.clip_by_global_norm(grad_clip_norm), optax.adam(learning_rate, eps=1e-5))

    return with_traced_numbers(policy_adam, learning_rate=config.learning_rate, grad_clip_norm=config.grad_clip_norm)


def init_train_states(
    networks: Networks, config: TDMPC2Config, key: jax.Array
) -> tuple[LoopTrainState, LoopTrainState]:
    """(model, policy) train states; the model's target parameters are its Q-functions'."""
    arch = config.arch
    task = jnp.zeros((1,), jnp.int32) if arch.n_tasks else None
    params = networks.model.init(key, arch.observation_zeros(), jnp.zeros((1, arch.action_dim)), task)
    params = dict(params["params"])
    policy = {POLICY: params.pop(POLICY)}
    model = LoopTrainState.create(
        apply_fn=networks.model.apply, params=params, tx=model_optimizer(config), target_params=params["q_ensemble"]
    )
    actor = LoopTrainState.create(apply_fn=networks.model.apply, params=policy, tx=policy_optimizer(config))
    return model, actor


def update(
    networks: Networks,
    config: TDMPC2Config,
    model_state: LoopTrainState,
    policy_state: LoopTrainState,
    q_scale: RunningScale,
    window: Any,
    valid: jax.Array,
    discount: jax.Array | float,
    key: jax.Array,
    task: jax.Array | None = None,
    action_mask: jax.Array | None = None,
) -> tuple[LoopTrainState, LoopTrainState, RunningScale, AuxiliaryLogs]:
    """One update on a window (leaves (H, B, ...)): obs, action, reward, next_obs, terminated."""
    target_pi_key, target_q_key, model_dropout, pi_key, q_key, pi_dropout = jax.random.split(key, 6)
    policy_params = policy_state.params

    # 1. Targets, from the parameters before this update.
    target_keys = (target_pi_key, target_q_key)
    next_z, target = td_targets(networks, model_state, policy_params, window, discount, target_keys, task, action_mask)

    # 2. The world model.
    def objective(model_params: Any) -> tuple[jax.Array, tuple[jax.Array, dict[str, jax.Array]]]:
        return world_model_loss(
            networks, config, model_params, policy_params, window, next_z, target, valid, model_dropout, task
        )

    (total, (zs, losses)), grads = jax.value_and_grad(objective, has_aux=True)(model_state.params)
    model_state = model_state.apply_gradients(grads=grads)
    model_losses = ModelLosses(
        consistency_loss=losses["consistency"],
        reward_loss=losses["reward"],
        value_loss=losses["value"],
        termination_loss=losses["termination"],
        total_loss=total,
        grad_norm=optax.tree.norm(grads),
    )

    # 3. The policy prior, against the updated Q-functions (detached: only the action carries a gradient).
    zs = sg(zs)
    pi_valid = jnp.concatenate([jnp.ones_like(valid[:1]), valid])  # z_t is inside the episode when a_{t-1} was
    pi_keys = (pi_key, q_key, pi_dropout)

    def pi_objective(policy_params: Any):
        return policy_objective(
            networks, config, model_state.params, policy_params, zs, q_scale, pi_valid, pi_keys, task, action_mask
        )

    (pi_loss, (q_scale, entropy, scaled_entropy)), pi_grads = jax.value_and_grad(pi_objective, has_aux=True)(
        policy_state.params
    )
    policy_state = policy_state.apply_gradients(grads=pi_grads)

    # 4. The target Q-functions.
    model_state = model_state.replace(
        target_params=soft_update(model_state.target_params, model_state.params["q_ensemble"], config.tau)
    )
    policy_losses = PolicyLosses(
        pi_loss=pi_loss,
        pi_grad_norm=optax.tree.norm(pi_grads),
        pi_entropy=jnp.mean(entropy),
        pi_scaled_entropy=jnp.mean(scaled_entropy),
        pi_scale=q_scale.value,
    )
    return model_state, policy_state, q_scale, AuxiliaryLogs(model_losses, policy_losses)


def updated_on(
    networks: Networks,
    config: TDMPC2Config,
    state: TDMPC2State,
    window: Transition,
    discount: jax.Array,
    key: jax.Array,
    **task: jax.Array,
) -> tuple[TDMPC2State, AuxiliaryLogs]:
    """The state after one update on a sampled `window`, its steps past an episode's end left out
    (`task`: the multi-task agent's task index and action mask per window)."""
    valid = window_valid(window.terminated, window.truncated)
    model_state, policy_state, q_scale, aux = update(
        networks, config, state.critic_state, state.actor_state, state.q_scale, window, valid, discount, key, **task
    )
    return state.replace(critic_state=model_state, actor_state=policy_state, q_scale=q_scale), aux


def make_train(
    *,
    env_args: EnvironmentConfig,
    network_args: NetworkConfig,
    agent_config: TDMPC2Config,
    extensions: ExtensionStack,
    run: RunSettings,
):
    del network_args  # the model size's widths
    config = agent_config
    n_envs, horizon, action_dim = env_args.n_envs, config.planner.horizon, env_args.action_dim
    networks = Networks(WorldModel(config.arch), config)
    replay = SequenceReplay(config.capacity, n_envs, config.batch_size, horizon)

    def params_of(state: TDMPC2State) -> Any:
        return {**state.critic_state.params, **state.actor_state.params}

    def act(params: Any, obs: jax.Array, carry: PlanCarry, key: jax.Array, evaluating: bool):
        """Each env copy's action and the plans' means: MPPI, or the policy prior alone with mpc=False."""
        z = networks.encode(params, obs)
        if not config.mpc:
            action, mean_action, _, _ = networks.pi(params, z, key)
            return (mean_action if evaluating else action), carry.mean
        model = networks.latent_model(params, config.discount)
        keys = jax.random.split(key, obs.shape[0])
        decide = lambda z, mean, first, key: plan(model, z, mean, first, key, config.planner, evaluating)  # noqa: E731
        return jax.vmap(decide)(z, carry.mean, carry.episode_start, keys)

    def init(key: jax.Array) -> TDMPC2State:
        rng, net_key, env_key, eval_key = jax.random.split(key, 4)
        model_state, policy_state = init_train_states(networks, config, net_key)
        collector = init_collector(env_key, env_args, replay.init(env_args))
        collector = collector.replace(
            memory=PlanCarry(jnp.zeros((n_envs, horizon, action_dim)), jnp.ones((n_envs,), bool))
        )
        return TDMPC2State(
            rng=rng,
            actor_state=policy_state,
            critic_state=model_state,
            collector_state=collector,
            eval_rng=eval_key,
            n_updates=jnp.zeros((), jnp.int32),
            n_logs=jnp.zeros((), jnp.int32),
            q_scale=RunningScale.create(),
        )

    def behaviour(state: TDMPC2State, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, dict[str, Any]]:
        carry = state.collector_state.memory

        def uniform(key: jax.Array) -> tuple[jax.Array, jax.Array]:
            return uniform_action(key, env_args, n_envs), carry.mean

        def planned(key: jax.Array) -> tuple[jax.Array, jax.Array]:
            return act(params_of(state), obs, carry, key, evaluating=False)

        seeding = state.collector_state.timestep < config.seed_steps
        action, mean = jax.lax.cond(seeding, uniform, planned, key)
        return action, {"memory": carry.replace(mean=mean), "episode_start": carry.episode_start}

    def collect(state: TDMPC2State, tick: jax.Array) -> TDMPC2State:
        del tick
        state, transition = collect_experience(state, behaviour, env_args)
        state = nonfinite.record(state, nonfinite.env_kinds([transition]))
        return replay.add(state, transition)

    def learn(state: TDMPC2State) -> tuple[TDMPC2State, AuxiliaryLogs]:
        state, (sample_key, update_key) = state.next_keys(2)
        window = replay.sample(state.collector_state.buffer_state, sample_key).transition
        return updated_on(networks, config, state, window, config.discount, update_key)

    # Evaluation: the plan without its exploration noise (the reference's eval_mode).
    def greedy(state: TDMPC2State, obs: jax.Array, carry: tuple[PlanCarry, jax.Array]):
        plans, key = carry
        key, act_key, entropy_key = jax.random.split(key, 3)
        params = params_of(state)
        action, mean = act(params, obs, plans, act_key, evaluating=True)
        log_prob = networks.pi(params, networks.encode(params, obs), entropy_key)[2]
        return action, -log_prob, (PlanCarry(mean, jnp.zeros_like(plans.episode_start)), key)

    def start(state: TDMPC2State, n: int) -> tuple[PlanCarry, jax.Array]:
        key = jax.random.fold_in(jax.random.fold_in(state.eval_rng, state.n_logs), 1)
        return PlanCarry(jnp.zeros((n, horizon, action_dim)), jnp.ones((n,), bool)), key

    evaluation = EvalPolicy(greedy, carry=PolicyCarry(init=start, advance=lambda carry, reward: carry))
    loop = TrainLoop.create(env_args, run, extensions, evaluation)
    return loop.off_policy(init, learn, schedule=UpdatesOwed.after_seed_steps(config.seed_steps), collect=collect)
