"""UDRL (Schmidhuber 2019; Srivastava et al. 2019): commands by hand, the episode buffer, probes, learning.

Checked against hand-computed numbers: the command update while acting (Srivastava et al.,
Algorithm 2: d_r <- d_r - r_t, d_h <- max(d_h - 1, 1)), the exploratory and exploiting
commands from the top-K episodes ("Sampling exploratory commands": d_h the top-K's mean
length, d_r ~ U[M, M + S]), the hindsight command of a stored step (its return to the
episode's end, the steps left), the command scaling, and the buffer's rings.
Calibration of the learning test: docs/agents/udrl.md.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax.agents.loop import RunSettings
from ajax.agents.UDRL import UDRL
from ajax.agents.UDRL.core import (
    exploiting_command,
    exploratory_command,
    hindsight_command,
    scale_command,
    top_episode_statistics,
    update_command,
)
from ajax.agents.UDRL.episodes import SegmentStep, advance, empty_episodes, sample_relabelled, write_segment
from ajax.agents.UDRL.networks import CommandConditionedPolicy
from ajax.environments.create import prepare_env
from ajax.evaluate import EvalPolicy, PolicyCarry, evaluate
from ajax.logging.wandb_logging import LoggingConfig
from tests.conftest import count_conds, last_returns
from tests.probe_envs import BestAction, EndlessReward

SMALL = ("16", "relu")


# The maths ---------------------------------------------------------------------------------
def test_command_update_while_acting():
    command = jnp.array([[10.0, 5.0], [3.0, 1.0], [-2.0, 2.0]])
    # The return still to collect drops by each reward; the horizon counts down and stops at 1.
    np.testing.assert_allclose(
        update_command(command, jnp.array([1.0, 2.0, -0.5])), [[9.0, 4.0], [1.0, 1.0], [-1.5, 1.0]]
    )


def test_commands_from_the_top_k_episodes():
    # Slot 5 is still filling (length 0): its return does not count, however high.
    returns = jnp.array([5.0, 1.0, 9.0, 7.0, 3.0, 100.0])
    lengths = jnp.array([10, 2, 30, 20, 6, 0])
    stats = top_episode_statistics(returns, lengths, 3)
    # The top 3 are 9, 7, 5: mean 7, std sqrt((4 + 0 + 4) / 3), mean length (30 + 20 + 10) / 3.
    np.testing.assert_allclose(
        [stats.return_mean, stats.return_std, stats.horizon], [7.0, np.sqrt(8 / 3), 20.0], rtol=1e-6
    )
    # Fewer finished episodes than K: all of them. None: return 0 with no spread, horizon 1.
    two = top_episode_statistics(returns, jnp.array([10, 0, 30, 0, 0, 0]), 3)
    np.testing.assert_allclose([two.return_mean, two.return_std, two.horizon], [7.0, 2.0, 20.0])
    none = top_episode_statistics(returns, jnp.zeros(6, jnp.int32), 3)
    np.testing.assert_allclose([none.return_mean, none.return_std, none.horizon], [0.0, 0.0, 1.0])

    # Exploration: d_h = 20, d_r = M + S u with u ~ U[0, 1), one draw per env.
    key = jax.random.PRNGKey(3)
    explore = exploratory_command(stats, key, 4)
    np.testing.assert_allclose(explore[:, 0], 7.0 + np.sqrt(8 / 3) * jax.random.uniform(key, (4,)), rtol=1e-6)
    np.testing.assert_allclose(explore[:, 1], [20.0] * 4)
    many = exploratory_command(stats, jax.random.PRNGKey(0), 10_000)[:, 0]
    assert 7.0 <= float(many.min()) and float(many.max()) <= 7.0 + np.sqrt(8 / 3)
    # Exploitation (evaluation): the mean return and mean length, no noise.
    np.testing.assert_allclose(exploiting_command(stats, 2), [[7.0, 20.0]] * 2)


def test_hindsight_command_and_scaling():
    # An episode paying 1, 2, 3, 4: the return before each step is 0, 1, 3, 6, the episode's 10.
    t1 = jnp.array([0, 2, 3])
    before = jnp.array([0.0, 1.0, 3.0, 6.0])[t1]
    np.testing.assert_allclose(hindsight_command(10.0, before, 4, t1), [[10.0, 4.0], [7.0, 2.0], [4.0, 1.0]])
    np.testing.assert_allclose(scale_command(jnp.array([[10.0, 50.0]]), 0.02, 0.01), [[0.2, 0.5]], rtol=1e-6)


def segment_of(buffer, rewards, done, returns_before):
    """The records acting makes for a segment of `done` flags (time, env), and the buffer's new places."""
    records = []
    for t in range(done.shape[0]):
        records.append(
            SegmentStep(
                obs=jnp.stack([buffer.step, buffer.episode], axis=-1).astype(jnp.float32),  # where the step lies
                action=buffer.step % 2,
                return_before=returns_before[t],
                episode=buffer.episode,
                step=buffer.step,
                done=done[t],
                episode_return=returns_before[t] + rewards[t],
            )
        )
        buffer = advance(buffer, done[t])
    return buffer, jax.tree.map(lambda *x: jnp.stack(x), *records)


def test_buffer_rings_keep_each_envs_latest_episodes():
    env_args = prepare_env("CartPole-v1", n_envs=2, episode_length=4)
    buffer = empty_episodes(env_args, 4)  # env 0 owns slots 0 and 2, env 1 slots 1 and 3; 4 steps per episode
    buffer = buffer.replace(obs=jnp.zeros((4, 4, 2)))
    # Segment 1. Env 0 ends an episode at every step: its episodes 0, 1, 2 finish and 3 begins,
    # so its ring keeps episode 2 (slot 0) beside the one filling (slot 2). Env 1 runs steps
    # 0-2 of its episode 0 (slot 1), paying 1, 2, 3.
    done = jnp.array([[True, False]] * 3)
    rewards = jnp.array([[5.0, 1.0], [6.0, 2.0], [7.0, 3.0]])
    before = jnp.array([[0.0, 0.0], [0.0, 1.0], [0.0, 3.0]])
    buffer, segment = segment_of(buffer, rewards, done, before)
    buffer = jax.jit(write_segment)(buffer, segment)
    np.testing.assert_array_equal(buffer.episode, [3, 0])
    np.testing.assert_array_equal(buffer.step, [0, 3])
    np.testing.assert_array_equal(buffer.length, [1, 0, 0, 0])
    np.testing.assert_allclose(buffer.episode_return[0], 7.0)
    np.testing.assert_allclose(buffer.obs[0, 0], [0.0, 2.0])  # episode 2's step 0, not episode 0's
    np.testing.assert_allclose(buffer.obs[1, :3, 0], [0.0, 1.0, 2.0])
    # Segment 2: env 1 finishes its episode at step 3 (paying 4: 10 in all) and begins episode 1.
    done = jnp.array([[False, True]])
    buffer, segment = segment_of(buffer, jnp.array([[0.0, 4.0]]), done, jnp.array([[0.0, 6.0]]))
    buffer = jax.jit(write_segment)(buffer, segment)
    np.testing.assert_array_equal(buffer.length, [1, 4, 0, 0])
    np.testing.assert_allclose(buffer.episode_return[:2], [7.0, 10.0])
    np.testing.assert_allclose(buffer.return_before[1], [0.0, 1.0, 3.0, 6.0])
    np.testing.assert_array_equal(buffer.action[1], [0, 1, 0, 1])

    # Relabelled samples come from finished episodes only, each with the command it fulfilled.
    obs, command, action = sample_relabelled(buffer, jax.random.PRNGKey(0), 512)
    step, episode = np.asarray(obs[:, 0], int), np.asarray(obs[:, 1], int)
    from_env_1 = episode == 0  # env 0's finished episode is its episode 2
    assert 0 < from_env_1.mean() < 1 and set(step[from_env_1]) == {0, 1, 2, 3}
    expected = np.stack([10.0 - np.array([0.0, 1.0, 3.0, 6.0])[step], 4 - step], axis=-1)
    np.testing.assert_allclose(command[from_env_1], expected[from_env_1])
    np.testing.assert_allclose(command[~from_env_1], [[7.0, 1.0]] * int((~from_env_1).sum()))
    assert np.all(episode[~from_env_1] == 2) and np.all(step[~from_env_1] == 0)
    np.testing.assert_array_equal(action, step % 2)


def test_the_evaluation_carries_the_command_through_each_episode():
    # Reward 1 per step, 5 steps an episode. The carry starts at (3, 4) and the "entropy"
    # reports its desired return: 3, 2, 1, 0, -1 over the episode, mean 1.
    env_args = prepare_env(EndlessReward(episode_steps=5))

    def greedy(state, obs, command):
        return jnp.zeros(obs.shape[0], jnp.int32), command[:, 0], command

    carry = PolicyCarry(init=lambda state, n: jnp.tile(jnp.array([3.0, 4.0]), (n, 1)), advance=update_command)
    metrics = evaluate(None, jax.random.PRNGKey(0), env_args, EvalPolicy(greedy, carry=carry), 2)
    np.testing.assert_allclose(metrics["Eval/episodic entropy"], 1.0)
    np.testing.assert_allclose(metrics["Eval/episodic mean reward"], 5.0)
    assert np.isnan(metrics["Eval/mean bias"])  # no critic


# Probes ---------------------------------------------------------------------------------------
def probe(env, n_timesteps, logging_config=None, seed=0):
    """The policy on the exploiting command after training, the command statistics, the evaluations.

    Probe returns lie in [0, 1]: a return scale of 1 keeps the commands apart at the input.
    """
    agent = UDRL(
        env,
        n_envs=2,
        n_steps=32,
        n_updates_per_iter=20,
        batch_size=64,
        buffer_size=64,
        top_k=8,
        return_scale=1.0,
        architecture=SMALL,
    )
    state, evaluations = agent.train(seed=seed, n_timesteps=n_timesteps, logging_config=logging_config)
    network = CommandConditionedPolicy(
        agent.network_args.actor_architecture, 1 if env.continuous else 2, env.continuous
    )
    params = jax.tree.map(lambda x: x[0], state.actor_state.params)
    statistics = jax.tree.map(lambda x: x[0], state.command_statistics)
    command = scale_command(exploiting_command(statistics, 1), 1.0, agent.agent_config.horizon_scale)
    return network.apply(params, jnp.ones((1, 1)), command), statistics, evaluations


def test_probe_the_best_episodes_command_the_rewarded_action():
    # One step, then a terminal; action 1 pays 1, action 0 pays 0. The best episodes paid 1 in
    # one step: the exploiting command is (1, 1), and on it the policy takes action 1.
    pi, statistics, evaluations = probe(BestAction(), 2048, LoggingConfig(log_frequency=2048))
    np.testing.assert_allclose([statistics.return_mean, statistics.return_std, statistics.horizon], [1.0, 0.0, 1.0])
    assert float(pi.probs[0, 1]) > 0.95
    np.testing.assert_allclose(evaluations["Eval/episodic mean reward"][0, -1], 1.0)


def test_probe_continuous_the_command_of_the_best_episodes_finds_the_best_action():
    # One step paying 1 - (a - 0.5)^2: the best episodes paid nearly 1, and on their command the
    # Gaussian's mean moves from about 0 (untrained) to within 0.2 of 0.5 (seeds 0-3: 0.55,
    # 0.63, 0.42, 0.51; the command resolves returns near 1 only so finely).
    pi, statistics, _ = probe(BestAction(continuous=True), 2048)
    assert float(statistics.return_mean) > 0.98 and abs(float(pi.mode()[0, 0]) - 0.5) < 0.2


def test_probe_episodes_spanning_segments_are_stored_whole():
    # Reward 1 per step, 5 steps an episode, segments of 3 steps: every finished episode holds
    # 5 steps with returns-before 0..4, and the commands ask for 5 in 5 steps.
    agent = UDRL(
        EndlessReward(episode_steps=5),
        n_envs=2,
        n_steps=3,
        n_updates_per_iter=2,
        batch_size=16,
        buffer_size=8,
        top_k=4,
        architecture=SMALL,
    )
    state, _ = agent.train(seed=0, n_timesteps=60)
    episodes = jax.tree.map(lambda x: x[0], state.episodes)
    finished = np.asarray(episodes.length) > 0
    assert finished.sum() == 6  # 8 slots, one filling per env
    np.testing.assert_array_equal(episodes.length[finished], 5)
    np.testing.assert_allclose(episodes.episode_return[finished], 5.0)
    np.testing.assert_allclose(episodes.return_before[finished], [[0.0, 1.0, 2.0, 3.0, 4.0]] * 6)
    statistics = state.command_statistics
    np.testing.assert_allclose(
        [statistics.return_mean, statistics.return_std, statistics.horizon], [[5.0], [0.0], [5.0]]
    )


# Learning ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_udrl_learns_cartpole():
    scores = last_returns(UDRL("CartPole-v1"), 30_000, 3_000)
    assert scores.mean() >= 120 and scores.min() >= 80, scores


def test_continuous_actions_train_with_finite_losses():
    agent = UDRL(
        "Pendulum-v1",
        n_envs=2,
        n_steps=200,
        n_updates_per_iter=8,
        batch_size=64,
        buffer_size=8,
        top_k=4,
        architecture=SMALL,
    )
    state, evaluations = agent.train(seed=0, n_timesteps=1600, logging_config=LoggingConfig(log_frequency=800))
    assert np.all(np.isfinite(evaluations["policy/policy_loss"])), evaluations["policy/policy_loss"]
    assert np.all(np.isfinite(evaluations["Eval/episodic mean reward"]))
    assert int(state.episodes.length.max()) == 200
    assert np.all(np.abs(np.asarray(state.episodes.action)) <= 1.0)  # the agent's units


# Budget (determinism and the resume contract: tests/agents/test_resume_contract.py) ---------
TOTAL, LOG = 512, 128


def small_udrl():
    return UDRL(
        "CartPole-v1",
        n_envs=2,
        n_steps=32,
        n_updates_per_iter=4,
        batch_size=32,
        buffer_size=16,
        top_k=4,
        architecture=SMALL,
    )


def test_whole_segments_one_more_than_the_budget_holds():
    state, _ = small_udrl().train(seed=[0, 1], n_timesteps=TOTAL)
    # Whole segments of 2 x 32 steps, one more than the budget holds, one update each.
    assert state.collector_state.timestep.tolist() == [576, 576] and state.n_updates.tolist() == [9, 9]


def test_the_evaluation_gate_stays_a_branch_under_the_seed_vmap():
    # Two gates: the evaluation's, on the shared timestep, and the updates', on whether this
    # seed's buffer holds a finished episode yet. Only the second may become a select.
    run = RunSettings(start_timestep=0, end_timestep=TOTAL, total_timesteps=TOTAL, log_frequency=LOG)
    one_seed = small_udrl().get_make_train()(run=run)
    key = jax.random.PRNGKey(0)
    single = count_conds(jax.make_jaxpr(lambda k: one_seed(k, None))(key).jaxpr)
    batched = count_conds(jax.make_jaxpr(jax.vmap(lambda k: one_seed(k, None)))(jnp.stack([key, key])).jaxpr)
    assert (single, batched) == (2, 1)


# Bad input ------------------------------------------------------------------------------------
def test_bad_input():
    with pytest.raises(ValueError, match="n_updates_per_iter must be a positive integer"):
        UDRL("CartPole-v1", n_updates_per_iter=0)
    with pytest.raises(ValueError, match=r"buffer_size=6 must hold at least 2 episodes per env .* at least 8"):
        UDRL("CartPole-v1", n_envs=4, buffer_size=6, top_k=1)
    with pytest.raises(ValueError, match=r"top_k=40 exceeds the 28 finished episodes"):
        UDRL("CartPole-v1", n_envs=4, buffer_size=32, top_k=40)
    with pytest.raises(ValueError, match="architecture needs at least one layer"):
        UDRL("CartPole-v1", architecture=())
    with pytest.raises(ValueError, match="horizon_scale must be a finite number above 0, got 0.0"):
        UDRL("CartPole-v1", horizon_scale=0.0)
    with pytest.raises(NotImplementedError, match="UDRL has no recurrent memory"):
        UDRL("CartPole-v1", memory={"kind": "gru"})
    with pytest.raises(TypeError, match="n_epochs"):
        UDRL("CartPole-v1", n_epochs=4)  # renamed: n_updates_per_iter
