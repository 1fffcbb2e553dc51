"""IBRLTargets (ajax.extensions.ibrl; Hu et al. 2023): the maths by hand, the on_target fold on a
real SAC state against its own critic, the action the critic prefers, a short run, bad input.

The short run also carries OnlineCloning and ExpertValueMetrics (ajax.extensions.expert), and
their run checks are here too: one SAC program serves the three extensions, where a run of
their own in tests/extensions/test_online_cloning.py and test_expert.py would compile two more.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import DQN, SAC, TD3
from ajax.agents.loop import RunSettings
from ajax.environments.interaction import Transition
from ajax.extensions.expert import ExpertValueMetrics
from ajax.extensions.ibrl import IBRLTargets, actor_proposal, bootstrap_proposal, expert_bootstrap
from ajax.extensions.online_cloning import OnlineCloning
from ajax.logging.wandb_logging import LoggingConfig
from ajax.state import SEED_AXIS
from tests.conftest import CountingExpert, first_seed, pd_expert

TINY = ("16", "relu")
GAMMA = 0.9  # not SAC's default: IBRLTargets must bootstrap with the agent's own discount
STEPS = 300


def fresh_state(agent):
    """Seed 0's fresh state: the program a run starts with (shared with that run), no run compiled."""
    one_seed = agent.get_make_train()(run=RunSettings(0, 0, 0))
    return first_seed(jax.jit(jax.vmap(one_seed.fresh_state, axis_name=SEED_AXIS))(jax.random.PRNGKey(0)[None]))


def test_ibrl_maths_by_hand():
    # Rows: bootstraps, terminal (stops), and a time limit, which bootstraps from next_obs like the first.
    reward, terminated = jnp.array([1.0, 1.0, 1.0]), jnp.array([False, True, False])
    expert_target = expert_bootstrap(reward, terminated, jnp.array([10.0, 10.0, 10.0]), gamma=0.9)
    np.testing.assert_allclose(expert_target, [10.0, 1.0, 10.0])
    target, expert_won = bootstrap_proposal(jnp.array([5.0, 5.0, 10.0]), expert_target)
    np.testing.assert_allclose(target, [10.0, 5.0, 10.0])
    np.testing.assert_array_equal(expert_won, [True, False, False])  # a tie keeps the agent's target
    chosen = actor_proposal(
        jnp.array([[0.1], [0.2], [0.3]]),
        jnp.array([[0.9], [0.8], [0.7]]),
        jnp.array([1.0, 2.0, 1.0]),
        jnp.array([2.0, 1.0, 1.0]),
    )
    np.testing.assert_allclose(chosen, [[0.9], [0.2], [0.3]])


@pytest.fixture(scope="module")
def sac():
    """A tiny SAC (a fixed temperature) acting through IBRL, beside OnlineCloning and
    ExpertValueMetrics: its fresh state, with target critics moved off the online ones so the two
    cannot be confused."""
    agent = SAC(
        "Pendulum-v1",
        gamma=GAMMA,
        learn_alpha=False,
        learning_starts=100,
        batch_size=16,
        buffer_size=1000,
        actor_architecture=TINY,
        critic_architecture=TINY,
        extensions=(OnlineCloning(pd_expert, weight=2.5), IBRLTargets(pd_expert), ExpertValueMetrics(pd_expert)),
    )
    state = fresh_state(agent)
    critic = state.critic_state
    moved = jax.tree.map(lambda p: 1.5 * p + 0.1, critic.target_params)
    return agent, state.replace(critic_state=critic.replace(target_params=moved))


def pendulum_obs(key, n):
    theta, speed = jax.random.uniform(key, (2, n), minval=-3.0, maxval=3.0)
    return jnp.stack([jnp.cos(theta), jnp.sin(theta), speed], axis=-1)


def min_q(critic, params, obs, action):
    return jnp.min(critic.apply_fn(params, obs, action), axis=0)


def test_ibrl_target_fold_matches_the_expert_bootstrap_by_hand(sac):
    agent, state = sac
    assert agent.agent_config.gamma == GAMMA
    obs_key, next_key, reward_key = jax.random.split(jax.random.PRNGKey(3), 3)
    n = 8
    batch = Transition(
        obs=pendulum_obs(obs_key, n),
        action=jnp.zeros((n, 1)),
        reward=jax.random.normal(reward_key, (n,)),
        next_obs=pendulum_obs(next_key, n),
        terminated=jnp.arange(n) % 4 == 1,
        truncated=jnp.arange(n) % 4 == 2,
    )
    offsets = jnp.array([1.0, -1.0, -1.0, 1.0, 1.0, 1.0, -1.0, 1.0])

    @jax.jit  # one program rather than an op-by-op compile of each step
    def measure(state, batch):
        critic = state.critic_state
        next_q = min_q(critic, critic.target_params, batch.next_obs, pd_expert(batch.next_obs) / 2.0)
        # Rows 1 and 5 terminal (no bootstrap), rows 2 and 6 at a time limit (bootstrap from next_obs).
        by_hand = batch.reward + GAMMA * jnp.where(batch.terminated, 0.0, next_q)
        # Far below: the expert's bootstrap wins everywhere and shows itself on every row.
        below = agent.extensions.fold_on_target(state, batch, by_hand - 100.0)
        return by_hand, below, agent.extensions.fold_on_target(state, batch, by_hand + offsets)

    by_hand, (target, metrics), (mixed, mixed_metrics) = measure(state, batch)
    np.testing.assert_allclose(target, by_hand, rtol=1e-5, atol=1e-5)
    assert float(metrics["ibrl/expert_share"]) == 1.0
    np.testing.assert_allclose(mixed, jnp.maximum(by_hand, by_hand + offsets), rtol=1e-5, atol=1e-5)
    assert float(mixed_metrics["ibrl/expert_share"]) == pytest.approx(3 / 8)


def test_ibrl_acts_with_the_proposal_the_critic_prefers(sac):
    agent, state = sac
    acting = agent.extensions.extensions[1]
    assert acting.phases == {"on_target", "action"}
    assert IBRLTargets(pd_expert, act=False).phases == {"on_target"}  # what an agent without the action phase takes
    obs_key, action_key = jax.random.split(jax.random.PRNGKey(5))
    obs = pendulum_obs(obs_key, 64)
    action = jax.random.uniform(action_key, (64, 1), minval=-1.0, maxval=1.0)

    @jax.jit  # one program rather than an op-by-op compile of each step
    def measure(state, obs, action):
        expert, critic = pd_expert(obs) / 2.0, state.critic_state
        expert_better = min_q(critic, critic.params, obs, expert) > min_q(critic, critic.params, obs, action)
        by_hand = jnp.where(expert_better[:, None], expert, action)
        return expert_better, by_hand, acting.action(None, state, (), obs, action)

    expert_better, by_hand, executed = measure(state, obs, action)
    assert 0 < int(expert_better.sum()) < 64  # both choices occur
    np.testing.assert_allclose(executed, by_hand, rtol=1e-6)


@pytest.fixture(scope="module")
def run(sac):
    agent, _ = sac
    return agent.train(seed=[0], n_timesteps=STEPS, logging_config=LoggingConfig(log_frequency=150))


def test_ibrl_acts_through_sacs_pipeline_and_stores_what_it_executed(run):
    state, _ = run
    data = jax.tree.map(lambda x: np.asarray(x[0, 0, :STEPS]), state.collector_state.buffer_state.experience)
    expert = np.asarray(pd_expert(jnp.asarray(data.obs)))[:, 0] / 2.0
    took_expert = np.isclose(data.action[:, 0], expert, atol=1e-6).mean()
    # The critic picks: some steps go to the expert, some stay with the agent's own draws.
    assert 0.0 < took_expert < 1.0, took_expert


def test_both_guidance_extensions_train_and_log_finite_metrics(run):
    _, evaluations = run
    for key in ("online_cloning/loss", "online_cloning/accepted", "ibrl/expert_share"):
        values = np.asarray(evaluations[key])
        assert values.shape[-1] == 2 and np.all(np.isfinite(values)), (key, values)
    assert np.all((0.0 <= evaluations["ibrl/expert_share"]) & (evaluations["ibrl/expert_share"] <= 1.0))


def test_expert_value_metrics_report_the_critics_view_of_the_expert(run):
    state, evaluations = run

    @jax.jit  # one program rather than an op-by-op compile of each step
    def by_hand(state):
        obs, critic, actor = state.collector_state.last_obs, state.critic_state, state.actor_state
        q_expert = jnp.mean(critic.apply_fn(critic.params, obs, pd_expert(obs) / 2.0))
        return q_expert, jnp.mean(critic.apply_fn(critic.params, obs, actor.apply_fn(actor.params, obs).mode()))

    q_expert, q_policy = by_hand(first_seed(state))
    # The evaluation follows the last update: the state it read is the final one.
    np.testing.assert_allclose(evaluations["expert_value/q_expert"][0, -1], q_expert, rtol=1e-5)
    np.testing.assert_allclose(evaluations["expert_value/q_policy"][0, -1], q_policy, rtol=1e-5)
    np.testing.assert_allclose(evaluations["expert_value/advantage"][0, -1], q_expert - q_policy, rtol=1e-4, atol=1e-6)


def test_ibrl_refuses_what_it_cannot_serve():
    with pytest.raises(TypeError, match="IBRLTargets calls its expert.*stateful"):
        SAC("Pendulum-v1", extensions=(IBRLTargets(CountingExpert(), act=False),))
    with pytest.raises(ValueError, match="IBRLTargets clones continuous actions; CartPole-v1 is discrete"):
        DQN("CartPole-v1", extensions=(IBRLTargets(lambda obs: jnp.zeros(obs.shape[0], jnp.int32), act=False),))
    with pytest.raises(ValueError, match="IBRLTargets implements action, which TD3 never folds"):
        TD3("Pendulum-v1", extensions=(IBRLTargets(pd_expert),))
    TD3("Pendulum-v1", extensions=(IBRLTargets(pd_expert, act=False),))  # the bootstrap alone
    with pytest.raises(TypeError, match="IBRLTargets needs an expert"):
        IBRLTargets(act=False)
