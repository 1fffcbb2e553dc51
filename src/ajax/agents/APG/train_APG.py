"""APG on the shared loop's parts: each update a differentiable rollout and one optimiser step.

No critic, no replay: an update rolls every env copy `horizon` steps from where the last
update left it, under the current deterministic policy, and takes one step on
`apg_loss(rewards)` with its gradient through the env's transitions
(`environments.differentiable`). The envs continue from update to update, auto-resetting
where episodes end, so with `horizon` equal to a tracking task's episode length each
update is one episode of every copy.

With evaluations the run is the loop's own (`TrainLoop.train`); without, a scan over the
updates from the loop's fresh state, with its post_update fold, that returns each update's
metrics in place of evaluations.

A controller with a memory or a PID head (`controller.py`) acts step by step in the loop
with its carry, which the collector keeps between updates, cut from the graph, beside the
episode starts that zero it: truncated back-propagation through time at the horizon. The
extensions' actor_loss phase (ImitationLoss) folds into the loss on the states the rollout
visited, held fixed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct

from ajax import nonfinite
from ajax.agents.APG.controller import ClosedLoopController, initial_controller_carry
from ajax.agents.APG.core import apg_loss, m_rmse, matching_loss
from ajax.agents.APG.state import APGConfig
from ajax.agents.loop import RunSettings, TrainLoop, gradient_step
from ajax.environments.differentiable import LoopState, closed_loop_rollout
from ajax.environments.interaction import Transition, init_collector
from ajax.environments.utils import flatten_observation, stored_observation, to_env_action
from ajax.evaluate import EvalPolicy, PolicyCarry, flatten_metrics
from ajax.extensions import ExtensionStack
from ajax.modules.pid_actor import PIDPolicy, pid_actor
from ajax.networks.actor_critic import DeterministicActor
from ajax.networks.encoders import encoded
from ajax.networks.optim import with_traced_numbers
from ajax.networks.recurrent import MemoryCarries
from ajax.schedule import warmup_cosine
from ajax.state import BaseAgentState, CollectorState, EnvironmentConfig, LoopTrainState, NetworkConfig, OptimizerConfig


@struct.dataclass
class PolicyAuxiliaries:
    loss: jax.Array
    matching_loss: jax.Array
    m_rmse: jax.Array
    actor_grad_norm: jax.Array


@struct.dataclass
class AuxiliaryLogs:
    policy: PolicyAuxiliaries
    extensions: dict  # the actor_loss extensions' metrics (imitation/loss), logged under their own names


@struct.dataclass
class VisitedStates:
    """What an actor_loss extension reads of a rollout: the observations it visited, (T * N, D)."""

    obs: jax.Array


def optimizer(args: OptimizerConfig, config: APGConfig, n_updates: int) -> optax.GradientTransformation:
    """AdamW (Adam at zero decay) on the rate or its warm-up and cosine, after clipping the global norm."""

    def adamw(learning_rate: float, weight_decay: float, max_grad_norm: float | None) -> optax.GradientTransformation:
        rate = learning_rate
        if config.lr_schedule == "warmup_cosine":
            rate = warmup_cosine(learning_rate, config.warmup(n_updates), n_updates)
        adam = optax.adamw(rate, b1=args.b1, b2=args.b2, eps=args.eps, weight_decay=weight_decay)
        return adam if max_grad_norm is None else optax.chain(optax.clip_by_global_norm(max_grad_norm), adam)

    return with_traced_numbers(
        adamw, learning_rate=args.learning_rate, weight_decay=config.weight_decay, max_grad_norm=args.max_grad_norm
    )


def episodic_returns(collector: CollectorState, reward: jax.Array, done: jax.Array) -> CollectorState:
    """The running and last finished returns after a rollout, as collection keeps them step by step."""

    def step(carry: tuple[jax.Array, jax.Array], x: tuple[jax.Array, jax.Array]):
        running, last = carry
        reward, done = x
        running = running + reward
        return (jnp.where(done, 0.0, running), jnp.where(done, running, last)), None

    start = (collector.episodic_return, collector.last_episodic_return)
    (running, last), _ = jax.lax.scan(step, start, (reward, done))
    return collector.replace(episodic_return=running, last_episodic_return=last)


def make_train(
    *,
    env_args: EnvironmentConfig,
    network_args: NetworkConfig,
    actor_optimizer_args: OptimizerConfig,
    agent_config: APGConfig,
    extensions: ExtensionStack,
    run: RunSettings,
):
    config = agent_config
    n_envs = env_args.n_envs
    stateful = network_args.memory is not None or config.pid_head
    controller = None
    if stateful:
        controller = ClosedLoopController(
            network_args.actor_architecture, env_args.action_dim, network_args.memory, config.pid_head
        )
    elif isinstance(network_args.actor_architecture, PIDPolicy):
        actor = pid_actor(network_args.actor_architecture, env_args, "deterministic")
    else:
        actor = encoded(
            DeterministicActor(network_args.actor_architecture, env_args.action_dim),
            network_args.encoder,
            env_args.observation_parts,
        )
    per_update = config.horizon * n_envs

    def kept(obs: Any) -> Any:
        """The env's observations as the actor reads them and the collector keeps them."""
        return stored_observation(obs, env_args)

    total_updates = -(-run.total_timesteps // per_update) + 1  # the on-policy loop's count over the horizon

    def act(params: Any, obs: jax.Array, carry: Any, episode_start: jax.Array | None) -> tuple[jax.Array, Any]:
        """The actions in agent units for observations as kept (N, ...), and the carry after them."""
        if not stateful:
            return actor.apply(params, obs), carry
        carry, action = controller.apply(params, carry, obs[None], episode_start[None])
        return action[0], carry

    def init(key: jax.Array) -> BaseAgentState:
        rng, actor_key, env_key, eval_key = jax.random.split(key, 4)
        obs = env_args.observation_zeros(1)
        collector = init_collector(env_key, env_args)
        if stateful:
            params = controller.init(actor_key, initial_controller_carry(controller, 1), obs[None], jnp.ones((1, 1)))
            carries = {"actor": initial_controller_carry(controller, n_envs)}
            collector = collector.replace(memory=MemoryCarries(carries, jnp.ones((n_envs,), bool)))
            apply_fn = controller.apply
        else:
            params, apply_fn = actor.init(actor_key, obs), actor.apply
        tx = optimizer(actor_optimizer_args, config, total_updates)
        return BaseAgentState(
            rng=rng,
            actor_state=LoopTrainState.create(apply_fn=apply_fn, params=params, tx=tx),
            critic_state=None,
            collector_state=collector,
            eval_rng=eval_key,
            n_updates=jnp.zeros((), jnp.int32),
            n_logs=jnp.zeros((), jnp.int32),
        )

    def update(state: BaseAgentState) -> tuple[BaseAgentState, AuxiliaryLogs]:
        state, (rollout_key,) = state.next_keys(1)
        collector = state.collector_state
        if stateful:
            memory = collector.memory
            loop = LoopState(collector.env_state, collector.last_obs, memory.carries["actor"], memory.episode_start)
        else:
            loop = LoopState(collector.env_state, collector.last_obs, (), jnp.zeros((n_envs,), bool))

        def loss(params):
            def policy(obs, carry, episode_start):
                action, carry = act(params, obs, carry, episode_start)
                return to_env_action(action, env_args), carry

            after, rollout = closed_loop_rollout(
                env_args.env, env_args.env_params, policy, loop, rollout_key, config.horizon, kept
            )
            visited = VisitedStates(jax.lax.stop_gradient(flatten_observation(rollout.obs, 2).reshape(per_update, -1)))
            extra, metrics = extensions.fold_actor_loss(state, visited, params)
            return apg_loss(rollout.reward) + extra, (after, rollout, metrics)

        actor_state, value, (after, rollout, metrics), norm = gradient_step(state.actor_state, loss)
        matching = matching_loss(rollout.reward)
        collector = advance_collector(collector, jax.lax.stop_gradient(after), rollout, per_update, stateful)
        seen = Transition(
            rollout.obs, rollout.action, rollout.reward, rollout.obs, rollout.terminated, rollout.truncated
        )
        state = nonfinite.record(state, nonfinite.env_kinds([seen]))
        state = state.replace(actor_state=actor_state, collector_state=collector)
        return state, AuxiliaryLogs(PolicyAuxiliaries(value, matching, m_rmse(matching), norm), metrics)

    evaluation = evaluation_policy(act, controller)
    loop = TrainLoop.create(env_args, run, extensions, evaluation)
    step = loop.updated(update)
    n_updates = loop.rollouts(per_update)
    if run.log_frequency is not None:
        return loop.train(init, step, n_updates, steps_per_iteration=per_update)
    return metrics_program(loop, init, step, n_updates, run)


def advance_collector(
    collector: CollectorState, after: LoopState, rollout: Any, per_update: int, stateful: bool
) -> CollectorState:
    """The collector where the rollout left the envs (`after`, cut from the graph): their states,
    observations, returns and timestep, and a stateful controller's carry and episode starts."""
    done = rollout.terminated | rollout.truncated
    collector = episodic_returns(collector, rollout.reward, done).replace(
        env_state=after.env_state,
        last_obs=after.obs,
        timestep=collector.timestep + per_update,
    )
    if stateful:
        collector = collector.replace(memory=MemoryCarries({"actor": after.carry}, after.episode_start))
    return collector


def evaluation_policy(act: Callable[..., tuple[jax.Array, Any]], controller: ClosedLoopController | None) -> EvalPolicy:
    """The deterministic policy in evaluation, reporting the episodes' M-RMSE beside their returns.

    A controller (`controller` given) keeps its carry through each evaluation episode, one per
    env: no reset after the first. `act` is `make_train`'s, the policy's actions in agent units.
    """

    def with_m_rmse(metrics: dict[str, jax.Array]) -> dict[str, jax.Array]:
        """The evaluation episodes' M-RMSE: the root of minus the mean reward per step."""
        per_step = metrics["Eval/episodic mean reward"] / metrics["Eval/mean episodic length"]
        return {**metrics, "Eval/m_rmse": m_rmse(-per_step)}

    if controller is None:

        def greedy(state: BaseAgentState, obs: jax.Array):
            return act(state.actor_state.params, obs, (), None)[0], jnp.zeros(obs.shape[0])

        return EvalPolicy(greedy, None, 1.0, report=with_m_rmse)

    def carried_greedy(state: BaseAgentState, obs: jax.Array, carry: tuple[Any, jax.Array]):
        carry, episode_start = carry
        action, carry = act(state.actor_state.params, obs, carry, episode_start)
        return action, jnp.zeros(obs.shape[0]), (carry, jnp.zeros_like(episode_start))

    start = PolicyCarry(
        init=lambda state, n: (initial_controller_carry(controller, n), jnp.ones((n,), bool)),
        advance=lambda carry, reward: carry,
    )
    return EvalPolicy(carried_greedy, None, 1.0, carry=start, report=with_m_rmse)


def metrics_program(
    loop: TrainLoop,
    init: Callable[[jax.Array], BaseAgentState],
    step: Callable[[BaseAgentState], tuple[BaseAgentState, AuxiliaryLogs]],
    n_updates: int,
    run: RunSettings,
) -> Callable[..., tuple[BaseAgentState, dict[str, jax.Array]]]:
    """The run without evaluations: a scan over the updates from the loop's fresh state (or a given
    one), returning each update's metrics in place of evaluations."""
    fresh_state = loop.fresh_state(init)

    def train(key: jax.Array, initial_state: BaseAgentState | None = None, n_iterations: Any = None):
        # Each update's metrics are a row: the program is built for its own count (its
        # cache_key's), which is the count every call of it brings.
        state = fresh_state(key) if initial_state is None else initial_state
        state, aux = jax.lax.scan(lambda state, _: step(state), state, None, length=n_updates)
        return state, flatten_metrics(aux)

    # The same program for calls that differ only in where they start.
    train.cache_key = (n_updates, run.total_timesteps)
    train.n_iterations, train.n_rows = n_updates, None
    train.fresh_state = fresh_state
    train.evaluate = loop.evaluate
    return train
