"""Action masks: a dict observation's "action_mask" forbids actions in acting, exploring,
bootstrapping and evaluating, for the agents that apply one (PPO, APO, DQN, PQN, DAgger, UDRL)."""

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct
from gymnax.environments import environment, spaces

from ajax import DQN, PPO, PQN, SAC, UDRL, DAgger
from ajax.environments.interaction import epsilon_greedy
from ajax.logging.wandb_logging import LoggingConfig
from ajax.networks.encoders import ActionMasked
from ajax.nonfinite import NoAllowedActionWarning, NonFinite, record_no_action
from ajax.state import MASKED
from ajax.wrappers import WithoutActionMask
from tests.probe_envs import MaskedBestAction, ProbeParams, ProbeState

MASK = jnp.array([[True, True, False], [False, True, True]])


class Constant(nn.Module):
    """A head that hands back fixed outputs, whatever it reads."""

    logits: bool = False

    def __call__(self, obs):
        values = jnp.array([[5.0, 1.0, 9.0], [5.0, 1.0, 9.0]])
        return distrax.Categorical(logits=values) if self.logits else values


def test_a_masked_q_function_maximises_over_the_allowed_actions_only():
    q = ActionMasked(Constant()).apply({}, {"action_mask": MASK})
    np.testing.assert_array_equal(q, [[5.0, 1.0, MASKED], [MASKED, 1.0, 9.0]])
    # What a target bootstraps from, and what a greedy policy takes.
    np.testing.assert_array_equal(q.max(axis=-1), [5.0, 9.0])
    np.testing.assert_array_equal(q.argmax(axis=-1), [0, 2])


def test_a_masked_policy_gives_forbidden_actions_no_probability_and_a_finite_entropy():
    policy = ActionMasked(Constant(logits=True)).apply({}, {"action_mask": MASK})
    probs = policy.probs
    assert probs[0, 2] == 0.0 and probs[1, 0] == 0.0
    np.testing.assert_allclose(probs.sum(axis=-1), 1.0, rtol=1e-6)
    assert np.isfinite(policy.entropy()).all()
    samples = policy.sample(seed=jax.random.PRNGKey(0), sample_shape=(1000,))
    assert not (samples[:, 0] == 2).any() and not (samples[:, 1] == 0).any()


def test_epsilon_greedy_explores_among_the_allowed_actions_only():
    q = jnp.where(MASK, 0.0, MASKED)
    explore = epsilon_greedy(1.0, masked=True)  # every action a random one
    actions = jax.vmap(lambda key: explore(q, key, 0))(jax.random.split(jax.random.PRNGKey(0), 500))
    assert set(np.unique(actions[:, 0])) == {0, 1} and set(np.unique(actions[:, 1])) == {1, 2}


def allowed_best(obs):
    """DAgger's expert on MaskedBestAction: the best action the mask allows, action 1."""
    return jnp.ones(obs["x"].shape[0], jnp.int32)


@pytest.mark.parametrize(
    ("agent", "settings", "learns"),
    [
        (DQN, {"learning_starts": 256, "buffer_size": 2_000, "batch_size": 32}, True),
        (PQN, {"n_envs": 4, "n_steps": 16, "n_minibatches": 2}, True),
        (PPO, {"n_envs": 4, "n_steps": 32, "batch_size": 64}, True),
        (DAgger, {"expert_policy": allowed_best, "n_steps": 32, "n_gradient_steps": 8, "batch_size": 32}, True),
        # UDRL acts on commands drawn from its best episodes: it does not settle on the best
        # action in this budget, but it must never take the forbidden one either.
        (UDRL, {"n_updates_per_iter": 20, "batch_size": 64, "buffer_size": 64}, False),
    ],
    ids=["DQN", "PQN", "PPO", "DAgger", "UDRL"],
)
def test_the_forbidden_action_is_never_taken_though_it_would_pay_the_most(agent, settings, learns):
    trained = agent(MaskedBestAction(), **settings)
    state, evaluations = trained.train(
        seed=[0, 1], n_timesteps=3_072, logging_config=LoggingConfig(log_frequency=512), num_episode_test=10
    )
    filled = np.asarray(evaluations["timestep"][0]) >= 0
    # Every episode (one step) paid 0 or 1, never the forbidden 10: in training from warm-up to
    # the end, and in every evaluation.
    paid = np.asarray(evaluations["Train/episodic mean reward"])[:, filled]
    greedy = np.asarray(evaluations["Eval/episodic mean reward"])[:, filled]
    assert np.nanmax(paid) <= 1.0 and greedy.max() <= 1.0, (paid, greedy)
    if learns:  # the greedy policy learned the best allowed action
        np.testing.assert_allclose(greedy[:, -1], 1.0)
    if agent is DQN:  # and the replay holds no forbidden action
        stored = np.asarray(state.collector_state.buffer_state.experience.action)
        assert set(np.unique(stored)) == {0, 1}


def test_a_mask_on_continuous_actions_is_refused():
    class Continuous(MaskedBestAction):
        def action_space(self, params):
            from gymnax.environments import spaces

            return spaces.Box(-1.0, 1.0, (1,))

        def step_env(self, key, state, action, params):
            return self.observe(), state, jnp.asarray(0.0), jnp.asarray(True), {}

    with pytest.raises(ValueError, match="its actions are continuous"):
        SAC(Continuous())


def test_without_its_mask_the_same_agent_takes_the_action_the_mask_forbids():
    # The counterfactual of the test above: the mask, not the agent, keeps the 10 out of reach.
    env = WithoutActionMask(MaskedBestAction())
    assert set(env.observation_space(env.default_params).spaces) == {"x"}
    trained = DQN(env, learning_starts=256, buffer_size=2_000, batch_size=32)
    _, evaluations = trained.train(
        seed=[0, 1], n_timesteps=3_072, logging_config=LoggingConfig(log_frequency=512), num_episode_test=10
    )
    np.testing.assert_allclose(np.asarray(evaluations["Eval/episodic mean reward"])[:, -1], 10.0)


def test_without_action_mask_needs_a_mask_to_drop():
    import gymnax

    with pytest.raises(ValueError, match="needs a dict observation with an 'action_mask' key; CartPole-v1's has none"):
        WithoutActionMask(gymnax.make("CartPole-v1")[0])


class DeadEnd(environment.Environment):
    """Four-step episodes of three actions (the third forbidden) whose mask allows nothing at the
    third step: time 2 of every episode."""

    @property
    def default_params(self) -> ProbeParams:
        return ProbeParams(max_steps_in_episode=100)

    def observe(self, time):
        mask = jnp.where(time == 2, jnp.zeros(3, bool), jnp.array([True, True, False]))
        return {"x": jnp.asarray(time, jnp.float32)[None] / 4, "action_mask": mask}

    def reset_env(self, key, params):
        return self.observe(0), ProbeState(time=0)

    def step_env(self, key, state, action, params):
        time = state.time + 1
        return self.observe(time), ProbeState(time=time), jnp.asarray(action == 1, jnp.float32), time >= 4, {}

    def action_space(self, params):
        return spaces.Discrete(3)

    def observation_space(self, params):
        return spaces.Dict({"x": spaces.Box(0.0, 1.0, (1,)), "action_mask": spaces.Box(0, 1, (3,), jnp.bool_)})


def test_steps_where_the_mask_allows_nothing_are_counted_and_reported_with_seed_count_and_first_timestep():
    agent = PPO(DeadEnd(), n_envs=1, n_steps=8, batch_size=8, n_epochs=1, actor_architecture=("16", "relu"))
    with pytest.warns(NoAllowedActionWarning) as caught:
        state, _ = agent.train(seed=[0, 3], n_timesteps=64)
    steps = int(state.collector_state.timestep[0])
    dead_ends = len(range(2, steps, 4))  # one copy, its episodes 4 steps long: timesteps 2, 6, 10, ...
    message = str(caught[0].message)
    for seed in (0, 3):
        assert f"seed {seed}: {dead_ends} steps, the first at timestep 2" in message, message
    assert "as if the observation had no mask" in message
    np.testing.assert_array_equal(state.nonfinite.no_action.steps, [dead_ends, dead_ends])


def test_a_mask_that_allows_nothing_is_lifted_rather_than_every_action_masked():
    """No argmax over values all at MASKED (the first action, a target of gamma * MASKED): the row
    that allows nothing is read unmasked, greedy takes its best value and exploration any action."""
    mask = jnp.array([[True, True, False], [False, False, False]])
    q = ActionMasked(Constant()).apply({}, {"action_mask": mask})
    np.testing.assert_array_equal(q, [[5.0, 1.0, MASKED], [5.0, 1.0, 9.0]])
    explore = epsilon_greedy(1.0, masked=True)
    actions = jax.vmap(lambda key: explore(q, key, 0))(jax.random.split(jax.random.PRNGKey(0), 300))
    assert set(np.unique(actions[:, 0])) == {0, 1} and set(np.unique(actions[:, 1])) == {0, 1, 2}


@struct.dataclass
class Recorded:
    nonfinite: NonFinite


def test_the_record_counts_only_executed_actions_and_a_restored_record_of_zeros_counts_from_clean():
    empty, allowed = jnp.zeros(3, bool), jnp.ones(3, bool)
    masks = jnp.stack([empty, allowed, empty])
    state = Recorded(NonFinite.clean(action_masked=True))
    state = record_no_action(state, masks, jnp.int32(6), acted=jnp.array([False, True, True]))  # a last row's: none
    state = record_no_action(state, masks, jnp.int32(9))
    assert (int(state.nonfinite.no_action.steps), int(state.nonfinite.no_action.first)) == (3, 6)
    restored = Recorded(jax.tree.map(jnp.zeros_like, NonFinite.clean(action_masked=True)))  # NaN read as int
    restored = record_no_action(restored, masks, jnp.int32(12))
    assert (int(restored.nonfinite.no_action.steps), int(restored.nonfinite.no_action.first)) == (2, 12)
    unmasked = Recorded(NonFinite.clean())
    assert record_no_action(unmasked, masks, jnp.int32(6)) is unmasked
