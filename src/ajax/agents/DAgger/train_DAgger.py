"""DAgger on the shared on-policy loop: one iteration of Algorithm 3.1 per rollout.

An iteration, in the order Ross et al.'s Algorithm 3.1 runs it:

1. act `n_steps` steps per env with the mixture pi_i: at every step each copy follows the
   expert with probability beta_i, the learner's deterministic action otherwise; every
   visited observation is labelled with the expert's action (the pipeline's extras);
2. aggregate: D <- D u {(s, pi*(s))} for every step of the rollout;
3. train the learner on D: `n_gradient_steps` minibatch steps of the supervised loss,
   each folding the extensions' actor_loss phase (`actor_step`); then the loop's update
   counter, which numbers the iterations (i = n_updates + 1), and the post_update fold.

Departures, to fit one compiled program: an iteration is a fixed rollout of `n_steps` per
env rather than whole trajectories, episodes continuing across iterations; the learner is
warm-started from pi_hat_i and trained for a fixed number of steps rather than fitted
afresh to convergence; D is a ring of `buffer_size` rows, which holds every visited state
until it fills, then drops the oldest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from ajax.agents.DAgger.core import (
    classification_loss,
    expert_acts,
    expert_label,
    mixing_coefficient,
    mixture_action,
    regression_loss,
)
from ajax.agents.DAgger.state import DAggerConfig, DAggerState, Labelled
from ajax.agents.loop import RunSettings, TrainLoop, actor_step
from ajax.buffers.replay import ItemReplay, add_items
from ajax.environments.interaction import ActionPipeline, Transition, init_collector
from ajax.environments.utils import batch_size
from ajax.evaluate import EvalPolicy
from ajax.extensions import ExtensionStack
from ajax.networks.actor_critic import CategoricalActor, DeterministicActor
from ajax.networks.encoders import encoded
from ajax.networks.optim import new_train_state
from ajax.perf_utils import final_aux_scan
from ajax.state import EnvironmentConfig, LoopTrainState, NetworkConfig, OptimizerConfig


@struct.dataclass
class ExpertLabel:
    """What the mixture adds to each step: the expert's label, and whether the expert acted."""

    label: jax.Array
    expert_acted: jax.Array


@struct.dataclass
class PolicyAuxiliaries:
    policy_loss: jax.Array  # the supervised loss on D, before the extensions' terms
    actor_grad_norm: jax.Array


@struct.dataclass
class MixtureAuxiliaries:
    beta: jax.Array  # beta_i of the iteration just collected
    expert_fraction: jax.Array  # the share of its steps the expert drove


@struct.dataclass
class AuxiliaryLogs:
    policy: PolicyAuxiliaries
    mixture: MixtureAuxiliaries
    extensions: dict


@dataclass(frozen=True)
class AggregateDataset:
    """D as a flashbax item buffer of `Labelled` rows: a ring of `capacity`, uniform minibatches."""

    capacity: int
    batch_size: int

    @property
    def _items(self) -> ItemReplay:
        return ItemReplay(self.capacity, self.batch_size)

    def init(self, env_args: EnvironmentConfig) -> Any:
        label = jnp.zeros((env_args.action_dim,), jnp.float32) if env_args.continuous else jnp.zeros((), jnp.int32)
        return self._items.init(Labelled(obs=env_args.observation_zeros(), label=label))

    def add(self, dataset: Any, rows: Labelled) -> Any:
        return add_items(dataset, rows)

    def sample(self, dataset: Any, key: jax.Array) -> Labelled:
        return self._items.sample(dataset, key)


def make_train(
    *,
    env_args: EnvironmentConfig,
    network_args: NetworkConfig,
    actor_optimizer_args: OptimizerConfig,
    agent_config: DAggerConfig,
    extensions: ExtensionStack,
    run: RunSettings,
):
    config = agent_config
    continuous = env_args.continuous
    if continuous:
        head = DeterministicActor(network_args.actor_architecture, env_args.action_dim)
    else:
        head = CategoricalActor(network_args.actor_architecture, env_args.action_dim)
    learner = encoded(head, network_args.encoder, env_args.observation_parts, env_args.action_masked)
    dataset = AggregateDataset(config.buffer_size, config.batch_size)

    def init(key: jax.Array) -> DAggerState:
        rng, actor_key, env_key, eval_key = jax.random.split(key, 4)
        return DAggerState(
            rng=rng,
            actor_state=new_train_state(learner, actor_key, actor_optimizer_args, env_args.observation_zeros(1)),
            critic_state=None,
            collector_state=init_collector(env_key, env_args),
            eval_rng=eval_key,
            n_updates=jnp.zeros((), jnp.int32),
            n_logs=jnp.zeros((), jnp.int32),
            dataset=dataset.init(env_args),
        )

    def learner_action(params: Any, obs: jax.Array) -> jax.Array:
        """pi_hat's deterministic action: the tanh actor's output, or the most probable index."""
        out = learner.apply(params, obs)
        return out if continuous else jnp.argmax(out.logits, axis=-1)

    def supervised_loss(params: Any, batch: Labelled) -> jax.Array:
        out = learner.apply(params, batch.obs)
        if continuous:
            return regression_loss(out, batch.label)
        return classification_loss(out.logits, batch.label)

    # 1. Acting with the mixture, labelling every visited state ------------------------
    act = mixture_pipeline(config, env_args, learner_action)

    # 2. and 3. Aggregating, then training on the aggregate -------------------------------
    def update(state: DAggerState, rollout: Transition, start: Any) -> tuple[DAggerState, AuxiliaryLogs]:
        del start  # the learner is stateless: nothing to replay from the rollout's start
        rows = Labelled(obs=rollout.obs, label=rollout.extras.label)
        state = state.replace(dataset=dataset.add(state.dataset, jax.tree.map(flatten_steps, rows)))
        state, (key,) = state.next_keys(1)

        def gradient_update(actor_state: LoopTrainState, key: jax.Array):
            batch = dataset.sample(state.dataset, key)
            actor_state, loss, _, norm, metrics = actor_step(
                actor_state,
                lambda params: (supervised_loss(params, batch), ()),
                batch,
                state.replace(actor_state=actor_state),
                extensions,
            )
            return actor_state, (PolicyAuxiliaries(loss, norm), metrics)

        keys = jax.random.split(key, config.n_gradient_steps)
        actor_state, (policy_aux, metrics) = final_aux_scan(gradient_update, state.actor_state, keys)
        mixture = MixtureAuxiliaries(
            beta=mixing_coefficient(state.n_updates + 1, config.beta_decay),
            expert_fraction=jnp.mean(rollout.extras.expert_acted.astype(jnp.float32)),
        )
        return state.replace(actor_state=actor_state), AuxiliaryLogs(policy_aux, mixture, metrics)

    def greedy(state: DAggerState, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        if continuous:
            return learner_action(state.actor_state.params, obs), jnp.zeros(batch_size(obs))
        pi = learner.apply(state.actor_state.params, obs)
        return jnp.argmax(pi.logits, axis=-1), pi.entropy()

    loop = TrainLoop.create(env_args, run, extensions, EvalPolicy(greedy, expert=config.expert))
    return loop.on_policy(init, update, config.n_steps, act)


def mixture_pipeline(
    config: DAggerConfig, env_args: EnvironmentConfig, learner_action: Callable[[Any, jax.Array], jax.Array]
) -> ActionPipeline:
    """pi_i = beta_i pi* + (1 - beta_i) pi_hat_i, chosen per step and per copy, i = n_updates + 1.

    The extras carry the expert's label of every observation, also where the learner
    acted: D's labels are always the expert's.
    """

    def act(state: DAggerState, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, ExpertLabel]:
        label = expert_label(config.expert(obs), env_args.continuous)
        beta = mixing_coefficient(state.n_updates + 1, config.beta_decay)
        use_expert = expert_acts(key, beta, env_args.n_envs)
        action = mixture_action(use_expert, label, learner_action(state.actor_state.params, obs))
        return action, ExpertLabel(label, use_expert)

    return act


def flatten_steps(x: jax.Array) -> jax.Array:
    """(n_steps, n_envs, ...) -> (n_steps * n_envs, ...): a rollout as rows of D."""
    return x.reshape(-1, *x.shape[2:])
