"""ImitationLoss (ajax.extensions.expert) on the on-policy agents; the module's bad input.

ImitationLoss adds weight * E||mu(s) - a_expert(s)||^2 to the actor's loss, mu the
actor's deterministic action (a Gaussian's mode), in agent units: Pendulum's torque box is
[-2, 2], so the expert's torque counts halved. Checked: the fold's value by hand on PPO,
that its gradient reaches PPO's actor (the logged loss falls, the actor ends nearer the
expert than the same run without it), that APO and UDRL fold and log it; bad input.

Two checks live beside the programs they share, where a program of their own would take
seconds to compile: ImitationLoss's fold on every replay actor, on CloningPretrain's fresh
states (tests/extensions/test_pretrain.py), and ExpertValueMetrics' Q-values by hand, on
the guidance run (tests/extensions/test_ibrl.py).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import APO, PPO, TD3, UDRL
from ajax.agents.loop import RunSettings
from ajax.extensions.expert import ExpertValueMetrics, ImitationLoss
from ajax.logging.wandb_logging import LoggingConfig
from ajax.state import SEED_AXIS
from tests.conftest import CountingExpert, first_seed, pd_expert, smooth_expert

TINY = ("16", "relu")
HALF_WIDTH = 2.0  # Pendulum's torque box [-2, 2]: agent units are env units / 2


def mode(actor_state, params, obs):
    """The actor's deterministic action: a distribution's mode (SAC's, PPO's), or TD3's output."""
    out = actor_state.apply_fn(params, obs)
    return out.mode() if hasattr(out, "mode") else out


def by_hand(actor_state, params, obs, expert):
    return jnp.mean(jnp.sum(jnp.square(mode(actor_state, params, obs) - expert(obs) / HALF_WIDTH), axis=-1))


def fresh_state(agent):
    """Seed 0's fresh state: the program a run starts with (shared with that run), no run compiled."""
    one_seed = agent.get_make_train()(run=RunSettings(0, 0, 0))
    return first_seed(jax.jit(jax.vmap(one_seed.fresh_state, axis_name=SEED_AXIS))(jax.random.PRNGKey(0)[None]))


# On-policy: PPO's and APO's clipped epochs and UDRL's updates fold actor_loss -----------------

BUDGET, LOG_EVERY = 4096, 512


def small_ppo(extensions: tuple = ()) -> PPO:
    """PPO with a 128-step rollout and tiny networks; the actor's rate raised so a short run moves it."""
    return PPO(
        "Pendulum-v1",
        n_envs=4,
        n_steps=32,
        batch_size=64,
        n_epochs=4,
        actor_learning_rate=3e-3,
        actor_architecture=TINY,
        critic_architecture=TINY,
        extensions=extensions,
    )


@pytest.fixture(scope="module")
def imitating():
    agent = small_ppo((ImitationLoss(smooth_expert, weight=10.0),))
    state, evaluations = agent.train(
        seed=[0], n_timesteps=BUDGET, num_episode_test=2, logging_config=LoggingConfig(log_frequency=LOG_EVERY)
    )
    return agent, state, evaluations


@pytest.fixture(scope="module")
def plain():
    return small_ppo().train(seed=[0], n_timesteps=BUDGET)[0]


def held_out_observations(n: int = 256) -> jax.Array:
    """Pendulum observations (cos theta, sin theta, theta_dot) no rollout was drawn from."""
    angle_key, speed_key = jax.random.split(jax.random.PRNGKey(123))
    theta = jax.random.uniform(angle_key, (n,), minval=-jnp.pi, maxval=jnp.pi)
    speed = jax.random.uniform(speed_key, (n,), minval=-4.0, maxval=4.0)
    return jnp.stack([jnp.cos(theta), jnp.sin(theta), speed], axis=-1)


def test_ppos_fold_is_the_weighted_distance_between_the_actors_mode_and_the_expert(imitating):
    agent, _, _ = imitating
    fresh = fresh_state(agent)
    # Shifted so the mode lies away from the fresh head's near-zero output.
    params = jax.tree.map(lambda p: p + 0.3, fresh.actor_state.params)
    obs = jnp.array([[1.0, 0.0, 0.3], [0.0, 1.0, -2.0], [-1.0, 0.0, 1.0], [0.6, -0.8, 4.0]])

    @jax.jit  # one program rather than an op-by-op compile of each step
    def measure(fresh, params):
        fold = agent.extensions.fold_actor_loss(fresh, type("Batch", (), {"obs": obs})(), params)
        return fold, by_hand(fresh.actor_state, params, obs, smooth_expert)

    (extra, metrics), expected = measure(fresh, params)
    assert float(expected) > 0.1
    assert float(extra) == pytest.approx(10.0 * float(expected), rel=1e-5)
    assert float(metrics["imitation/loss"]) == pytest.approx(float(expected), rel=1e-5)


def test_ppo_logs_the_imitation_loss_and_it_falls(imitating):
    _, _, evaluations = imitating
    loss = np.asarray(evaluations["imitation/loss"][0])
    assert loss.shape == (BUDGET // LOG_EVERY,) and np.all(np.isfinite(loss))
    assert loss[-1] < 0.3 * loss[0], loss


def test_the_fold_pulls_ppos_actor_towards_the_expert(imitating, plain):
    _, state, _ = imitating
    obs = held_out_observations()
    distance = jax.jit(lambda actor: by_hand(actor, actor.params, obs, smooth_expert))  # compiled once for both
    with_imitation, without = (float(distance(first_seed(s.actor_state))) for s in (state, plain))
    assert with_imitation < 0.5 * without, (with_imitation, without)


def test_apo_folds_the_imitation_loss_and_logs_it():
    agent = APO(
        "Pendulum-v1",
        n_envs=2,
        n_steps=32,
        batch_size=32,
        actor_architecture=TINY,
        critic_architecture=TINY,
        extensions=(ImitationLoss(smooth_expert, weight=1.0),),
    )
    _, evaluations = agent.train(
        seed=[0], n_timesteps=256, num_episode_test=2, logging_config=LoggingConfig(log_frequency=128)
    )
    loss = np.asarray(evaluations["imitation/loss"][0])
    assert loss.shape == (2,) and np.all(np.isfinite(loss)) and np.all(loss > 0), loss


def test_udrl_folds_the_imitation_loss_at_the_replayed_commands():
    agent = UDRL(
        "Pendulum-v1",
        n_envs=4,
        n_steps=50,
        n_updates_per_iter=8,
        batch_size=64,
        buffer_size=16,
        top_k=4,
        learning_rate=3e-3,
        architecture=TINY,
        extensions=(ImitationLoss(smooth_expert, weight=10.0),),
    )
    _, evaluations = agent.train(
        seed=[0], n_timesteps=3_200, num_episode_test=2, logging_config=LoggingConfig(log_frequency=800)
    )
    loss = np.asarray(evaluations["imitation/loss"][0])
    # Learning starts once an episode (200 steps) has ended; the term pulls pi(. | s, c) to the expert.
    assert np.all(np.isfinite(loss)) and loss[-1] < 0.3 * loss[0], loss


def test_expert_extensions_refuse_what_they_cannot_serve():
    from ajax import DQN

    with pytest.raises(TypeError, match="ImitationLoss calls its expert.*stateful"):
        TD3("Pendulum-v1", extensions=(ImitationLoss(CountingExpert()),))
    with pytest.raises(ValueError, match="ImitationLoss clones continuous actions; CartPole-v1 is discrete"):
        DQN("CartPole-v1", extensions=(ImitationLoss(lambda obs: jnp.zeros(obs.shape[0], jnp.int32)),))
    with pytest.raises(TypeError, match="ImitationLoss needs an expert"):
        ImitationLoss()
    with pytest.raises(ValueError, match=r"ImitationLoss\'s weight must lie in \[0, inf\)"):
        ImitationLoss(pd_expert, weight=-1.0)
    with pytest.raises(TypeError, match="ExpertValueMetrics needs an expert"):
        ExpertValueMetrics()
