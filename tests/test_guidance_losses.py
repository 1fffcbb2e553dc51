"""OnlineCloning (Nair et al. 2018's Q-filter) and IBRLTargets (Hu et al. 2023): the maths by hand, the
folds on a real SAC state against its own critic, IBRL's action choice, a short run, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import DQN, SAC
from ajax.environments.create import prepare_env
from ajax.environments.interaction import Transition
from ajax.extensions.ibrl import IBRLTargets, actor_proposal, bootstrap_proposal, expert_bootstrap
from ajax.extensions.online_cloning import OnlineCloning, q_filtered_cloning_loss
from ajax.logging.wandb_logging import LoggingConfig
from tests.test_experts import CountingExpert, pd_expert

TINY = ("16", "relu")
GAMMA = 0.9  # not SAC's default: IBRLTargets must bootstrap with the agent's own discount
WEIGHT = 2.5


def test_q_filtered_cloning_loss_by_hand():
    action = jnp.array([[0.5, -0.5], [0.0, 0.0], [1.0, 1.0]])
    expert = jnp.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])  # squared distances 0.5, 1, 1
    q_expert, q_policy = (
        jnp.array([2.0, 1.0, 0.0]),
        jnp.array([1.0, 3.0, 0.0]),
    )  # only the first row kept (a tie is not)
    loss, accepted = q_filtered_cloning_loss(action, expert, q_expert, q_policy, q_filter=True)
    assert (float(loss), float(accepted)) == pytest.approx((0.5 / 3, 1 / 3))
    loss, accepted = q_filtered_cloning_loss(action, expert, q_expert, q_policy, q_filter=False)
    assert (float(loss), float(accepted)) == pytest.approx((2.5 / 3, 1.0))


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
    """A tiny SAC with both extensions (IBRL without its action phase, which SAC does not fold yet):
    its fresh state, with target critics moved off the online ones so the two cannot be confused."""
    agent = SAC(
        "Pendulum-v1",
        gamma=GAMMA,
        learning_starts=64,
        batch_size=16,
        buffer_size=512,
        actor_architecture=TINY,
        critic_architecture=TINY,
        extensions=(OnlineCloning(pd_expert, weight=WEIGHT), IBRLTargets(pd_expert, act=False)),
    )
    state = jax.tree.map(lambda x: x[0], agent.train(seed=[0], n_timesteps=0)[0])
    critic = state.critic_state
    moved = jax.tree.map(lambda p: 1.5 * p + 0.1, critic.target_params)
    return agent, state.replace(critic_state=critic.replace(target_params=moved))


def pendulum_obs(key, n):
    theta, speed = jax.random.uniform(key, (2, n), minval=-3.0, maxval=3.0)
    return jnp.stack([jnp.cos(theta), jnp.sin(theta), speed], axis=-1)


def batch_of(n):
    obs_key, next_key, reward_key = jax.random.split(jax.random.PRNGKey(3), 3)
    return Transition(
        obs=pendulum_obs(obs_key, n),
        action=jnp.zeros((n, 1)),
        reward=jax.random.normal(reward_key, (n,)),
        next_obs=pendulum_obs(next_key, n),
        terminated=jnp.arange(n) % 4 == 1,
        truncated=jnp.arange(n) % 4 == 2,
    )


def min_q(critic, params, obs, action):
    return jnp.min(critic.apply_fn(params, obs, action), axis=0)


def test_online_cloning_fold_matches_the_filter_by_hand(sac):
    agent, state = sac
    batch, params = batch_of(64), state.actor_state.params
    critic, expert = state.critic_state, pd_expert(batch.obs) / 2.0  # Pendulum's box is [-2, 2]

    def by_hand(params):
        action = state.actor_state.apply_fn(params, batch.obs).mode()
        keep = min_q(critic, critic.params, batch.obs, expert) > min_q(critic, critic.params, batch.obs, action)
        return jnp.mean(keep * jnp.sum(jnp.square(action - expert), axis=-1)), jnp.mean(keep)

    loss, accepted = by_hand(params)
    assert 0.0 < float(accepted) < 1.0  # the untrained critic prefers the expert on some states only
    extra, metrics = agent.extensions.fold_actor_loss(state, batch, params)
    assert float(extra) == pytest.approx(WEIGHT * float(loss), rel=1e-5)
    assert float(metrics["online_cloning/loss"]) == pytest.approx(float(loss), rel=1e-5)
    assert float(metrics["online_cloning/accepted"]) == pytest.approx(float(accepted))
    # The filter passes no gradient: the actor is only pulled towards the expert on the kept states.
    grads = jax.grad(lambda p: agent.extensions.fold_actor_loss(state, batch, p)[0])(params)
    expected = jax.grad(lambda p: WEIGHT * by_hand(p)[0])(params)
    jax.tree.map(lambda g, e: np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-7), grads, expected)
    # Without the filter: ImitationLoss's plain cloning term, every state kept.
    unfiltered = OnlineCloning(pd_expert, q_filter=False).bind(agent.env_args)
    plain, metrics = unfiltered.actor_loss(None, state, (), batch, params)
    action = state.actor_state.apply_fn(params, batch.obs).mode()
    assert float(plain) == pytest.approx(float(jnp.mean(jnp.sum(jnp.square(action - expert), axis=-1))), rel=1e-5)
    assert float(metrics["online_cloning/accepted"]) == 1.0


def test_ibrl_target_fold_matches_the_expert_bootstrap_by_hand(sac):
    agent, state = sac
    assert agent.agent_config.gamma == GAMMA
    batch, critic = batch_of(8), state.critic_state
    next_q = min_q(critic, critic.target_params, batch.next_obs, pd_expert(batch.next_obs) / 2.0)
    # Rows 1 and 5 terminal (no bootstrap), rows 2 and 6 at a time limit (bootstrap from next_obs).
    by_hand = batch.reward + GAMMA * jnp.where(batch.terminated, 0.0, next_q)
    # Far below: the expert's bootstrap wins everywhere and shows itself on every row.
    target, metrics = agent.extensions.fold_on_target(state, batch, by_hand - 100.0)
    np.testing.assert_allclose(target, by_hand, rtol=1e-5, atol=1e-5)
    assert float(metrics["ibrl/expert_share"]) == 1.0
    offsets = jnp.array([1.0, -1.0, -1.0, 1.0, 1.0, 1.0, -1.0, 1.0])
    target, metrics = agent.extensions.fold_on_target(state, batch, by_hand + offsets)
    np.testing.assert_allclose(target, jnp.maximum(by_hand, by_hand + offsets), rtol=1e-5, atol=1e-5)
    assert float(metrics["ibrl/expert_share"]) == pytest.approx(3 / 8)


def test_ibrl_acts_with_the_proposal_the_critic_prefers(sac):
    agent, state = sac
    acting = IBRLTargets(pd_expert).bind(agent.env_args)
    assert acting.phases == {"on_target", "action"}
    assert IBRLTargets(pd_expert, act=False).phases == {"on_target"}  # what lets SAC take it today
    obs_key, action_key = jax.random.split(jax.random.PRNGKey(5))
    obs = pendulum_obs(obs_key, 64)
    action = jax.random.uniform(action_key, (64, 1), minval=-1.0, maxval=1.0)
    expert, critic = pd_expert(obs) / 2.0, state.critic_state
    expert_better = min_q(critic, critic.params, obs, expert) > min_q(critic, critic.params, obs, action)
    assert 0 < int(expert_better.sum()) < 64  # both choices occur
    executed = acting.action(None, state, (), obs, action)
    np.testing.assert_allclose(executed, jnp.where(expert_better[:, None], expert, action), rtol=1e-6)


def test_both_extensions_train_and_log_finite_metrics(sac):
    agent, _ = sac
    _, evaluations = agent.train(seed=[0], n_timesteps=300, logging_config=LoggingConfig(log_frequency=150))
    for key in ("online_cloning/loss", "online_cloning/accepted", "ibrl/expert_share"):
        values = np.asarray(evaluations[key])
        assert values.shape[-1] == 2 and np.all(np.isfinite(values)), (key, values)
    assert np.all((0.0 <= evaluations["ibrl/expert_share"]) & (evaluations["ibrl/expert_share"] <= 1.0))


def test_guidance_extensions_refuse_what_they_cannot_serve():
    for extension in (OnlineCloning(CountingExpert()), IBRLTargets(CountingExpert(), act=False)):
        with pytest.raises(TypeError, match=f"{extension.name} calls its expert.*stateful"):
            SAC("Pendulum-v1", extensions=(extension,))
    with pytest.raises(ValueError, match="IBRLTargets clones continuous actions; CartPole-v1 is discrete"):
        DQN("CartPole-v1", extensions=(IBRLTargets(lambda obs: jnp.zeros(obs.shape[0], jnp.int32), act=False),))
    with pytest.raises(ValueError, match="OnlineCloning clones continuous actions"):
        OnlineCloning(pd_expert).bind(prepare_env("CartPole-v1"))
    with pytest.raises(ValueError, match="weight must be >= 0"):
        OnlineCloning(pd_expert, weight=-0.1)
    with pytest.raises(TypeError, match="OnlineCloning needs an expert"):
        OnlineCloning()
    with pytest.raises(TypeError, match="IBRLTargets needs an expert"):
        IBRLTargets(act=False)
