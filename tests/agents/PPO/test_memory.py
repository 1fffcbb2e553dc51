"""PPO with memory: contiguous sequences, collection that resets at every episode end, the
bootstrap read with the carry the step left, chunk-wise start carries, bad settings refused,
and the resume contract and a checkpoint round trip for every memory kind.

The cells themselves (step-wise equals sequence, resets, each kind's maths) are
tests/networks/test_memory.py's; the probe that PPO uses its memory is test_memory_probe.py.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import APO, PPO
from ajax.agents.PPO.train_PPO import ProximalActorCritic, chunk_starts, sequences
from ajax.environments.interaction import collect_experience
from ajax.evaluate import evaluate
from ajax.extensions.expert import ImitationLoss
from ajax.networks.memory import MemoryConfig, initial_carry
from tests.conftest import agent_parts, assert_split_through_checkpoint_equals_one_call, pd_expert

KINDS = ("gru", "lstm", "transformer", "mamba")
TINY = ("8", "tanh")


def memory(kind: str) -> MemoryConfig:
    return MemoryConfig(kind=kind, hidden_size=8, window=4, num_heads=2, d_state=4)


def ppo(kind: str = "gru", **kwargs) -> PPO:
    settings = dict(n_envs=2, n_steps=16, n_epochs=2, actor_architecture=TINY, critic_architecture=TINY)
    return PPO("CartPole-v1", memory=memory(kind), **{**settings, **kwargs})


def parts(agent: PPO) -> ProximalActorCritic:
    return agent_parts(ProximalActorCritic, agent)


def test_sequences_are_contiguous_runs_of_one_env():
    # x[t, n] = 10 t + n over T = 6 steps of N = 2 envs, cut into sequences of 3.
    x = 10 * jnp.arange(6)[:, None] + jnp.arange(2)[None, :]
    cut = sequences(x, 3)
    assert cut.shape == (3, 4)
    # Sequence c * N + n is env n's steps [3c, 3c + 3).
    np.testing.assert_array_equal(cut.T, [[0, 10, 20], [1, 11, 21], [30, 40, 50], [31, 41, 51]])
    # The trap: a straight reshape interleaves steps T / L apart and mixes envs.
    assert not np.array_equal(x.reshape(3, 4), cut)


@pytest.fixture(scope="module")
def rollout():
    """24 steps of 2 CartPoles truncated every 7 steps, collected by a GRU PPO before training."""
    agent = ppo(episode_length=7)
    proximal = parts(agent)
    state = proximal.init(jax.random.PRNGKey(0))

    @jax.jit
    def collect(state):
        def tick(state, _):
            return collect_experience(state, proximal.recurrent_act, agent.env_args, proximal.recurrent_bootstrap)

        return jax.lax.scan(tick, state, None, length=24)

    return proximal, state, collect(state)[1]


def test_collection_starts_a_fresh_carry_after_every_episode_end(rollout):
    _, _, transitions = rollout
    done = np.asarray(transitions.terminated | transitions.truncated)
    starts = np.asarray(transitions.extras["episode_start"])
    assert starts[0].all() and done.any() and np.asarray(transitions.truncated).any()
    np.testing.assert_array_equal(starts[1:], done[:-1])


def test_collected_values_are_the_critics_sequence_run(rollout):
    """Step-wise acting equals sequence training, at the agent: the critic's values at collection
    are its run over the whole rollout from the zero carry, resets included."""
    proximal, state, transitions = rollout
    critic = proximal.networks[1]
    carry = initial_carry(proximal.memory, 2)
    _, values = critic.apply(state.critic_state.params, carry, transitions.obs, transitions.extras["episode_start"])
    np.testing.assert_allclose(transitions.extras["value"], values, rtol=1e-5, atol=1e-6)


def test_the_bootstrap_reads_the_final_observation_with_the_carry_the_step_left(rollout):
    proximal, state, transitions = rollout
    critic, params = proximal.networks[1], state.critic_state.params
    starts, next_value = transitions.extras["episode_start"], transitions.extras["next_value"]
    done = np.asarray(transitions.terminated | transitions.truncated)
    # Within an episode the bootstrap is the next step's value: the same carry, the same observation.
    within = ~done[:-1]
    np.testing.assert_allclose(next_value[:-1][within], transitions.extras["value"][1:][within], rtol=1e-5, atol=1e-6)
    # At an episode's end: the steps so far, then the final observation, without a reset.
    t, n = next((t, n) for t, n in np.argwhere(np.asarray(transitions.truncated)) if t + 1 < len(done))
    final_obs = transitions.next_obs[t : t + 1]
    obs = jnp.concatenate([transitions.obs[: t + 1], final_obs])
    resets = jnp.concatenate([starts[: t + 1], jnp.zeros((1, 2), bool)])
    _, values = critic.apply(params, initial_carry(proximal.memory, 2), obs, resets)
    assert float(next_value[t, n]) == pytest.approx(float(values[-1, n]), rel=1e-5, abs=1e-6)
    assert not np.allclose(next_value[t, n], transitions.extras["value"][t + 1, n])  # the reset obs differs


def test_evaluation_carries_both_memories_through_an_episode(rollout):
    """Greedy actions and values read step by step equal the networks' runs over the episode."""
    proximal, state, transitions = rollout
    policy = proximal.evaluation()
    obs = transitions.obs[:4, :1]  # four observations, read as one episode of one env
    carry, actions, values = policy.start(state, 1), [], []
    for t in range(4):
        action, _, carry = policy.act(state, obs[t], carry)
        actions.append(action[0])
        values.append(policy.estimate(state, obs[t], action, carry)[0])
    resets = jnp.zeros((4, 1), bool).at[0].set(True)
    actor, critic = proximal.networks
    _, pi = actor.apply(state.actor_state.params, initial_carry(proximal.memory, 1), obs, resets)
    _, expected_values = critic.apply(state.critic_state.params, initial_carry(proximal.memory, 1), obs, resets)
    np.testing.assert_array_equal(actions, pi.mode()[:, 0])
    np.testing.assert_allclose(values, expected_values[:, 0], rtol=1e-5, atol=1e-6)
    metrics = evaluate(state, jax.random.PRNGKey(3), proximal.env_args, policy, 2)
    assert np.isfinite(metrics["Eval/episodic mean reward"]) and np.isfinite(metrics["Eval/mean bias"])


@pytest.mark.parametrize("kind", ["gru", "transformer"])
def test_chunk_start_carries_continue_the_rollout_instead_of_restarting_it(kind):
    """Sequences of 4 steps from `chunk_starts`' carries give the whole rollout's outputs."""
    proximal = parts(ppo(kind))
    state = proximal.init(jax.random.PRNGKey(1))
    network, params = proximal.networks[1], state.critic_state.params
    obs = jax.random.normal(jax.random.PRNGKey(2), (16, 2, 4))
    starts = jnp.zeros((16, 2), bool).at[0].set(True).at[6, 0].set(True)
    carry = initial_carry(proximal.memory, 2)
    apply = jax.jit(network.apply)
    _, whole = apply(params, carry, obs, starts)
    chunk_carries = jax.jit(chunk_starts, static_argnums=(0, 5))(network, params, carry, obs, starts, 4)
    _, pieces = apply(params, chunk_carries, sequences(obs, 4), sequences(starts, 4))
    np.testing.assert_allclose(pieces, sequences(whole, 4), rtol=1e-5, atol=1e-6)
    _, from_zero = apply(params, initial_carry(proximal.memory, 8), sequences(obs, 4), sequences(starts, 4))
    assert not np.allclose(from_zero, pieces)  # zeroed mid-episode, the sequences would read less


def test_bad_recurrent_settings_are_refused_at_construction():
    with pytest.raises(ValueError, match="bptt_length cuts a recurrent PPO's rollouts"):
        PPO("CartPole-v1", bptt_length=8)
    with pytest.raises(ValueError, match="bptt_length=5 does not divide n_steps=16"):
        ppo(bptt_length=5)
    with pytest.raises(ValueError, match="n_minibatches=3 does not divide the rollout's 8 sequences"):
        ppo(bptt_length=4, n_minibatches=3)
    with pytest.raises(ValueError, match="unroll_length cuts a feed-forward PPO's rollouts"):
        ppo(unroll_length=4)
    with pytest.raises(ValueError, match="takes no extensions yet"):
        PPO("Pendulum-v1", memory=memory("gru"), extensions=[ImitationLoss(pd_expert)])
    with pytest.raises(NotImplementedError, match="APO has no recurrent memory"):
        APO("Pendulum-v1", memory={"kind": "gru", "hidden_size": 8})
    with pytest.raises(ValueError, match="gru"):
        PPO("CartPole-v1", memory={"kind": "gur", "hidden_size": 8})
    assert PPO("CartPole-v1", memory={"kind": "lstm", "hidden_size": 8}).network_args.memory == MemoryConfig("lstm", 8)


TOTAL, HALF = 96, 40  # HALF on no rollout's boundary (rollouts of 32)
CONTRACT = [pytest.param(kind, marks=() if kind == "gru" else pytest.mark.slow) for kind in KINDS]


@pytest.mark.parametrize("kind", CONTRACT)
def test_a_recurrent_run_split_in_two_and_through_a_checkpoint_equals_one_call(kind, tmp_path):
    """With `bptt_length` and two minibatches, so the chunk-wise carries are in the program."""

    def agent():
        return ppo(kind, bptt_length=4, n_minibatches=2)

    whole = assert_split_through_checkpoint_equals_one_call(agent, TOTAL, HALF, tmp_path / "state.ckpt")
    leaves = jax.tree.leaves(whole.collector_state.memory.carries)
    assert leaves and any(np.abs(np.asarray(leaf)).sum() > 0 for leaf in leaves)
