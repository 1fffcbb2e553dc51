"""ImitationLoss on the on-policy agents: PPO's and APO's clipped epochs and UDRL's updates fold its actor_loss.

The term is weight * E||mu(s) - a_expert(s)||^2 on each minibatch's observations, mu the
Gaussian's mode, in agent units: Pendulum's torque box is [-2, 2], so the expert's torque
counts halved. Checked: the fold's value by hand on a PPO state, that its gradient reaches
PPO's actor (the logged imitation loss falls and the actor ends nearer the expert than the
same run without it), and that APO logs it.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import APO, PPO
from ajax.extensions.expert import ImitationLoss
from ajax.logging.wandb_logging import LoggingConfig

TINY = ("16", "relu")
HALF_WIDTH = 2.0  # Pendulum's torque box [-2, 2]: agent units are env units / 2
BUDGET, LOG_EVERY = 4096, 512


def smooth_expert(obs: jax.Array) -> jax.Array:
    """A torque in env units, smooth in the observation, so a 16-unit actor can clone it closely."""
    return jnp.clip(-(1.0 * obs[..., 1] + 0.3 * obs[..., 2]), -2.0, 2.0)[..., None]


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


def held_out_observations(n: int = 256) -> jax.Array:
    """Pendulum observations (cos theta, sin theta, theta_dot) no rollout was drawn from."""
    angle_key, speed_key = jax.random.split(jax.random.PRNGKey(123))
    theta = jax.random.uniform(angle_key, (n,), minval=-jnp.pi, maxval=jnp.pi)
    speed = jax.random.uniform(speed_key, (n,), minval=-4.0, maxval=4.0)
    return jnp.stack([jnp.cos(theta), jnp.sin(theta), speed], axis=-1)


def distance_to_expert(state, obs: jax.Array) -> float:
    """E||mu(s) - a_expert(s) / 2||^2 of seed 0's actor, in agent units."""
    actor = jax.tree.map(lambda x: x[0], state.actor_state)
    mode = actor.apply_fn(actor.params, obs).mode()
    return float(jnp.mean(jnp.sum(jnp.square(mode - smooth_expert(obs) / HALF_WIDTH), axis=-1)))


def test_the_fold_is_the_weighted_distance_between_the_actors_mode_and_the_expert():
    agent = small_ppo((ImitationLoss(smooth_expert, weight=2.5),))
    fresh = jax.tree.map(lambda x: x[0], agent.train(seed=[0], n_timesteps=0)[0])
    # Shifted so the mode lies away from the fresh head's near-zero output.
    params = jax.tree.map(lambda p: p + 0.3, fresh.actor_state.params)
    obs = jnp.array([[1.0, 0.0, 0.3], [0.0, 1.0, -2.0], [-1.0, 0.0, 1.0], [0.6, -0.8, 4.0]])
    batch = type("Batch", (), {"obs": obs})()
    extra, metrics = agent.extensions.fold_actor_loss(fresh, batch, params)
    mode = fresh.actor_state.apply_fn(params, obs).mode()
    by_hand = jnp.mean(jnp.sum(jnp.square(mode - smooth_expert(obs) / HALF_WIDTH), axis=-1))
    assert float(by_hand) > 0.1
    assert float(extra) == pytest.approx(2.5 * float(by_hand), rel=1e-5)
    assert float(metrics["imitation/loss"]) == pytest.approx(float(by_hand), rel=1e-5)


@pytest.fixture(scope="module")
def imitating():
    agent = small_ppo((ImitationLoss(smooth_expert, weight=10.0),))
    return agent.train(
        seed=[0], n_timesteps=BUDGET, num_episode_test=2, logging_config=LoggingConfig(log_frequency=LOG_EVERY)
    )


@pytest.fixture(scope="module")
def plain():
    return small_ppo().train(seed=[0], n_timesteps=BUDGET)[0]


def test_ppo_logs_the_imitation_loss_and_it_falls(imitating):
    _, evaluations = imitating
    loss = np.asarray(evaluations["imitation/loss"][0])
    assert loss.shape == (BUDGET // LOG_EVERY,) and np.all(np.isfinite(loss))
    assert loss[-1] < 0.3 * loss[0], loss


def test_the_fold_pulls_ppos_actor_towards_the_expert(imitating, plain):
    state, _ = imitating
    obs = held_out_observations()
    with_imitation, without = distance_to_expert(state, obs), distance_to_expert(plain, obs)
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
    from ajax import UDRL

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
