"""CloningPretrain and ImitationLoss: the cloning maths by hand, the folds' effect, bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from ajax import PPO, TD3
from ajax.agents.cloning import cloning_loss, fit
from ajax.buffers.dataset import expert_transitions
from ajax.environments.utils import ExpertInAgentUnits
from ajax.extensions.expert import ImitationLoss
from ajax.extensions.pretrain import CloningPretrain
from ajax.state import LoopTrainState
from tests.test_experts import CountingExpert, pd_expert

TINY = ("16", "relu")


def smooth_expert(obs):
    """A torque smooth in the observation ([-2, 2]), so a small network can clone it closely."""
    return jnp.clip(-(1.0 * obs[..., 1] + 0.3 * obs[..., 2]), -2.0, 2.0)[..., None]


def linear_actor(w: float, learning_rate: float = 0.1) -> LoopTrainState:
    """mu(s) = w * s: a deterministic actor whose cloning loss is a parabola in w."""
    return LoopTrainState.create(
        apply_fn=lambda p, obs: p["w"] * obs, params={"w": jnp.asarray(w)}, tx=optax.sgd(learning_rate)
    )


def test_cloning_loss_is_the_mean_squared_distance_to_the_expert():
    obs = jnp.array([[1.0, 2.0], [-1.0, 0.5]])
    expert = jnp.array([[0.0, 1.0], [1.0, 1.0]])
    # w = 2: actions [[2, 4], [-2, 1]]; squared distances summed per row 4 + 9 = 13 and 9 + 0 = 9.
    assert float(cloning_loss(linear_actor(2.0), {"w": jnp.asarray(2.0)}, obs, expert)) == pytest.approx(11.0)


def test_fit_clones_a_linear_expert():
    obs = jax.random.normal(jax.random.PRNGKey(0), (256, 1))
    fitted, loss = fit(linear_actor(2.0), obs, 0.5 * obs, jax.random.PRNGKey(1), epochs=20, batch_size=64)
    assert float(fitted.params["w"]) == pytest.approx(0.5, abs=1e-3) and float(loss) < 1e-5


@pytest.fixture(scope="module")
def td3_states():
    def fresh(*extensions):
        agent = TD3("Pendulum-v1", actor_architecture=TINY, critic_architecture=TINY, extensions=extensions)
        state, _ = agent.train(seed=[0], n_timesteps=0)  # a fresh run's state: pretrain folded
        return agent, jax.tree.map(lambda x: x[0], state)

    return fresh(), fresh(CloningPretrain(smooth_expert, n_steps=2_000, epochs=30, batch_size=128))


def expert_gap(state, obs):
    """Mean |mu(s) - expert(s)| in agent units."""
    action = state.actor_state.apply_fn(state.actor_state.params, obs)
    return float(jnp.mean(jnp.abs(action - smooth_expert(obs) / 2.0)))


def test_cloning_pretrain_brings_the_actor_to_the_expert(td3_states):
    (agent, plain), (_, cloned) = td3_states
    # Held-out states the expert visits (another key than the pretrain's own rollout).
    expert = ExpertInAgentUnits.for_env(smooth_expert, agent.env_args)
    obs = expert_transitions(jax.random.PRNGKey(7), agent.env_args, expert, 1_000).obs.reshape(-1, 3)
    cloned_gap, plain_gap = expert_gap(cloned, obs), expert_gap(plain, obs)
    assert cloned_gap < 0.25 * plain_gap, (cloned_gap, plain_gap)
    assert np.isfinite(float(cloned.ext_state[0]))  # the last cloning loss, kept for the evaluations


def test_imitation_loss_adds_its_weighted_term_to_the_actor_loss():
    extension = ImitationLoss(pd_expert, weight=2.5)
    agent = TD3("Pendulum-v1", actor_architecture=TINY, critic_architecture=TINY, extensions=(extension,))
    plain = jax.tree.map(lambda x: x[0], agent.train(seed=[0], n_timesteps=0)[0])
    obs = jnp.array([[1.0, 0.0, 0.3], [0.0, 1.0, -2.0], [-1.0, 0.0, 1.0]])
    batch = type("Batch", (), {"obs": obs})()
    params = plain.actor_state.params
    extra, metrics = agent.extensions.fold_actor_loss(plain, batch, params)
    action = plain.actor_state.apply_fn(params, obs)
    by_hand = jnp.mean(jnp.sum(jnp.square(action - pd_expert(obs) / 2.0), axis=-1))
    assert float(extra) == pytest.approx(2.5 * float(by_hand), rel=1e-5)
    assert float(metrics["imitation/loss"]) == pytest.approx(float(by_hand), rel=1e-5)


def test_expert_extensions_refuse_what_they_cannot_serve():
    from ajax import DQN

    with pytest.raises(TypeError, match="ImitationLoss calls its expert.*stateful"):
        TD3("Pendulum-v1", extensions=(ImitationLoss(CountingExpert()),))
    with pytest.raises(ValueError, match="ImitationLoss clones continuous actions; CartPole-v1 is discrete"):
        DQN("CartPole-v1", extensions=(ImitationLoss(lambda obs: jnp.zeros(obs.shape[0], jnp.int32)),))
    with pytest.raises(ValueError, match="CloningPretrain clones continuous actions"):
        PPO("CartPole-v1", extensions=(CloningPretrain(lambda obs: jnp.zeros(obs.shape[0], jnp.int32)),))
    with pytest.raises(TypeError, match="needs an expert"):
        CloningPretrain()
    with pytest.raises(ValueError, match="n_steps, epochs and batch_size"):
        CloningPretrain(pd_expert, n_steps=0)


def test_expert_value_metrics_report_the_critics_view_of_the_expert():
    from ajax import SAC
    from ajax.extensions.expert import ExpertValueMetrics
    from ajax.logging.wandb_logging import LoggingConfig

    agent = SAC(
        "Pendulum-v1",
        n_envs=2,
        learning_starts=64,
        batch_size=16,
        actor_architecture=TINY,
        critic_architecture=TINY,
        extensions=(ExpertValueMetrics(pd_expert),),
    )
    state, evaluations = agent.train(seed=[0], n_timesteps=128, logging_config=LoggingConfig(log_frequency=128))
    one = jax.tree.map(lambda x: x[0], state)
    obs, critic, actor = one.collector_state.last_obs, one.critic_state, one.actor_state
    q_expert = jnp.mean(critic.apply_fn(critic.params, obs, pd_expert(obs) / 2.0))
    q_policy = jnp.mean(critic.apply_fn(critic.params, obs, actor.apply_fn(actor.params, obs).mode()))
    # The evaluation follows the last update: the state it read is the final one.
    np.testing.assert_allclose(evaluations["expert_value/q_expert"][0, -1], q_expert, rtol=1e-5)
    np.testing.assert_allclose(evaluations["expert_value/q_policy"][0, -1], q_policy, rtol=1e-5)
    np.testing.assert_allclose(evaluations["expert_value/advantage"][0, -1], q_expert - q_policy, rtol=1e-4, atol=1e-6)
