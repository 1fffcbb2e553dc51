"""`TrainLoop`: what every agent's run does besides its own update.

An agent supplies `init(key) -> state` and an update; the loop owns everything else, in
this order on every iteration:

    fresh run:  state = init(key), then the extensions' init_state and pretrain
    resumed:    state = the state passed in
    iterate:    collect a round of `train_freq` steps per env (off-policy, 1 by default) or a
                rollout (on-policy)
                if timestep >= learning_starts (on-policy: always), for each update owed
                (`UpdatesOwed.per_round`; the world models': `UpdatesOwed.between`):
                    state, aux = update(state, experience); n_updates += 1
                    fold the extensions' post_update
                else:
                    aux = the update's metrics, filled with NaN
                evaluate and log every log_frequency steps

Budgets: off-policy runs the whole rounds of `n_envs * train_freq` steps the budget holds,
counted from timestep 0, so a run split anywhere makes the rounds of one call. On-policy
runs the rollouts that start before the call's end and, in the call that reaches the run's
horizon, the one starting there too: `budget // (n_envs * n_steps) + 1` on a fresh run, so
a run always makes one rollout more than the budget holds, and a run split into calls at
any timesteps makes the same rollouts as one call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct

from ajax import nonfinite
from ajax.agents.updates_owed import UpdatesOwed
from ajax.environments.interaction import ActionPipeline, Bootstrap, Transition, collect_experience
from ajax.evaluate import EvalPolicy, evaluate, flatten_metrics
from ajax.extensions import ExtensionStack
from ajax.log import TRAIN_RETURN, empty_rows, evaluate_and_log, evaluation_keys, n_rows, train_return
from ajax.perf_utils import LoopCarry, build_resumable_train, final_aux_scan, traced_once
from ajax.state import BaseAgentState, CollectorState, EnvironmentConfig, LoopTrainState

Update = Callable[..., tuple[BaseAgentState, Any]]
OneSeedTrain = Callable[..., tuple[BaseAgentState, Any]]


def when(pred: jax.Array, fn: Callable[..., tuple[Any, Any]], state: Any, *args: Any, fill: float = jnp.nan):
    """`fn(state, *args)` where `pred` holds; elsewhere the state unchanged and metrics `fill`.

    With an unbatched `pred` this stays a real branch under the seed vmap.
    """
    fn = traced_once(fn)
    _, aux_shape = jax.eval_shape(fn, state, *args)

    def skip(state: Any, *args: Any) -> tuple[Any, Any]:
        return state, jax.tree.map(
            lambda s: jnp.full(s.shape, fill if jnp.issubdtype(s.dtype, jnp.floating) else 0, s.dtype),
            aux_shape,
        )

    return jax.lax.cond(pred, fn, skip, state, *args)


def gradient_step(
    train_state: LoopTrainState, loss_fn: Callable[[Any], tuple[jax.Array, Any]]
) -> tuple[LoopTrainState, jax.Array, Any, jax.Array]:
    """One optimiser step on `loss_fn(params) -> (loss, aux)`.

    Returns the new state, the loss, its aux and the gradients' global norm before the
    optimiser clips them.
    """
    (loss, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(train_state.params)
    return train_state.apply_gradients(grads=grads), loss, aux, optax.tree.norm(grads)


def folded_step(
    train_state: LoopTrainState,
    base_loss: Callable[[Any], tuple[jax.Array, Any]],
    fold: Callable[[BaseAgentState, Any, Any], tuple[jax.Array, dict[str, jax.Array]]],
    batch: Any,
    agent_state: BaseAgentState,
) -> tuple[LoopTrainState, jax.Array, Any, jax.Array, dict[str, jax.Array]]:
    """One optimiser step on `base_loss(params) -> (loss, aux)` plus the extensions' term that
    `fold` (`ExtensionStack.fold_critic_loss` or `fold_actor_loss`) adds on the same batch.

    Returns the new state, the total loss, the aux, the gradient norm and the extensions' metrics.
    """

    def loss(params: Any) -> tuple[jax.Array, tuple[Any, dict]]:
        base, aux = base_loss(params)
        extra, metrics = fold(agent_state, batch, params)
        return base + extra, (aux, metrics)

    train_state, total, (aux, metrics), norm = gradient_step(train_state, loss)
    return train_state, total, aux, norm, metrics


def critic_step(
    critic_state: LoopTrainState,
    td_loss: Callable[[Any, jax.Array], tuple[jax.Array, Any]],
    target: jax.Array,
    batch: Any,
    agent_state: BaseAgentState,
    extensions: ExtensionStack,
) -> tuple[LoopTrainState, jax.Array, Any, jax.Array, dict[str, jax.Array]]:
    """A replay critic step that folds the extensions' on_target and critic_loss phases.

    `td_loss(params, target) -> (loss, aux)`. Returns the new state, the loss, the aux, the
    gradient norm and the extensions' metrics.
    """
    target, target_metrics = extensions.fold_on_target(agent_state, batch, jax.lax.stop_gradient(target))
    critic_state, total, aux, norm, metrics = folded_step(
        critic_state, lambda params: td_loss(params, target), extensions.fold_critic_loss, batch, agent_state
    )
    return critic_state, total, aux, norm, {**target_metrics, **metrics}


def same_pass_critic_step(
    critic_state: LoopTrainState,
    td_loss: Callable[[Any], tuple[jax.Array, Any]],
    batch: Any,
    agent_state: BaseAgentState,
    extensions: ExtensionStack,
) -> tuple[LoopTrainState, jax.Array, Any, jax.Array, dict[str, jax.Array]]:
    """A replay critic step whose target comes out of the prediction's own forward pass, folding
    the critic_loss phase.

    CrossQ's target is the critics' value at (s', a') in the pass that also predicts Q(s, a),
    so `td_loss(params) -> (loss, aux)` makes and holds its target itself; there is no target
    to hand the on_target phase before the step, and such an agent does not fold it.
    """
    return folded_step(critic_state, td_loss, extensions.fold_critic_loss, batch, agent_state)


def actor_step(
    actor_state: LoopTrainState,
    policy_loss: Callable[[Any], tuple[jax.Array, Any]],
    batch: Any,
    agent_state: BaseAgentState,
    extensions: ExtensionStack,
) -> tuple[LoopTrainState, jax.Array, Any, jax.Array, dict[str, jax.Array]]:
    """An actor step that folds the extensions' actor_loss phase."""
    return folded_step(actor_state, policy_loss, extensions.fold_actor_loss, batch, agent_state)


def repeat_updates(update: Update, state: BaseAgentState, count: jax.Array) -> tuple[BaseAgentState, Any]:
    """`update(state)` `count` times (a traced count): the state and the last update's metrics,
    NaN where there was none."""
    _, aux_shape = jax.eval_shape(update, state)
    nothing = jax.tree.map(
        lambda s: jnp.full(s.shape, jnp.nan if jnp.issubdtype(s.dtype, jnp.floating) else 0, s.dtype), aux_shape
    )

    def body(carry: tuple[jax.Array, BaseAgentState, Any]) -> tuple[jax.Array, BaseAgentState, Any]:
        done, state, _ = carry
        return (done + 1, *update(state))

    _, state, aux = jax.lax.while_loop(lambda carry: carry[0] < count, body, (jnp.zeros((), jnp.int32), state, nothing))
    return state, aux


@struct.dataclass
class ActorCriticLogs:
    """What an actor-critic update logs: its policy's and its critics' auxiliaries (each agent's
    own dataclass of them) and the extensions' metrics."""

    policy: Any
    value: Any
    extensions: dict


def offline_collector(dataset: Any) -> CollectorState:
    """The collector of an agent that learns from a fixed dataset (IQL, TDMPC2MultiTask): it steps
    nothing, holds the dataset and counts updates. No training episode ever ends, so the
    training return stays NaN."""
    return CollectorState(
        env_state=None,
        last_obs=None,
        timestep=jnp.zeros((), jnp.int32),
        episodic_return=jnp.zeros((1,), jnp.float32),
        last_episodic_return=jnp.full((1,), jnp.nan, jnp.float32),
        buffer_state=dataset,
    )


@dataclass(frozen=True)
class RunSettings:
    """What one `train` call covers: its timesteps, the run's horizon, its evaluations.

    `record`: a logging backend is on, so each evaluation is also handed to the host.
    `replay_capacity`: the transitions the replay is allocated in this run, fewer than its
    `buffer_size` where the horizon writes fewer (`ActorCritic.replay_capacity`); None where
    the whole `buffer_size` is.
    """

    start_timestep: int
    end_timestep: int
    total_timesteps: int
    num_episode_test: int = 10
    log_frequency: int | None = None
    record: bool = False
    replay_capacity: int | None = None


@dataclass(frozen=True)
class TrainLoop:
    env_args: EnvironmentConfig
    run: RunSettings
    extensions: ExtensionStack
    evaluation: EvalPolicy | None = None

    @classmethod
    def create(
        cls,
        env_args: EnvironmentConfig,
        run: RunSettings,
        extensions: ExtensionStack | None = None,
        evaluation: EvalPolicy | None = None,
    ) -> TrainLoop:
        """The loop of one call. `extensions` come bound to the run's horizon: `ActorCritic.get_make_train`
        binds them once, for the agent's own folds and the loop's alike."""
        return cls(env_args, run, extensions if extensions is not None else ExtensionStack(), evaluation)

    @property
    def total_timesteps(self) -> int:
        """The run's horizon: every schedule runs to it."""
        return self.run.total_timesteps

    def fresh_state(self, init: Callable[[jax.Array], BaseAgentState]) -> Callable[[jax.Array], BaseAgentState]:
        masked = self.env_args.action_masked
        return lambda key: self.extensions.fold_init(init(key).replace(nonfinite=nonfinite.NonFinite.clean(masked)))

    def off_policy(
        self,
        init: Callable[[jax.Array], BaseAgentState],
        update: Update,
        learning_starts: int = 0,
        pipeline: ActionPipeline | None = None,
        store: Callable[[BaseAgentState, Transition], BaseAgentState] | None = None,
        before_updates: Callable[[BaseAgentState], BaseAgentState] | None = None,
        *,
        schedule: UpdatesOwed,
        collect: Callable[[BaseAgentState, jax.Array], BaseAgentState] | None = None,
    ) -> OneSeedTrain:
        """A round of `schedule.train_freq` steps per env per iteration; from `learning_starts`
        on, `before_updates(state)` once, then `update(state, experience)` for each of the
        round's updates (`experience`: the round's transitions, stacked when it has several),
        `schedule.per_round(n_envs)` of them: a static count, one scan.

        With `collect`, the world models' shape: each iteration is the agent's own
        `collect(state, tick)` (one step per env), then the updates `schedule` owes for the
        tick's steps, calls of `update(state)`, a count that varies from tick to tick (a train
        ratio, a burst of updates after the seed steps) and reads only the unbatched timestep,
        so it is one loop for every seed.
        """
        env_args = self.env_args
        if collect is not None:
            return self._collected(init, update, collect, schedule)
        n_updates = schedule.per_round(env_args.n_envs)
        one_update = self.updated(update)

        def tick(state: BaseAgentState) -> tuple[BaseAgentState, Transition]:
            state, transition = collect_experience(state, pipeline, env_args)
            state = nonfinite.record(state, nonfinite.env_kinds([transition]))
            return (state if store is None else store(state, transition)), transition

        def updates(state: BaseAgentState, experience: Transition) -> tuple[BaseAgentState, Any]:
            if before_updates is not None:
                state = before_updates(state)
            if n_updates == 1:
                return one_update(state, experience)
            return final_aux_scan(lambda state, _: one_update(state, experience), state, length=n_updates)

        def step(state: BaseAgentState) -> tuple[BaseAgentState, Any]:
            if schedule.train_freq == 1:
                state, experience = tick(state)
            else:
                state, experience = jax.lax.scan(lambda state, _: tick(state), state, length=schedule.train_freq)
            learning = state.collector_state.timestep >= learning_starts
            return when(learning, updates, state, experience)

        start, end, per_round = self.run.start_timestep, self.run.end_timestep, env_args.n_envs * schedule.train_freq
        return self.train(init, step, end // per_round - start // per_round, steps_per_iteration=per_round)

    def _collected(
        self,
        init: Callable[[jax.Array], BaseAgentState],
        update: Update,
        collect: Callable[[BaseAgentState, jax.Array], BaseAgentState],
        schedule: UpdatesOwed,
    ) -> OneSeedTrain:
        n_envs = self.env_args.n_envs
        one_update = traced_once(self.updated(update))

        def step(state: BaseAgentState) -> tuple[BaseAgentState, Any]:
            tick = state.collector_state.timestep // n_envs
            state = collect(state, tick)
            owed = schedule.between(tick * n_envs, state.collector_state.timestep)
            return repeat_updates(one_update, state, owed)

        start, end = self.run.start_timestep, self.run.end_timestep
        return self.train(init, step, end // n_envs - start // n_envs, steps_per_iteration=n_envs)

    def on_policy(
        self,
        init: Callable[[jax.Array], BaseAgentState],
        update: Update,
        n_steps: int,
        pipeline: ActionPipeline,
        bootstrap: Bootstrap | None = None,
    ) -> OneSeedTrain:
        """An `n_steps` rollout per env per iteration, then `update(state, rollout, start)`.

        `start` is the collector state the rollout began from, for an agent that replays
        its rollout from the memory carries it started with; `bootstrap` is collection's
        (`collect_experience`).
        """
        env_args = self.env_args

        def collect(state: BaseAgentState) -> tuple[BaseAgentState, Transition]:
            state, transition = collect_experience(state, pipeline, env_args, bootstrap)
            return nonfinite.record(state, nonfinite.env_kinds([transition])), transition

        def step(state: BaseAgentState) -> tuple[BaseAgentState, Any]:
            start = state.collector_state
            state, rollout = jax.lax.scan(lambda state, _: collect(state), state, None, length=n_steps)
            return self.updated(update)(state, rollout, start)

        per_rollout = n_steps * env_args.n_envs
        return self.train(init, step, self.rollouts(per_rollout), steps_per_iteration=per_rollout)

    def rollouts(self, per_rollout: int) -> int:
        """The rollouts of `per_rollout` steps this call makes (see the module's budgets)."""
        start, end = self.run.start_timestep, self.run.end_timestep
        if end <= start:
            return 0
        rollouts = -(-end // per_rollout) - -(-start // per_rollout)  # those starting in [start, end)
        if end == self.run.total_timesteps and end % per_rollout == 0:
            rollouts += 1  # the horizon's own rollout
        return rollouts

    def updated(self, update: Update) -> Update:
        """The update, then the counter and the extensions' post_update fold."""

        def run(state: BaseAgentState, *experience: Any) -> tuple[BaseAgentState, Any]:
            state, aux = update(state, *experience)
            state = state.replace(n_updates=state.n_updates + 1)
            networks = [trained.params for trained in (state.actor_state, state.critic_state) if trained is not None]
            state = nonfinite.record(state, nonfinite.env_kinds(experience) | nonfinite.update_kinds(aux, networks))
            return self.extensions.fold_post_update(state), aux

        return run

    def train(
        self,
        init: Callable[[jax.Array], BaseAgentState],
        step: Callable[[BaseAgentState], tuple[BaseAgentState, Any]],
        num_iterations: int,
        steps_per_iteration: int,
    ) -> OneSeedTrain:
        """The run of one seed: `num_iterations` of `step`, each followed by the logging gate.

        The returned function takes the count as a traced `n_iterations` and its `cache_key`
        holds everything of the run settings its program depends on, so calls that differ only
        in where they start and how long they run share one program. Its `n_iterations` is
        this call's count, its `n_rows` how many evaluation rows this call returns (None
        unlogged), its `fresh_state(key)` builds the state a fresh run starts from, and its
        `evaluate(state, key)` runs one evaluation.
        """
        if num_iterations < 0:
            raise ValueError("A call cannot end before it starts.")
        log_frequency = self.run.log_frequency
        if log_frequency is None or self.evaluation is None:

            def iteration(carry: LoopCarry) -> LoopCarry:
                state, _ = step(carry.state)
                return carry.replace(state=state)

            train = build_resumable_train(self.fresh_state(init), iteration, num_iterations)
            train.cache_key = (self.run.total_timesteps, self.run.replay_capacity)
            train.n_iterations, train.n_rows = num_iterations, None
            train.fresh_state = self.fresh_state(init)
            train.evaluate = self.evaluate
            return train

        @traced_once
        def metrics(state: BaseAgentState, key: jax.Array, aux: Any) -> dict[str, jax.Array]:
            return {
                **self.evaluate(state, key),
                TRAIN_RETURN: train_return(state),
                **flatten_metrics(aux),
                **self.extensions.fold_eval_metrics(state),
            }

        # The rows' shapes are read from one iteration before the scan traces it.
        step_once = traced_once(step)

        def iteration(carry: LoopCarry) -> LoopCarry:
            previous = carry.state.collector_state.timestep
            state, aux = step_once(carry.state)
            state, rows = evaluate_and_log(
                state,
                carry.rows,
                carry.first_log,
                previous,
                lambda state, key: metrics(state, key, aux),
                log_frequency,
                self.run.total_timesteps,
                self.run.record,
            )
            return carry.replace(state=state, rows=rows)

        # One slot per evaluation this call's iterations can reach: past the call's end (a
        # whole last rollout), never past the horizon. A traced count can be any call's: its
        # program holds a slot for every evaluation of the run, and this call's rows lead them.
        start = self.run.start_timestep
        reached = min(start + num_iterations * steps_per_iteration, self.run.total_timesteps)
        call_slots = n_rows(start, reached, log_frequency)
        run_slots = n_rows(0, self.run.total_timesteps, log_frequency)
        fresh_state = self.fresh_state(init)

        def rows_for(state: BaseAgentState, count: int) -> dict[str, jax.Array]:
            def one(state: BaseAgentState) -> dict[str, jax.Array]:
                state, aux = step_once(state)
                return metrics(state, evaluation_keys(state)[0], aux)

            return empty_rows(jax.eval_shape(one, state), count)

        def train(
            key: jax.Array, initial_state: BaseAgentState | None = None, n_iterations: jax.Array | int | None = None
        ) -> tuple[BaseAgentState, Any]:
            state = fresh_state(key) if initial_state is None else initial_state
            count = call_slots if n_iterations is None else run_slots
            run = build_resumable_train(lambda _: state, iteration, num_iterations, lambda: rows_for(state, count))
            return run(key, None, n_iterations)

        settings = self.run
        train.cache_key = (
            settings.total_timesteps,
            settings.replay_capacity,
            log_frequency,
            settings.num_episode_test,
            settings.record,
        )
        train.n_iterations, train.n_rows = num_iterations, call_slots
        train.fresh_state = fresh_state
        train.evaluate = self.evaluate
        return train

    def evaluate(self, state: BaseAgentState, key: jax.Array) -> dict[str, jax.Array]:
        """One evaluation of one seed's state, as the logging gate runs it (`ajax eval` calls it alone)."""
        if self.evaluation is None:
            raise ValueError("This agent hands the loop no evaluation policy.")
        return evaluate(state, key, self.env_args, self.evaluation, self.run.num_episode_test)
