"""PPO's Brax settings (docs/brax.md) against hand-computed values, and against Brax's own
functions where brax is installed.

Each setting is off by default; here each is checked alone on a tiny trajectory: reward
scaling in GAE, the truncation mask, the V-trace advantages, segments of `unroll_length`
steps (their layout, their bootstrap, their minibatches), the tanh-squashed Gaussian with
its deviation from the network, one optimiser over both networks; then the refusals at
construction, and one short run with all of them on.
"""

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from ajax import PPO
from ajax.agents.PPO.core import generalized_advantages
from ajax.agents.PPO.train_PPO import Minibatch, ProximalActorCritic, Segment, joint_step
from ajax.extensions import ExtensionStack
from ajax.networks.actor_critic import TanhGaussianActor
from ajax.networks.distributions import PreTanhGaussian
from ajax.networks.memory import MemoryConfig
from ajax.networks.optim import new_train_state
from ajax.state import OptimizerConfig
from tests.conftest import agent_parts, last_returns

try:
    from brax.training import distribution as brax_distribution
    from brax.training.agents.ppo.losses import compute_gae as brax_compute_gae
except ImportError:  # brax is an extra
    brax_distribution = brax_compute_gae = None

needs_brax = pytest.mark.skipif(brax_compute_gae is None, reason="brax is not installed")
ZEROS = jnp.zeros(3, bool)


def column(*values):
    """A (T, 1) rollout of one env copy."""
    return jnp.array(values, jnp.float32)[:, None]


def proximal(agent: PPO, parts_class: type = ProximalActorCritic) -> ProximalActorCritic:
    return agent_parts(parts_class, agent)


def test_reward_scaling_multiplies_the_rewards_in_the_advantages_and_the_targets():
    # gamma 0.9, lambda 0.5, rewards (1, 2, 3) times 10, V = (0.5, 0.25, 1), V(s') = (0.25, 1, 2):
    # delta = (9.725, 20.65, 30.8); A_2 = 30.8, A_1 = 20.65 + 0.45 * 30.8 = 34.51,
    # A_0 = 9.725 + 0.45 * 34.51 = 25.2545; targets A + V.
    agent = PPO("Pendulum-v1", reward_scaling=10.0, gamma=0.9, gae_lambda=0.5)
    rollout = Segment(column(1.0, 2.0, 3.0), ZEROS[:, None], ZEROS[:, None], None)
    advantages, targets = proximal(agent).advantages(rollout, column(0.5, 0.25, 1.0), column(0.25, 1.0, 2.0))
    np.testing.assert_allclose(advantages[:, 0], [25.2545, 34.51, 30.8], rtol=1e-6)
    np.testing.assert_allclose(targets[:, 0], [25.7545, 34.76, 31.8], rtol=1e-6)


def test_the_default_scaling_leaves_the_rewards_as_they_are():
    agent = PPO("Pendulum-v1", gamma=0.9, gae_lambda=0.5)
    rollout = Segment(column(1.0, 2.0, 3.0), ZEROS[:, None], ZEROS[:, None], None)
    advantages, _ = proximal(agent).advantages(rollout, column(0.5, 0.25, 1.0), column(0.25, 1.0, 2.0))
    np.testing.assert_allclose(advantages[:, 0], [2.687, 4.36, 3.8], rtol=1e-6)


# A step cut by a time limit at t = 1: rewards 1, V = (1, 2, 3), V(s') = (2, 5, 4) with 5 the
# final observation's value; gamma 0.5, lambda 1.
TRUNCATED = dict(
    rewards=jnp.ones(3),
    values=jnp.array([1.0, 2.0, 3.0]),
    next_values=jnp.array([2.0, 5.0, 4.0]),
    terminated=ZEROS,
    truncated=jnp.array([False, True, False]),
    gamma=0.5,
    gae_lambda=1.0,
)


def test_bootstrapping_at_the_time_limit_is_ajaxs_default():
    # delta = (1, 1 + 2.5 - 2, 1 + 2 - 3) = (1, 1.5, 0); A_1 = 1.5 (its episode ends), A_0 = 1 + 0.5 * 1.5.
    advantages, targets = generalized_advantages(**TRUNCATED)
    np.testing.assert_allclose(advantages, [1.75, 1.5, 0.0])
    np.testing.assert_allclose(targets, [2.75, 3.5, 3.0])


def test_without_bootstrapping_the_truncated_step_has_advantage_0_and_its_own_value_as_target():
    # Brax's mask: delta_1 = 0, so A_1 = 0 and the target is V(s_1) = 2; A_0 = delta_0 = 1.
    advantages, targets = generalized_advantages(**TRUNCATED, bootstrap_on_truncation=False)
    np.testing.assert_allclose(advantages, [1.0, 0.0, 0.0])
    np.testing.assert_allclose(targets, [2.0, 2.0, 3.0])
    # The final observation's value is read nowhere.
    moved = generalized_advantages(
        **{**TRUNCATED, "next_values": jnp.array([2.0, 99.0, 4.0])}, bootstrap_on_truncation=False
    )
    np.testing.assert_allclose(moved[0], advantages)


def test_a_terminal_and_a_time_limit_on_one_step_is_a_terminal_without_bootstrapping_too():
    both = {**TRUNCATED, "terminated": jnp.array([False, True, False])}
    advantages, _ = generalized_advantages(**both, bootstrap_on_truncation=False)
    # delta_1 = 1 - 2 = -1: the terminal's own reward counts, as in Brax (termination wins the tie).
    np.testing.assert_allclose(advantages, [0.5, -1.0, 0.0])


def test_vtrace_advantages_by_hand():
    # gamma 0.9, lambda 0.5, rewards (1, 2, 3), V = (0.5, 0.25, 1), V(s') = (0.25, 1, 2): GAE's
    # A = (2.687, 4.36, 3.8); V-trace's q_t - V_t = delta_t + gamma A_{t+1}:
    # (0.725 + 0.9 * 4.36, 2.65 + 0.9 * 3.8, 3.8) = (4.649, 6.07, 3.8); v_1 = 4.61, and indeed
    # r_0 + gamma v_1 - V_0 = 1 + 4.149 - 0.5. The targets are GAE's lambda-returns.
    arrays = (jnp.array([1.0, 2.0, 3.0]), jnp.array([0.5, 0.25, 1.0]), jnp.array([0.25, 1.0, 2.0]), ZEROS, ZEROS)
    advantages, targets = generalized_advantages(*arrays, 0.9, 0.5, estimator="vtrace")
    np.testing.assert_allclose(advantages, [4.649, 6.07, 3.8], rtol=1e-6)
    np.testing.assert_allclose(targets, [3.187, 4.61, 4.8], rtol=1e-6)


@needs_brax
@pytest.mark.parametrize("episode_end", ["terminated", "truncated", "none"])
def test_brax_settings_compute_braxs_gae(episode_end):
    """Brax's compute_gae on a (T, B) segment bootstraps from V(obs_T) and reads V(obs_{t+1})
    inside it: Ajax's without bootstrapping at time limits and with V-trace gives its values."""
    key = jax.random.key(0)
    values = jax.random.normal(key, (6, 2))
    bootstrap = jnp.array([0.3, -0.7])
    rewards = jax.random.normal(jax.random.key(1), (6, 2))
    ended = jnp.zeros((6, 2)).at[2, 0].set(1.0).at[4, 1].set(1.0)
    terminated = ended if episode_end == "terminated" else jnp.zeros_like(ended)
    truncated = ended if episode_end == "truncated" else jnp.zeros_like(ended)
    vs, brax_advantages = brax_compute_gae(truncated, terminated, rewards, values, bootstrap, 0.95, 0.97)
    next_values = jnp.concatenate([values[1:], bootstrap[None]])
    advantages, targets = generalized_advantages(
        rewards,
        values,
        next_values,
        terminated,
        truncated,
        0.97,
        0.95,
        bootstrap_on_truncation=False,
        estimator="vtrace",
    )
    np.testing.assert_allclose(targets, vs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(advantages, brax_advantages, rtol=1e-5, atol=1e-6)


# Segments ---------------------------------------------------------------------------------


def labelled_rollout(n_steps: int, n_envs: int) -> Minibatch:
    """A rollout whose observation at step t of env n is (t, n)."""
    t, n = jnp.meshgrid(jnp.arange(n_steps), jnp.arange(n_envs), indexing="ij")
    obs = jnp.stack([t, n], axis=-1).astype(jnp.float32)
    return Minibatch(obs, t, t.astype(jnp.float32), None, None)


def test_segments_are_contiguous_and_minibatches_take_them_whole():
    agent = PPO("Pendulum-v1", n_envs=2, n_steps=8, unroll_length=4, batch_size=4)
    minibatches = proximal(agent).segment_minibatches(labelled_rollout(8, 2), jax.random.key(3))
    # 2 envs x 2 segments of 4 steps = 16 transitions: 4 minibatches of one (4-step) segment.
    assert minibatches.obs.shape == (4, 4, 1, 2)
    seen = set()
    for segment in np.asarray(minibatches.obs[:, :, 0]):
        steps, env = segment[:, 0], segment[:, 1]
        assert steps[0] % 4 == 0 and list(np.diff(steps)) == [1, 1, 1] and len(set(env)) == 1
        seen.add((int(steps[0]), int(env[0])))
    assert seen == {(0, 0), (4, 0), (0, 1), (4, 1)}


def test_segment_minibatches_hold_several_segments_when_batch_size_allows():
    agent = PPO("Pendulum-v1", n_envs=2, n_steps=8, unroll_length=2, n_minibatches=2)
    minibatches = proximal(agent).segment_minibatches(labelled_rollout(8, 2), jax.random.key(0))
    assert agent.agent_config.batch_size == 8 and minibatches.obs.shape == (2, 2, 4, 2)  # 4 segments of 2 each


@dataclass(frozen=True)
class FirstFeatureCritic(ProximalActorCritic):
    """V(s) = s[0]: a critic whose values a test writes into the observations."""

    @property
    def networks(self):
        class Critic:
            apply = staticmethod(lambda params, obs: obs[..., 0])

        return None, Critic()


@pytest.mark.parametrize("bootstrap", [True, False])
def test_a_segment_bootstraps_from_the_value_its_last_step_reached(bootstrap):
    # One segment of 3 steps, V = (1, 2, 3), V(s') = (2, 3, 7), rewards (0, 0, 1), gamma 0.5, lambda 1:
    # delta = (0 + 1 - 1, 0 + 1.5 - 2, 1 + 3.5 - 3) = (0, -0.5, 1.5); A = (0.125, 0.25, 1.5).
    agent = PPO(
        "Pendulum-v1",
        n_envs=1,
        n_steps=3,
        batch_size=3,
        unroll_length=3,
        gamma=0.5,
        gae_lambda=1.0,
        bootstrap_on_truncation=bootstrap,
    )
    ppo = proximal(agent, FirstFeatureCritic)
    segment = Segment(column(0.0, 0.0, 1.0), ZEROS[:, None], ZEROS[:, None], column(2.0, 3.0, 7.0)[..., None])
    batch = Minibatch(column(1.0, 2.0, 3.0)[..., None], None, None, None, None, segment=segment)
    batch = ppo.segment_advantages(None, batch)
    np.testing.assert_allclose(batch.advantage[:, 0], [0.125, 0.25, 1.5])
    np.testing.assert_allclose(batch.target[:, 0], [1.125, 2.25, 4.5])


def test_gae_over_segments_differs_from_gae_over_the_rollout():
    """The recursion stops at a segment's end and bootstraps there instead of running on."""
    rewards, values = jnp.ones((4, 1)), jnp.array([[1.0], [2.0], [3.0], [4.0]])
    next_values = jnp.array([[2.0], [3.0], [4.0], [5.0]])
    whole, _ = generalized_advantages(rewards, values, next_values, jnp.zeros((4, 1)), jnp.zeros((4, 1)), 0.5, 1.0)
    first, _ = generalized_advantages(
        rewards[:2], values[:2], next_values[:2], jnp.zeros((2, 1)), jnp.zeros((2, 1)), 0.5, 1.0
    )
    # delta = (1 + 1 - 1, 1 + 1.5 - 2, ...) = (1, 0.5, 0, -0.5): the first segment's A_1 = 0.5 alone.
    np.testing.assert_allclose(first[:, 0], [1.25, 0.5])
    np.testing.assert_allclose(whole[:2, 0], [1.0 + 0.5 * (0.5 + 0.5 * (0.0 - 0.25)), 0.5 + 0.5 * (0.0 - 0.25)])


# The tanh-squashed Gaussian ----------------------------------------------------------------


def softplus(x: float) -> float:
    return math.log1p(math.exp(x))


def brax_like_actor(loc: float, raw_scale: float):
    """A one-action TanhGaussianActor whose head ignores the observation: loc and raw scale from its bias."""
    actor = TanhGaussianActor(
        ("4", "swish"), 1, head_init=jax.nn.initializers.zeros, head_bias_init=lambda *_: jnp.array([loc, raw_scale])
    )
    return actor.apply(actor.init(jax.random.key(0), jnp.zeros((1, 3))), jnp.zeros((1, 3)))


def test_the_deviation_is_softplus_of_the_network_output_plus_a_floor():
    pi = brax_like_actor(0.5, 0.2)
    assert float(pi.loc[0, 0]) == 0.5
    assert float(pi.scale[0, 0]) == pytest.approx(softplus(0.2) + 0.001, rel=1e-6)
    assert float(pi.mode()[0, 0]) == pytest.approx(math.tanh(0.5), rel=1e-6)


def test_the_log_prob_of_a_raw_draw_is_the_squashed_actions_density():
    pi, u = brax_like_actor(0.5, 0.2), 0.3
    scale = softplus(0.2) + 0.001
    gaussian = -0.5 * ((u - 0.5) / scale) ** 2 - math.log(scale) - 0.5 * math.log(2 * math.pi)
    expected = gaussian - math.log(1.0 - math.tanh(u) ** 2)
    assert float(pi.log_prob(jnp.array([[u]]))[0]) == pytest.approx(expected, rel=1e-5)


def test_the_entropy_is_the_gaussians_plus_the_jacobian_at_a_reparameterised_draw():
    pi, key = brax_like_actor(0.5, 0.2), jax.random.key(7)
    scale = softplus(0.2) + 0.001
    u = 0.5 + scale * float(jax.random.normal(key, (1, 1))[0, 0])
    expected = 0.5 + 0.5 * math.log(2 * math.pi) + math.log(scale) + math.log(1.0 - math.tanh(u) ** 2)
    assert float(pi.entropy(seed=key)[0]) == pytest.approx(expected, rel=1e-5)


@needs_brax
def test_the_tanh_gaussian_scores_as_braxs_normal_tanh_distribution():
    params = jax.random.normal(jax.random.key(1), (5, 4))  # loc and raw scale of 2 actions, 5 states
    raw = jax.random.normal(jax.random.key(2), (5, 2))
    brax = brax_distribution.NormalTanhDistribution(event_size=2)
    loc, raw_scale = jnp.split(params, 2, axis=-1)
    pi = PreTanhGaussian(loc, jax.nn.softplus(raw_scale) + 0.001)
    np.testing.assert_allclose(pi.log_prob(raw), brax.log_prob(params, raw), rtol=1e-5, atol=1e-6)
    key = jax.random.key(3)
    np.testing.assert_allclose(pi.entropy(seed=key), brax.entropy(params, key), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(pi.mode(), brax.mode(params), rtol=1e-6)


def test_ppo_stores_the_raw_draw_and_steps_the_env_with_its_tanh():
    agent = PPO("Pendulum-v1", n_envs=2, policy_distribution="tanh_gaussian")
    ppo = proximal(agent)
    state = ppo.init(jax.random.key(0))
    obs = jnp.ones((2, 3))
    raw, extras, executed = ppo.act(state, obs, jax.random.key(1))
    np.testing.assert_allclose(executed, jnp.tanh(raw))
    np.testing.assert_allclose(extras["log_prob"], ppo.policy(state, obs).log_prob(raw))


# One optimiser over both networks ------------------------------------------------------------


def test_joint_step_is_one_adam_over_both_networks_with_their_norm_clipped_together():
    actor_params, critic_params = {"w": jnp.array([1.0, -2.0])}, {"v": jnp.array([3.0])}
    policy_loss = lambda p: (jnp.sum(p["w"] ** 2), ())  # noqa: E731
    value_loss = lambda p: (0.5 * jnp.sum((p["v"] - 1.0) ** 2), ())  # noqa: E731
    args = OptimizerConfig(1e-2, None)

    class Identity:
        @staticmethod
        def init(key, x):
            return x

        apply = None

    states = tuple(new_train_state(Identity(), None, args, params) for params in (actor_params, critic_params))
    shared = optax.chain(optax.clip_by_global_norm(0.5), optax.adam(1e-2))
    params = {"actor": actor_params, "critic": critic_params}
    opt_state = shared.init(params)
    total = lambda p: policy_loss(p["actor"])[0] + value_loss(p["critic"])[0]  # noqa: E731
    for _ in range(3):
        states, losses, _, norms, _ = joint_step(states, (policy_loss, value_loss), None, None, ExtensionStack(()), 0.5)
        updates, opt_state = shared.update(jax.grad(total)(params), opt_state)
        params = optax.apply_updates(params, updates)
    np.testing.assert_allclose(states[0].params["w"], params["actor"]["w"], rtol=1e-6)
    np.testing.assert_allclose(states[1].params["v"], params["critic"]["v"], rtol=1e-6)


def test_a_shared_optimizer_moves_the_clip_from_each_network_to_the_joint_step():
    agent = PPO("Pendulum-v1", shared_optimizer=True, max_grad_norm=0.7)
    assert all(args.max_grad_norm is None for args in agent.optimizer_args.values())
    assert agent.agent_config.joint_max_grad_norm == 0.7
    assert PPO("Pendulum-v1").agent_config.joint_max_grad_norm is None


# Refusals at construction --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (dict(n_steps=30, batch_size=30, unroll_length=4), r"unroll_length=4 does not divide n_steps=30"),
        (dict(n_steps=32, batch_size=30, n_envs=15, unroll_length=4), r"unroll_length=4 does not divide batch_size=30"),
        (dict(unroll_length=8, memory=MemoryConfig("gru", 8)), r"unroll_length cuts a feed-forward PPO's rollouts"),
        (dict(n_minibatches=7), r"n_minibatches=7 does not divide the rollout .* = 8192 transitions"),
        (dict(n_minibatches=32, batch_size=64), r"batch_size=64 and n_minibatches=32 both set the minibatches"),
        (dict(shared_optimizer=True, critic_learning_rate=1e-3), r"shared_optimizer=True takes one Adam .* Set them"),
        (dict(reward_scaling=0.0), r"^reward_scaling must be a finite number above 0, got 0\.0\.$"),
        (dict(policy_distribution="normal"), r"policy_distribution must be one of 'gaussian', 'tanh_gaussian'"),
        (dict(advantage_estimator="gae_brax"), r"advantage_estimator must be one of 'gae', 'vtrace'"),
        (dict(bootstrap_on_truncation=0), r"bootstrap_on_truncation"),
    ],
)
def test_a_brax_setting_that_cannot_be_honoured_is_refused_naming_it(settings, message):
    with pytest.raises(ValueError, match=message):
        PPO("Pendulum-v1", **settings)


def test_tanh_gaussian_needs_continuous_actions():
    with pytest.raises(ValueError, match=r"policy_distribution='tanh_gaussian' squashes continuous actions"):
        PPO("CartPole-v1", policy_distribution="tanh_gaussian")


def test_n_minibatches_counts_the_minibatches_and_the_config_builds_the_same_ppo():
    agent = PPO("Pendulum-v1", n_envs=4, n_steps=64, n_minibatches=8)
    assert agent.agent_config.batch_size == 32 and agent.config["batch_size"] == 32
    rebuilt = PPO("Pendulum-v1", **{k: v for k, v in agent.config.items() if k not in ("env_id", "algo_name")})
    assert rebuilt.agent_config == agent.agent_config


# Learning, every setting on ---------------------------------------------------------------------

SWISH = ("64", "swish", "64", "swish")
# Every Brax setting on, at Pendulum's usual discount of 0.9 (the Zoo's); about 30 s for three seeds on
# two cores (docs/brax.md has the numbers beside the same run without the Brax settings).
BRAX_STYLE = dict(
    n_envs=8,
    n_steps=256,
    unroll_length=16,
    n_minibatches=16,
    n_epochs=10,
    gamma=0.9,
    reward_scaling=0.1,
    bootstrap_on_truncation=False,
    advantage_estimator="vtrace",
    policy_distribution="tanh_gaussian",
    shared_optimizer=True,
    normalize_observations=True,
    actor_learning_rate=1e-3,
    critic_learning_rate=1e-3,
    max_grad_norm=None,
    vf_coef=0.25,
    actor_architecture=SWISH,
    critic_architecture=SWISH,
)


@pytest.mark.slow
def test_ppo_with_every_brax_setting_learns_pendulum():
    scores = last_returns(PPO("Pendulum-v1", **BRAX_STYLE), 200_000, 40_000)
    # A uniformly random policy scores about -1,200; seeds 0-2 reached -198, -400 and -172.
    assert scores.mean() > -500 and scores.min() > -700, scores
