"""The evaluation episodes: `num_episode_test` episodes with the deterministic action
(or, where a policy carries a key, as TD-MPC2's planner and DreamerV3's `sampled_evaluation`
do, actions drawn from it: reproducible, since the key starts from the seed's evaluation key).

Episodes run side by side for the env's maximum episode length; each stops counting at
its first end, and the env is not reset after it (`step_envs(..., reset=False)`): an ended
episode steps on unread, and the program holds no reset in its loop, which on Brax and
Playground (a reset is a full physics pass) made the evaluation's first call a third
quicker (brax's ant, 2 CPU cores: 12.8 to 8.3 s). Besides the return and length, the
evaluation reports the policy's entropy and, for agents with a critic, the value bias: the
critic's estimate at each evaluated step minus the discounted return realised from that
step, in the critic's units.

Most policies are stateless. One that carries something through its episodes (UDRL's
command: the return still to collect and the steps left; a recurrent agent's memory; the
key of a policy that samples) hands a `PolicyCarry`: the carry starts from the state, the
policy returns it after reading each observation, and it advances with every reward; a
stateless policy's carry is empty, so its program is unchanged. Each evaluation env plays
one episode, so a carry never needs a reset here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from flax import serialization

from ajax.environments.interaction import reset_envs, step_envs
from ajax.environments.obs_norm import normalize_observation
from ajax.environments.utils import ExpertInAgentUnits
from ajax.networks.actor_critic import chosen_q
from ajax.state import BaseAgentState, EnvironmentConfig

# (state, observations) -> (deterministic actions, the policy's entropy at each observation)
GreedyPolicy = Callable[[BaseAgentState, jax.Array], tuple[jax.Array, jax.Array]]
# The same for a policy with a carry: (state, observations, carry) -> (actions, entropies, the carry after)
CarriedGreedyPolicy = Callable[[BaseAgentState, jax.Array, Any], tuple[jax.Array, jax.Array, Any]]
# (state, observations, actions) -> the critic's estimate of the return from there; with a
# carry, (state, observations, actions, the carry after the observations)
ValueEstimate = Callable[..., jax.Array]
# (state, observations, the agent's actions) -> the actions the env executes
ExecutedAction = Callable[[BaseAgentState, jax.Array, jax.Array], jax.Array]


@dataclass(frozen=True)
class PolicyCarry:
    """What a policy carries through its evaluation episodes, such as UDRL's command.

    `init(state, n)` is the carry of `n` episodes at their start; `advance(carry, rewards)`
    the carry after a step that paid `rewards`.
    """

    init: Callable[[BaseAgentState, int], Any]
    advance: Callable[[Any, jax.Array], Any]


@dataclass(frozen=True)
class EvalPolicy:
    """What an agent hands the loop so it can be evaluated.

    With a `carry`, `greedy` is a `CarriedGreedyPolicy` and reads the carry at every step.
    """

    greedy: GreedyPolicy | CarriedGreedyPolicy
    value: ValueEstimate | None = None
    gamma: float = 0.99
    carry: PolicyCarry | None = None
    expert: ExpertInAgentUnits | None = None  # given expert_policy=: its own episodes, for comparison
    # What the env executes for the greedy action, when part of the controller is not the
    # agent's (a residual policy's base controller); the value is still read at the agent's own.
    execute: ExecutedAction | None = None
    # Metrics derived from the others, added to them: APG's M-RMSE from the return per step.
    report: Callable[[dict[str, jax.Array]], dict[str, jax.Array]] | None = None

    def start(self, state: BaseAgentState, n: int) -> Any:
        """The carry of `n` episodes at their start: empty for a stateless policy."""
        return self.carry.init(state, n) if self.carry is not None else ()

    def act(self, state: BaseAgentState, obs: jax.Array, carry: Any) -> tuple[jax.Array, jax.Array, Any]:
        """The evaluation's actions, their entropies and the carry after reading `obs`."""
        if self.carry is not None:
            return self.greedy(state, obs, carry)
        return (*self.greedy(state, obs), carry)

    def estimate(self, state: BaseAgentState, obs: jax.Array, action: jax.Array, carry: Any) -> jax.Array:
        """The critic's estimate, read with the carry after `obs` when there is one."""
        return self.value(state, obs, action, carry) if self.carry is not None else self.value(state, obs, action)

    def advance(self, carry: Any, reward: jax.Array) -> Any:
        """The carry after a step that paid `reward`."""
        return self.carry.advance(carry, reward) if self.carry is not None else carry


def greedy_q_evaluation(q_values: Callable[[BaseAgentState, jax.Array], jax.Array], gamma: float) -> EvalPolicy:
    """Evaluation of a Q-learning agent (DQN, PQN): act greedily, value the taken action."""

    def greedy(state: BaseAgentState, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        q = q_values(state, obs)
        return jnp.argmax(q, axis=-1), jnp.zeros(q.shape[0])

    def value(state: BaseAgentState, obs: jax.Array, action: jax.Array) -> jax.Array:
        return chosen_q(q_values(state, obs), action)

    return EvalPolicy(greedy, value, gamma)


def evaluate(
    state: BaseAgentState,
    key: jax.Array,
    env_args: EnvironmentConfig,
    policy: EvalPolicy,
    num_episodes: int,
) -> dict[str, jax.Array]:
    eval_env = dataclasses.replace(env_args, n_envs=num_episodes)
    reset_key, run_key = jax.random.split(key)
    obs, env_state = reset_envs(reset_key, eval_env)
    normalization = env_args.normalization
    normalizer = state.collector_state.normalizer if normalization.observations else None
    obs = normalize_observation(normalizer, obs, normalization)

    def step(carry, key):
        obs, env_state, alive, policy_carry = carry
        action, entropy, policy_carry = policy.act(state, obs, policy_carry)
        value = (
            policy.estimate(state, obs, action, policy_carry) if policy.value is not None else jnp.zeros(num_episodes)
        )
        executed = policy.execute(state, obs, action) if policy.execute is not None else action
        obs, env_state, reward, terminated, truncated, _ = step_envs(key, env_state, executed, eval_env, reset=False)
        obs = normalize_observation(normalizer, obs, normalization)
        done = terminated | truncated
        record = (reward, done, alive, entropy, value)
        return (obs, env_state, alive & ~done, policy.advance(policy_carry, reward)), record

    keys = jax.random.split(run_key, env_args.max_episode_steps)
    alive = jnp.ones(num_episodes, bool)
    start = (obs, env_state, alive, policy.start(state, num_episodes))
    _, (reward, done, alive, entropy, value) = jax.lax.scan(step, start, keys)
    # An episode's steps after its end (the env steps on, unreset) are left out with `where`,
    # not multiplied by zero: they may hold anything, a NaN from a diverged simulation too.
    live = alive.astype(jnp.float32)
    reward = jnp.where(alive, reward, 0.0)
    metrics = {
        "Eval/episodic mean reward": jnp.mean(jnp.sum(reward, axis=0)),
        "Eval/mean episodic length": jnp.mean(jnp.sum(live, axis=0)),
        "Eval/episodic entropy": jnp.sum(jnp.where(alive, entropy, 0.0)) / jnp.sum(live),
    }
    if policy.value is not None:
        realised = discounted_returns(reward, done, policy.gamma)
        metrics["Eval/mean bias"] = jnp.sum(jnp.where(alive, value - realised, 0.0)) / jnp.sum(live)
    else:
        metrics["Eval/mean bias"] = jnp.array(jnp.nan, jnp.float32)
    if policy.expert is not None:
        expert_return = expert_episodes(key, eval_env, policy.expert)
        metrics["Eval/episodic mean expert reward"] = expert_return
        metrics["Eval/expert bias"] = metrics["Eval/episodic mean reward"] - expert_return
    return policy.report(metrics) if policy.report is not None else metrics


def expert_episodes(key: jax.Array, eval_env: EnvironmentConfig, expert: ExpertInAgentUnits) -> jax.Array:
    """The expert's mean return over the same episodes (same key: same initial states and noise).

    The expert reads the env's raw observations, whatever the agent's normalisation, and a
    stateful expert carries its state through each episode.
    """
    reset_key, run_key = jax.random.split(key)
    obs, env_state = reset_envs(reset_key, eval_env)

    def step(carry, key):
        obs, env_state, alive, expert_state = carry
        action, expert_state = expert.act(obs, expert_state)
        obs, env_state, reward, terminated, truncated, _ = step_envs(key, env_state, action, eval_env, reset=False)
        return (obs, env_state, alive & ~(terminated | truncated), expert_state), jnp.where(alive, reward, 0.0)

    start = (obs, env_state, jnp.ones(eval_env.n_envs, bool), expert.init_state(eval_env.n_envs))
    _, rewards = jax.lax.scan(step, start, jax.random.split(run_key, eval_env.max_episode_steps))
    return jnp.mean(jnp.sum(rewards, axis=0))


def discounted_returns(reward: jax.Array, done: jax.Array, gamma: float) -> jax.Array:
    """G_t = r_t + gamma * G_{t+1}, restarted at every episode end (time axis first)."""

    def backwards(future: jax.Array, step: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        reward, done = step
        ret = reward + gamma * future * (1.0 - done)
        return ret, ret

    _, returns = jax.lax.scan(backwards, jnp.zeros_like(reward[0]), (reward, done.astype(jnp.float32)), reverse=True)
    return returns


def flatten_metrics(aux: Any) -> dict[str, jax.Array]:
    """An update's metrics, nested one level, as "group/name" (TD3's value/critic_loss); a metric
    left None (a loss this configuration does not have) is not logged."""
    flat: dict[str, jax.Array] = {}
    tree = serialization.to_state_dict(aux) if aux is not None else {}
    for group, values in (tree or {}).items():
        if isinstance(values, dict):
            for name, value in values.items():
                if value is not None:
                    flat[name if group == "extensions" else f"{group}/{name}"] = value
        else:
            flat[group] = values
    return flat
