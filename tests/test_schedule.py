"""Schedules: a number or a function of a step count, read with `at` (coefficients) or by optax (learning rates).

Each kind by its values, and against optax's own where optax has one; then as learning
rates: called with the optimiser's update count from 0, and one short PPO run per two
kinds (actor and critic rate, the clip range beside them), two compiled programs in all.
A schedule of the user's is called once at construction on an abstract step count, so one
that takes no step or returns no real scalar is refused there, naming its keyword.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from ajax import DQN, PPO, SAC, TD3
from ajax.networks.optim import make_optimizer
from ajax.schedule import at, constant, exponential, linear, polynomial
from ajax.state import OptimizerConfig
from tests.conftest import first_seed

STEPS = jnp.array([0, 25, 50, 100, 200])


def test_linear_schedule():
    ramp = linear(1.0, 0.0, 100)
    np.testing.assert_allclose([at(ramp, t) for t in (0, 50, 100, 200)], [1.0, 0.5, 0.0, 0.0], atol=1e-6)
    assert float(at(0.3, 7)) == pytest.approx(0.3)
    assert hash(linear(1.0, 0.0, 100)) == hash(ramp)


def test_constant_schedule():
    np.testing.assert_array_equal(at(constant(0.3), STEPS), np.full(5, np.float32(0.3)))
    assert float(at(constant(0.3), 7)) == float(at(0.3, 7))
    assert hash(constant(0.3)) == hash(constant(0.3))


def test_exponential_schedule():
    decay = exponential(1.0, 0.5, 50)  # halved every 50 steps
    np.testing.assert_allclose(at(decay, STEPS), [1.0, 0.5**0.5, 0.5, 0.25, 0.0625], rtol=1e-6)
    reference = optax.exponential_decay(1.0, transition_steps=50, decay_rate=0.5)
    np.testing.assert_allclose(at(decay, STEPS), reference(STEPS), rtol=1e-6)
    assert hash(exponential(1.0, 0.5, 50)) == hash(decay)


def test_polynomial_schedule():
    square = polynomial(1.0, 0.2, 100, power=2.0)
    # 0.2 + 0.8 (1 - t/100)^2: 1, 0.65, 0.4, then 0.2 at the end and after.
    np.testing.assert_allclose(at(square, STEPS), [1.0, 0.65, 0.4, 0.2, 0.2], rtol=1e-6)
    reference = optax.polynomial_schedule(1.0, 0.2, power=2.0, transition_steps=100)
    np.testing.assert_allclose(at(square, STEPS), reference(STEPS), rtol=1e-6)
    np.testing.assert_allclose(at(polynomial(1.0, 0.0, 100), STEPS), at(linear(1.0, 0.0, 100), STEPS), atol=1e-7)
    assert hash(polynomial(1.0, 0.2, 100, 2.0)) == hash(square)


@pytest.mark.parametrize(
    "schedule",
    [constant(1e-2), linear(1e-2, 1e-3, 3), exponential(1e-2, 0.5, 1), polynomial(1e-2, 1e-3, 3, power=2.0)],
    ids=lambda schedule: type(schedule).__name__,
)
def test_a_learning_rate_schedule_reads_the_optimisers_update_count(schedule):
    """Adam's k-th step on a constant gradient moves each parameter by the rate at k, counted from 0."""
    optimizer = make_optimizer(OptimizerConfig(schedule))
    params = {"w": jnp.zeros(3)}
    opt_state = optimizer.init(params)
    for k in range(4):
        updates, opt_state = optimizer.update({"w": jnp.ones(3)}, opt_state, params)
        np.testing.assert_allclose(updates["w"], -at(schedule, k), rtol=1e-4)


def test_a_constant_schedule_steps_as_the_number_does():
    gradients = jax.random.normal(jax.random.PRNGKey(0), (5, 3))
    moves = []
    for rate in (3e-4, constant(3e-4)):
        optimizer = make_optimizer(OptimizerConfig(rate, max_grad_norm=0.5))
        params, opt_state = jnp.ones(3), optimizer.init(jnp.ones(3))
        for gradient in gradients:
            updates, opt_state = optimizer.update(gradient, opt_state, params)
            params = optax.apply_updates(params, updates)
        moves.append(params)
    np.testing.assert_array_equal(*moves)


@pytest.mark.parametrize(
    ("actor_rate", "critic_rate", "clip_range"),
    [
        (constant(3e-3), exponential(3e-3, 0.5, 8), exponential(0.3, 0.5, 64)),
        (polynomial(3e-3, 1e-4, 8, power=2.0), linear(3e-3, 1e-4, 8), polynomial(0.3, 0.1, 64)),
    ],
    ids=["constant-exponential", "polynomial-linear"],
)
def test_ppo_trains_with_each_kind_of_schedule_as_its_learning_rates(actor_rate, critic_rate, clip_range):
    tiny = ("8", "tanh")
    agent = PPO(
        "CartPole-v1",
        n_envs=2,
        n_steps=16,
        batch_size=16,
        n_epochs=2,
        actor_architecture=tiny,
        critic_architecture=tiny,
        actor_learning_rate=actor_rate,
        critic_learning_rate=critic_rate,
        clip_range=clip_range,
    )
    state = first_seed(agent.train(seed=0, n_timesteps=64)[0])
    # Each rollout of 32 transitions: 2 epochs of 2 minibatches, so 4 updates of each network.
    rollouts = int(state.collector_state.timestep) // 32
    for network in (state.actor_state, state.critic_state):
        counts = {int(count) for _, count in optax.tree_utils.tree_get_all_with_path(network.opt_state, "count")}
        assert counts == {4 * rollouts}, counts
        assert all(np.isfinite(leaf).all() for leaf in jax.tree.leaves(network.params))


def test_sacs_temperature_reads_a_schedule_of_its_own_updates():
    """A constant schedule moves log(alpha) as the number does; a decaying one moves it less."""

    def log_alpha(rate):
        agent = SAC(
            "Pendulum-v1",
            n_envs=1,
            actor_architecture=("8", "relu"),
            critic_architecture=("8", "relu"),
            learning_starts=32,
            batch_size=16,
            alpha_learning_rate=rate,
        )
        state = first_seed(agent.train(seed=0, n_timesteps=64)[0])
        return float(state.alpha.params["log_alpha"]), int(state.n_updates)

    (number, updates), (same, _), (decayed, _) = map(log_alpha, (1e-2, constant(1e-2), linear(1e-2, 1e-4, 4)))
    assert updates > 4
    assert same == number
    assert abs(decayed) < abs(number)


# A schedule-taking keyword of each kind: the learning rates optax calls with its update
# count, on an actor-critic, a temperature and a single network; the coefficients `at` calls
# with the env timestep.
SCHEDULED = [
    (PPO, "actor_learning_rate", "the optimiser's step count"),
    (SAC, "alpha_learning_rate", "the optimiser's step count"),
    (DQN, "learning_rate", "the optimiser's step count"),
    (PPO, "clip_range", "the environment timestep"),
    (TD3, "exploration_noise", "the environment timestep"),
]
ENV = {PPO: "CartPole-v1", SAC: "Pendulum-v1", DQN: "CartPole-v1", TD3: "Pendulum-v1"}


@pytest.mark.parametrize(
    ("schedule", "came_back"),
    [
        (lambda: 1e-3, r"raised TypeError: .*takes 0 positional arguments but 1 was given"),
        (lambda step, other: 1e-3, r"raised TypeError: .*missing 1 required positional argument: 'other'"),
        (lambda step: jnp.full(2, 1e-3), r"returned shape \(2,\) and dtype float32"),
    ],
    ids=["no-argument", "two-arguments", "vector"],
)
@pytest.mark.parametrize(("agent", "keyword", "counts"), SCHEDULED, ids=[f"{a.__name__}-{k}" for a, k, _ in SCHEDULED])
def test_a_schedule_not_a_float_of_one_step_count_is_refused_at_construction_naming_its_keyword(
    agent, keyword, counts, schedule, came_back
):
    expected = f"{keyword} must be a function of {counts}, an int32 scalar, returning a real scalar"
    with pytest.raises(ValueError, match=rf"^{expected}; {keyword}\(step\) {came_back}"):
        agent(ENV[agent], **{keyword: schedule})


def test_optax_schedules_and_numbers_are_accepted_where_a_schedule_is():
    rate, clip = optax.linear_schedule(3e-4, 0.0, 1_000), optax.cosine_decay_schedule(0.2, 1_000)
    agent = PPO("CartPole-v1", actor_learning_rate=rate, critic_learning_rate=1e-3, clip_range=clip)
    assert agent.settings.actor_learning_rate is rate and agent.settings.clip_range is clip
    assert agent.settings.critic_learning_rate == 1e-3
    assert TD3("Pendulum-v1", exploration_noise=linear(0.3, 0.05, 100)).settings.exploration_noise == linear(
        0.3, 0.05, 100
    )
