"""OnlineCloning (ajax.extensions.online_cloning; Nair et al. 2018's Q-filter): the maths by hand,
the fold on a real SAC state against its own critic, bad input.

Its short training run is IBRLTargets' in tests/extensions/test_ibrl.py, which carries both
guidance losses: one program instead of two.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import SAC
from ajax.agents.loop import RunSettings
from ajax.environments.create import prepare_env
from ajax.extensions.online_cloning import OnlineCloning, q_filtered_cloning_loss
from ajax.logging.wandb_logging import LoggingConfig
from ajax.state import SEED_AXIS
from tests.conftest import CountingExpert, first_seed, pd_expert, swing_up_expert

TINY = ("16", "relu")
WEIGHT = 2.5


def fresh_state(agent):
    """Seed 0's fresh state: the program a run starts with (shared with that run), no run compiled."""
    one_seed = agent.get_make_train()(run=RunSettings(0, 0, 0))
    return first_seed(jax.jit(jax.vmap(one_seed.fresh_state, axis_name=SEED_AXIS))(jax.random.PRNGKey(0)[None]))


def test_q_filtered_cloning_loss_by_hand():
    action = jnp.array([[0.5, -0.5], [0.0, 0.0], [1.0, 1.0]])
    expert = jnp.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])  # squared distances 0.5, 1, 1
    # Only the first row kept (a tie is not).
    q_expert, q_policy = jnp.array([2.0, 1.0, 0.0]), jnp.array([1.0, 3.0, 0.0])
    loss, accepted = q_filtered_cloning_loss(action, expert, q_expert, q_policy, q_filter=True)
    assert (float(loss), float(accepted)) == pytest.approx((0.5 / 3, 1 / 3))
    loss, accepted = q_filtered_cloning_loss(action, expert, q_expert, q_policy, q_filter=False)
    assert (float(loss), float(accepted)) == pytest.approx((2.5 / 3, 1.0))


def min_q(critic, params, obs, action):
    return jnp.min(critic.apply_fn(params, obs, action), axis=0)


def test_online_cloning_fold_matches_the_filter_by_hand():
    # The settings of test_ibrl.py's SAC: the same fresh-state program, compiled once.
    agent = SAC(
        "Pendulum-v1",
        gamma=0.9,
        learn_alpha=False,
        learning_starts=100,
        batch_size=16,
        buffer_size=1000,
        actor_architecture=TINY,
        critic_architecture=TINY,
        extensions=(OnlineCloning(pd_expert, weight=WEIGHT),),
    )
    state = fresh_state(agent)
    theta, speed = jax.random.uniform(jax.random.PRNGKey(3), (2, 64), minval=-3.0, maxval=3.0)
    obs = jnp.stack([jnp.cos(theta), jnp.sin(theta), speed], axis=-1)
    unfiltered = OnlineCloning(pd_expert, q_filter=False).bind(agent.env_args)

    @jax.jit  # one program rather than an op-by-op compile of each step
    def measure(state, obs):
        batch = type("Batch", (), {"obs": obs})()
        params, critic = state.actor_state.params, state.critic_state
        expert = pd_expert(obs) / 2.0  # Pendulum's box is [-2, 2]

        def by_hand(params):
            action = state.actor_state.apply_fn(params, obs).mode()
            keep = min_q(critic, critic.params, obs, expert) > min_q(critic, critic.params, obs, action)
            return jnp.mean(keep * jnp.sum(jnp.square(action - expert), axis=-1)), jnp.mean(keep)

        loss, accepted = by_hand(params)
        extra, metrics = agent.extensions.fold_actor_loss(state, batch, params)
        # Without the filter: ImitationLoss's plain cloning term, every state kept.
        plain, plain_metrics = unfiltered.actor_loss(None, state, (), batch, params)
        action = state.actor_state.apply_fn(params, obs).mode()
        return {
            "loss": loss,
            "accepted": accepted,
            "extra": extra,
            "metrics": metrics,
            "grads": jax.grad(lambda p: agent.extensions.fold_actor_loss(state, batch, p)[0])(params),
            "expected": jax.grad(lambda p: WEIGHT * by_hand(p)[0])(params),
            "plain": plain,
            "plain_metrics": plain_metrics,
            "plain_by_hand": jnp.mean(jnp.sum(jnp.square(action - expert), axis=-1)),
        }

    got = measure(state, obs)
    loss, accepted = float(got["loss"]), float(got["accepted"])
    assert 0.0 < accepted < 1.0  # the untrained critic prefers the expert on some states only
    assert float(got["extra"]) == pytest.approx(WEIGHT * loss, rel=1e-5)
    assert float(got["metrics"]["online_cloning/loss"]) == pytest.approx(loss, rel=1e-5)
    assert float(got["metrics"]["online_cloning/accepted"]) == pytest.approx(accepted)
    # The filter passes no gradient: the actor is only pulled towards the expert on the kept states.
    jax.tree.map(lambda g, e: np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-7), got["grads"], got["expected"])
    assert float(got["plain"]) == pytest.approx(float(got["plain_by_hand"]), rel=1e-5)
    assert float(got["plain_metrics"]["online_cloning/accepted"]) == 1.0


def test_online_cloning_refuses_what_it_cannot_serve():
    with pytest.raises(TypeError, match="OnlineCloning calls its expert.*stateful"):
        SAC("Pendulum-v1", extensions=(OnlineCloning(CountingExpert()),))
    with pytest.raises(ValueError, match="OnlineCloning clones continuous actions"):
        OnlineCloning(pd_expert).bind(prepare_env("CartPole-v1"))
    with pytest.raises(ValueError, match=r"OnlineCloning\'s weight must lie in \[0, inf\)"):
        OnlineCloning(pd_expert, weight=-0.1)
    with pytest.raises(TypeError, match="OnlineCloning needs an expert"):
        OnlineCloning()


@pytest.mark.slow
def test_online_cloning_beats_plain_sac_at_a_small_budget():
    """Pendulum-v1, 2 envs, seeds 0-2, 8,000 steps, the swing-up expert. Calibration: docs/agents/sac.md."""

    def final(*extensions):
        agent = SAC("Pendulum-v1", n_envs=2, learning_starts=500, extensions=extensions)
        logging = LoggingConfig(log_frequency=8_000 // 4)
        _, evaluations = agent.train(seed=[0, 1, 2], n_timesteps=8_000, logging_config=logging)
        return np.asarray(evaluations["Eval/episodic mean reward"])[:, -1]

    plain, cloned = final(), final(OnlineCloning(swing_up_expert))
    assert cloned.mean() > plain.mean() + 100 and cloned.min() > -250, (cloned, plain)
