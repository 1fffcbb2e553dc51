"""DreamerV3: the row collector and its replay by hand, the train ratio's count, a probe with
known values and a best action, and the refusals. The maths (KL balance, lambda-returns,
two-hot, LaProp) is checked in test_dreamerv3_core.py and beside its modules; determinism
and the resume contract in test_resume_contract.py.
"""

import dataclasses
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct
from gymnax.environments import environment, spaces

from ajax import DreamerV3
from ajax.agents.DreamerV3.networks import Actor, Critic, Latent, WorldModel, features, initial_latent, mode_one_hot
from ajax.agents.DreamerV3.state import LossScales
from ajax.agents.updates_owed import UpdatesOwed
from ajax.distributional import bins_mean, symexp, symlog_bins
from ajax.environments.row_collector import (
    Rows,
    collect_row,
    empty_replay,
    sample_sequences,
    write_entries,
)
from ajax.extensions import Extension
from tests.probe_envs import OneStepReward


@struct.dataclass
class ChoiceState(environment.EnvState):
    time: int
    branch: int


class RiskyOrSafe(environment.Environment):
    """Choose a branch at the first step, be paid at the second, then a true terminal.

    Observations: [1, 0, 0] at the choice, [0, 1, 0] on the safe branch, [0, 0, 1] on the
    risky one, zeros at the end. The safe branch pays 0.5; the risky one +1.5 or -1.5 with even odds (mean 0).
    So V(safe) = 0.5 (a one-step known reward), V(risky) = 0, and the best action is 0 (safe).
    """

    @property
    def default_params(self) -> environment.EnvParams:
        return environment.EnvParams(max_steps_in_episode=10)

    def reset_env(self, key, params):
        return jnp.array([1.0, 0.0, 0.0]), ChoiceState(time=0, branch=0)

    def step_env(self, key, state, action, params):
        choosing = state.time == 0
        branch = jnp.where(choosing, action, state.branch)
        coin = jnp.where(jax.random.bernoulli(key), 1.5, -1.5)
        reward = jnp.where(choosing, 0.0, jnp.where(branch == 0, 0.5, coin))
        obs = jnp.where(choosing, jax.nn.one_hot(1 + branch, 3), jnp.zeros(3))
        return obs, ChoiceState(time=state.time + 1, branch=branch), reward, ~choosing, {}

    def action_space(self, params):
        return spaces.Discrete(2)

    def observation_space(self, params):
        return spaces.Box(0.0, 1.0, (3,))


# ---------------------------------------------------------------------------------------
# The row collector and the replay, by hand
# ---------------------------------------------------------------------------------------


def test_an_episode_of_n_steps_makes_n_plus_one_rows_and_the_env_resets_on_the_tick_after_its_last():
    """OneStepReward (reward 1, then a terminal), two envs, a policy that always takes action 1.

    Rows per env: first (r 0), last + terminal (r 1), first (r 0), last (r 1), ...: the tick
    that writes a last row does not step the env, the next one writes the new episode's first."""
    agent = DreamerV3(OneStepReward(), n_envs=2, batch_size=2, batch_length=4, buffer_size=20)
    state, _ = agent.train(seed=0, n_timesteps=0)
    state = jax.tree.map(lambda x: x[0], state)
    env_args = agent.env_args

    def policy(state, carry, obs, first, key):
        return jnp.ones(2, jnp.int32), carry, carry[0]

    step = jax.jit(lambda state: collect_row(state, policy, env_args))
    rows = []
    for _ in range(5):
        state, row = step(state)
        rows.append(row)
    first = np.array([np.asarray(r.is_first) for r in rows])[:, 0].tolist()
    last = np.array([np.asarray(r.is_last) for r in rows])[:, 0].tolist()
    terminal = np.array([np.asarray(r.is_terminal) for r in rows])[:, 0].tolist()
    reward = np.array([np.asarray(r.reward) for r in rows])[:, 0].tolist()
    assert first == [True, False, True, False, True]
    assert last == terminal == [False, True, False, True, False]
    assert reward == [0.0, 1.0, 0.0, 1.0, 0.0]
    assert int(state.collector_state.timestep) == 10  # rows, over both envs
    np.testing.assert_array_equal(state.collector_state.last_episodic_return, [1.0, 1.0])
    replay = state.collector_state.buffer_state
    np.testing.assert_array_equal(replay.is_first[:, :5], [[1, 0, 1, 0, 1]] * 2)
    np.testing.assert_array_equal(replay.reward[:, :5], [[0, 1, 0, 1, 0]] * 2)


def _numbered_replay(n_envs: int = 2, size: int = 6) -> Rows:
    """A replay whose row k of env e holds obs 100 e + k, and whose entries are zero."""
    rows = Rows(
        obs=jnp.zeros((n_envs, 1)),
        action=jnp.zeros((n_envs,), jnp.int32),
        reward=jnp.zeros((n_envs,)),
        is_first=jnp.zeros((n_envs,), bool),
        is_last=jnp.zeros((n_envs,), bool),
        is_terminal=jnp.zeros((n_envs,), bool),
        entry=jnp.zeros((n_envs, 2)),
    )
    replay = empty_replay(rows, size)
    numbers = 100.0 * jnp.arange(n_envs)[:, None] + jnp.arange(size)
    return replay.replace(obs=numbers[..., None])


def test_sampled_sequences_are_consecutive_rows_of_one_env_and_never_cross_the_write_head():
    """A ring of 6 after 8 ticks holds ticks 2..7 at slots 2,3,4,5,0,1: a sequence of 3 starts at
    tick 2..5 and reads slots in tick order, never from the newest row into the oldest."""
    replay = _numbered_replay()
    sequences, envs, slots = sample_sequences(replay, jax.random.PRNGKey(0), jnp.asarray(8), 512, 3)
    ticks = (slots - 2) % 6 + 2  # slot -> the tick that wrote it (ticks 2..7)
    assert sequences.obs.shape == (512, 3, 1)
    np.testing.assert_array_equal(np.diff(ticks, axis=1), 1)
    assert set(np.asarray(ticks[:, 0]).tolist()) == {2, 3, 4, 5}
    np.testing.assert_array_equal(sequences.obs[..., 0], 100.0 * envs[:, None] + slots)
    assert set(np.asarray(envs).tolist()) == {0, 1}
    # Before the ring is full: after 4 ticks, only starts 0 and 1 hold a whole sequence of 3.
    _, _, early = sample_sequences(replay, jax.random.PRNGKey(1), jnp.asarray(4), 256, 3)
    assert set(np.asarray(early[:, 0]).tolist()) == {0, 1}


def test_trained_latents_are_written_back_into_the_rows_they_came_from():
    replay = _numbered_replay()
    envs, slots = jnp.array([1, 0]), jnp.array([[4, 5, 0], [1, 2, 3]])
    entries = jnp.arange(12.0).reshape(2, 3, 2)
    written = write_entries(replay, envs, slots, entries)
    np.testing.assert_array_equal(written.entry[1, [4, 5, 0]], entries[0])
    np.testing.assert_array_equal(written.entry[0, [1, 2, 3]], entries[1])
    assert float(jnp.abs(written.entry).sum()) == float(entries.sum())  # nothing else moved


def train_ratio(agent: DreamerV3, n_envs: int) -> UpdatesOwed:
    config = agent.agent_config
    return UpdatesOwed.train_ratio(config.train_ratio, config.batch_size, config.batch_length, n_envs)


def test_the_train_ratio_counts_updates_as_the_references_ratio_does():
    """train_ratio 32 over sequences of 4 x 16 rows: 0.5 updates per row. Training starts once the
    replay holds 64 sequences of 17 rows, as the reference counts its length: with 4 envs at tick
    32 (each ring offers 32 - 16 = 16), 128 rows. One update there, then one per 2 rows:
    1 + (1000 - 128) / 2 = 437 updates in 1,000 rows, 2 per tick."""
    agent = DreamerV3("CartPole-v1", n_envs=4, train_ratio=32, batch_size=4, batch_length=16, buffer_size=4000)
    ratio = train_ratio(agent, 4)
    assert ratio.start == 128
    due = [int(ratio.due(jnp.asarray(rows))) for rows in (124, 128, 132, 1000)]
    assert due == [0, 1, 3, 437]
    assert int(ratio.between(jnp.asarray(128), jnp.asarray(132))) == 2
    # The defaults: 16 envs, 16 x 64 rows, ratio 32: one update per 32 rows, from 16 x (64 + 64) = 2,048 rows.
    default = train_ratio(DreamerV3("CartPole-v1", buffer_size=16_000), 16)
    assert default.start == 2048 and int(default.due(jnp.asarray(2048 + 320))) == 11


# ---------------------------------------------------------------------------------------
# The probe: known values and a best action
# ---------------------------------------------------------------------------------------

PROBE = dict(
    n_envs=4, batch_size=8, batch_length=8, buffer_size=2000, train_ratio=64, learning_rate=1e-3, warmup_updates=0
)


@pytest.fixture(scope="module")
def risky_or_safe():
    """Two seeds, 1,200 rows (400 episodes), one update per row at 1e-3 without warm-up."""
    agent = DreamerV3(RiskyOrSafe(), **PROBE)
    state, _ = agent.train(seed=[0, 1], n_timesteps=1_200)
    return agent, state


def _read_states(agent: DreamerV3, state, observations: jax.Array, actions: jax.Array):
    """Each seed's value and policy along one episode's observations, the latent carried as in acting."""
    size, env_args = agent.agent_config.size, agent.env_args
    model = WorldModel(size, env_args.observation_dim)
    bins = symexp(symlog_bins())

    def one_seed(params):
        latent, previous = initial_latent(size, (1,)), jnp.zeros((1, env_args.action_dim))
        values, probs = [], []
        for obs, action in zip(observations, actions, strict=True):
            deter = model.apply(params["model"], latent, previous, method=WorldModel.step)
            embedding = model.apply(params["model"], obs[None], method=WorldModel.encode)
            logits = model.apply(params["model"], deter, embedding, method=WorldModel.posterior)
            latent = Latent(deter, mode_one_hot(logits))
            values.append(bins_mean(Critic(size.units).apply(params["critic"], features(latent)), bins)[0])
            probs.append(Actor(size.units, 2, False).apply(params["actor"], features(latent)).probs[0])
            previous = jax.nn.one_hot(jnp.asarray([action]), 2)
        return jnp.stack(values), jnp.stack(probs)

    return jax.vmap(one_seed)(state.actor_state.params)


@pytest.mark.slow
@pytest.mark.learning
def test_the_probe_run_counts_rows_and_updates(risky_or_safe):
    agent, state = risky_or_safe
    ratio = train_ratio(agent, 4)
    np.testing.assert_array_equal(state.collector_state.timestep, [1200, 1200])
    np.testing.assert_array_equal(state.n_updates, [int(ratio.due(jnp.asarray(1200)))] * 2)
    replay = state.collector_state.buffer_state
    assert replay.obs.shape == (2, 4, 500, 3) and replay.entry.deter.shape == (2, 4, 500, 512)


@pytest.mark.slow
@pytest.mark.learning
def test_the_critic_values_the_safe_branch_at_its_reward_and_above_the_risky_one(risky_or_safe):
    """V(safe) = 0.5 (a one-step known reward) and V(risky) = 0: the critic learns the mean of a
    two-valued return (+-1.5), not its magnitude. Calibration (2026-12-02): see the docstring
    of the actor's test."""
    agent, state = risky_or_safe
    choice, safe, risky = jnp.eye(3)
    safe_values, _ = _read_states(agent, state, jnp.stack([choice, safe]), jnp.array([0, 0]))
    risky_values, _ = _read_states(agent, state, jnp.stack([choice, risky]), jnp.array([1, 0]))
    np.testing.assert_allclose(safe_values[:, 1], 0.5, atol=0.15)
    assert (safe_values[:, 1] > risky_values[:, 1] + 0.25).all(), (safe_values, risky_values)


@pytest.mark.slow
@pytest.mark.learning
def test_the_actor_chooses_the_safe_branch(risky_or_safe):
    agent, state = risky_or_safe
    _, probs = _read_states(agent, state, jnp.eye(3)[:1], jnp.array([0]))
    assert (probs[:, 0, 0] > 0.9).all(), probs


# ---------------------------------------------------------------------------------------
# Evaluation: Ajax's modes, or the reference's samples
# ---------------------------------------------------------------------------------------


def _evaluations(actor_bias: float):
    """The mode and the sampled evaluation policies of a tiny model over two actions, with the actor's
    last layer set so that p(action 1) = sigmoid(actor_bias) up to the 1% uniform mix, and a
    state as both read it (parameters, the seed's evaluation key, the evaluation count)."""
    from ajax.agents.DreamerV3.networks import ModelSize
    from ajax.agents.DreamerV3.train_DreamerV3 import latent_evaluation, sampled_evaluation

    size = ModelSize(deter=16, hidden=8, classes=4, units=8, stoch=4, blocks=2)
    model, actor = WorldModel(size, 3), Actor(size.units, 2, False)
    latent, action = initial_latent(size, (1,)), jnp.zeros((1, 2))
    params = {
        "model": model.init(jax.random.key(0), latent, action, jnp.zeros((1, 3))),
        "actor": actor.init(jax.random.key(1), features(latent)),
    }
    out = params["actor"]["params"]
    last = sorted(out)[-1]  # the output layer, zero-initialised as the reference's
    out[last]["bias"] = jnp.array([0.0, actor_bias])  # its kernel starts near zero: logits ~ the bias
    env_args = dataclasses.make_dataclass("Env", [("continuous", bool), ("action_dim", int)])(False, 2)
    state = SimpleNamespace(
        actor_state=SimpleNamespace(params=params), eval_rng=jax.random.key(7), n_logs=jnp.asarray(3)
    )
    return latent_evaluation(model, actor, size, env_args), sampled_evaluation(model, actor, size, env_args), state


def test_the_sampled_evaluation_draws_actions_where_the_mode_always_takes_one_and_repeats_itself():
    """At p(action 1) = sigmoid(0.4) = 0.60 the mode takes action 1 in all 512 episodes, the
    sampled evaluation in about 60% of them; the same state draws the same actions, and another
    evaluation count (the next evaluation of the run) draws others."""
    mode, sampled, state = _evaluations(actor_bias=0.4)
    obs, n = jnp.ones((512, 3)), 512
    greedy, _, _ = mode.act(state, obs, mode.start(state, n))
    assert (np.asarray(greedy) == 1).all()
    drawn, entropy, carry = sampled.act(state, obs, sampled.start(state, n))
    share = float((np.asarray(drawn) == 1).mean())
    assert 0.53 < share < 0.67, share  # 0.60 +- 3 standard errors of 512 draws
    # p(action 1) = 0.99 sigmoid(0.4) + 0.005 = 0.598 after the uniform mix: entropy 0.674 nats
    np.testing.assert_allclose(entropy, 0.674, atol=0.005)
    again, _, _ = sampled.act(state, obs, sampled.start(state, n))
    np.testing.assert_array_equal(drawn, again)
    later = SimpleNamespace(**{**vars(state), "n_logs": jnp.asarray(4)})
    other, _, _ = sampled.act(later, obs, sampled.start(later, n))
    assert (np.asarray(other) != np.asarray(drawn)).any()
    _, _, next_carry = sampled.act(state, obs, carry)  # the key moves on with each step
    assert not np.array_equal(jax.random.key_data(next_carry[1]), jax.random.key_data(carry[1]))


def test_the_sampled_evaluation_is_a_keyword_off_by_default():
    assert not DreamerV3("CartPole-v1", buffer_size=16_000).agent_config.sampled_evaluation
    assert DreamerV3("CartPole-v1", buffer_size=16_000, sampled_evaluation=True).agent_config.sampled_evaluation
    with pytest.raises(ValueError, match="sampled_evaluation"):
        DreamerV3("CartPole-v1", buffer_size=16_000, sampled_evaluation="yes")


# ---------------------------------------------------------------------------------------
# Refusals
# ---------------------------------------------------------------------------------------


class CriticTerm(Extension):
    def critic_loss(self, ctx, agent_state, ext_state, batch, critic_params):
        return jnp.zeros(()), {}


def test_bad_settings_are_refused_at_construction():
    with pytest.raises(ValueError, match="did you mean '12m'"):
        DreamerV3("CartPole-v1", model_size="12M")
    with pytest.raises(ValueError, match="recurrent by design"):
        DreamerV3("CartPole-v1", memory={"kind": "gru", "hidden_size": 8})
    with pytest.raises(ValueError, match="must divide among the n_envs=16"):
        DreamerV3("CartPole-v1", buffer_size=1000)
    with pytest.raises(ValueError, match="too few for one sequence of batch_length \\+ 1 = 65"):
        DreamerV3("CartPole-v1", buffer_size=16 * 32)
    with pytest.raises(ValueError, match="CriticTerm implements critic_loss, which DreamerV3 never folds"):
        DreamerV3("CartPole-v1", extensions=(CriticTerm(),))
    with pytest.raises(ValueError, match="too fine to count updates exactly"):
        DreamerV3("CartPole-v1", train_ratio=999 / 997, batch_size=64, batch_length=512, buffer_size=16_000)
    with pytest.raises(ValueError, match="warmup_updates"):
        DreamerV3("CartPole-v1", warmup_updates=-1)
    with pytest.raises(ValueError, match=r"representation_scale must lie in \[0, inf\)"):
        DreamerV3("CartPole-v1", representation_scale=-0.1, buffer_size=16_000)
    with pytest.raises(ValueError, match=r"free_nats must lie in \[0, inf\)"):
        DreamerV3("CartPole-v1", free_nats=-1.0, buffer_size=16_000)


def test_the_kl_terms_default_to_the_references_and_can_be_set():
    """The reference's `loss_scales.rep: 0.1` and `rssm.free_nats: 1.0` by default; Catch learns only with
    the representation loss lowered (docs/world_models.md), so both are keywords, and they reach the
    config the update reads, the other loss scales untouched."""
    default = DreamerV3("CartPole-v1", buffer_size=16_000).agent_config
    assert default.scales == LossScales() and default.scales.representation == 0.1 and default.free_nats == 1.0
    config = DreamerV3("CartPole-v1", buffer_size=16_000, representation_scale=0.0, free_nats=0.5).agent_config
    assert config.scales == LossScales(representation=0.0) and config.free_nats == 0.5


def test_the_model_sizes_are_the_references():
    sizes = {
        name: DreamerV3("CartPole-v1", model_size=name, buffer_size=16_000).agent_config.size
        for name in ("1m", "12m", "400m")
    }
    assert dataclasses.astuple(sizes["1m"]) == (512, 64, 4, 64, 32, 8)
    assert dataclasses.astuple(sizes["12m"]) == (2048, 256, 16, 256, 32, 8)
    assert dataclasses.astuple(sizes["400m"]) == (12288, 1536, 96, 1536, 32, 8)
