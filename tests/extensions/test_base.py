"""Extension phases and their folds (ajax.extensions.base).

Each agent declares the phases it folds, as the Architecture page lists them; construction
refuses a phase the agent never folds and a batch field its batches lack. Each phase is
folded with an extension of known effect and the effect checked: on_target shifts the
target, critic_loss and actor_loss add a term of known value and gradient, init_state and
pretrain run in that order on fresh runs only, post_update sees the update it follows (a
planted fault running it before the update is caught), eval_metrics reaches the
evaluations under its own name. The action phase's effect: tests/extensions/test_expert_actions.py.
The DQN run also carries PriorData, whose check on DQN's replay is here to share its program.
"""

from dataclasses import dataclass
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from ajax import DQN
from ajax.agents.loop import TrainLoop, actor_step, critic_step
from ajax.agents.registry import AGENTS
from ajax.buffers import collect_dataset
from ajax.extensions import LOOP_PHASES, Extension, ExtensionStack
from ajax.extensions.prior_data import PriorData
from ajax.logging.wandb_logging import LoggingConfig
from ajax.state import LoopTrainState
from tests.conftest import cartpole_expert, first_seed
from tests.kit import env_of

# Phases -----------------------------------------------------------------------------------

REPLAY_CRITIC = {"on_target", "critic_loss", "actor_loss"}  # critic_step and actor_step / soft_actor_step
FOLDED = {
    "SAC": REPLAY_CRITIC | {"action"},  # its action pipeline
    "TD3": REPLAY_CRITIC,
    "REDQ": REPLAY_CRITIC,
    "TQC": {"critic_loss", "actor_loss"},  # its critics are quantiles: no phase reads one value per action
    "CrossQ": {"critic_loss", "actor_loss"},  # no target critics: its target comes from the critic's own pass
    "SimbaV2": {"critic_loss", "actor_loss"},  # categorical critics: no phase reads one value per action
    "ASAC": REPLAY_CRITIC,
    "AVG": REPLAY_CRITIC,
    "DQN": {"on_target", "critic_loss"},
    "PPO": {"actor_loss"},
    "APO": {"actor_loss"},
    "PQN": set(),
    "APG": {"actor_loss"},
    "UDRL": {"actor_loss"},
    "DAgger": {"actor_loss"},
    "IQL": REPLAY_CRITIC,
    "DreamerV3": set(),
    "TDMPC2": set(),
    "TDMPC2MultiTask": set(),
}


def required(name: str) -> dict:
    """What an agent cannot be built without: IQL's offline dataset (any that fits Pendulum: nothing trains)."""
    if name != "IQL":
        return {}
    from ajax.buffers import Dataset

    zeros = np.zeros(64, np.float32)
    obs = np.zeros((64, 3), np.float32)
    dataset = Dataset(obs, zeros[:, None], zeros, obs, zeros.astype(bool), zeros.astype(bool))
    return {"dataset": dataset}


def test_every_agent_declares_the_phases_the_page_lists():
    assert set(AGENTS) <= set(FOLDED), sorted(set(AGENTS) - set(FOLDED))
    for name, agent in AGENTS.items():
        assert agent.supported_extension_phases == LOOP_PHASES | FOLDED[name], name


@dataclass(frozen=True)
class OverridesEveryAction(Extension):
    def action(self, ctx, agent_state, ext_state, obs, action):
        return action


@dataclass(frozen=True)
class AddsACriticLoss(Extension):
    def critic_loss(self, ctx, agent_state, ext_state, batch, critic_params):
        return 0.0, {}


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_an_unfolded_phase_is_refused_at_construction(name):
    agent = AGENTS[name]
    if "action" in agent.supported_extension_phases:
        agent(env_of(name), extensions=(OverridesEveryAction(),))
    else:
        with pytest.raises(ValueError, match=f"action, which {name} never folds"):
            agent(env_of(name), extensions=(OverridesEveryAction(),), **required(name))
    if "critic_loss" not in agent.supported_extension_phases:
        with pytest.raises(ValueError, match=f"critic_loss, which {name} never folds"):
            agent(env_of(name), extensions=(AddsACriticLoss(),), **required(name))
    else:
        agent(env_of(name), extensions=(AddsACriticLoss(),), **required(name))


@dataclass(frozen=True)
class ReadsTheNextObservation(Extension):
    batch_fields = frozenset({"next_obs"})

    def actor_loss(self, ctx, agent_state, ext_state, batch, actor_params):
        return jnp.mean(batch.next_obs), {}


def test_a_batch_field_the_agent_does_not_store_is_refused_at_construction():
    from ajax import PPO, TD3, UDRL

    TD3("Pendulum-v1", extensions=(ReadsTheNextObservation(),))  # a replay holds next_obs
    with pytest.raises(ValueError, match="ReadsTheNextObservation reads next_obs of the update's batch, which PPO"):
        PPO("Pendulum-v1", extensions=(ReadsTheNextObservation(),))
    with pytest.raises(ValueError, match="which UDRL does not store .its batches hold action, command, obs"):
        UDRL("Pendulum-v1", extensions=(ReadsTheNextObservation(),))


# Folds of known effect: the replay critic's and actor's steps, by hand ----------------------

LR = 0.1


@dataclass(frozen=True)
class ShiftTarget(Extension):
    shift: float = 0.5

    def on_target(self, ctx, agent_state, ext_state, batch, target):
        return target + self.shift, {"shift/mean_target": jnp.mean(target + self.shift)}


@dataclass(frozen=True)
class WeightDecay(Extension):
    """k * ||w||^2 on the critic's or the actor's parameters."""

    k: float = 0.3

    def term(self, params):
        return self.k * jnp.sum(jnp.square(params["w"])), {"decay/term": self.k * jnp.sum(jnp.square(params["w"]))}

    def critic_loss(self, ctx, agent_state, ext_state, batch, critic_params):
        return self.term(critic_params)

    def actor_loss(self, ctx, agent_state, ext_state, batch, actor_params):
        return self.term(actor_params)


def linear(w) -> LoopTrainState:
    return LoopTrainState.create(apply_fn=lambda p, x: x @ p["w"], params={"w": jnp.asarray(w)}, tx=optax.sgd(LR))


def agent_state(n_extensions: int = 1):
    """What a fold reads of the agent state: its keys, counters and the extensions' entries."""
    collector = SimpleNamespace(timestep=jnp.int32(0), episode_steps=None)
    return SimpleNamespace(
        eval_rng=jax.random.PRNGKey(0),
        collector_state=collector,
        n_updates=jnp.int32(0),
        ext_state=((),) * n_extensions,
    )


BATCH = SimpleNamespace(obs=jnp.array([[1.0, 2.0], [0.5, -1.0], [-2.0, 0.0]]))
TARGET = jnp.array([1.0, -1.0, 0.5])


def td_loss(params, target):
    q = BATCH.obs @ params["w"]
    return jnp.mean(jnp.square(q - target)), jnp.mean(q)


def test_on_target_shifts_the_target_the_critic_regresses_on():
    critic = linear([0.2, -0.4])
    shifted, loss, _, _, metrics = critic_step(
        critic, td_loss, TARGET, BATCH, agent_state(), ExtensionStack((ShiftTarget(),))
    )
    by_hand, by_hand_loss, _, _, _ = critic_step(critic, td_loss, TARGET + 0.5, BATCH, agent_state(0), ExtensionStack())
    np.testing.assert_allclose(shifted.params["w"], by_hand.params["w"], rtol=1e-6)
    assert float(loss) == pytest.approx(float(by_hand_loss)) and float(metrics["shift/mean_target"]) == pytest.approx(
        float(jnp.mean(TARGET)) + 0.5
    )


def test_a_critic_and_an_actor_loss_term_add_their_value_and_gradient():
    w = jnp.array([0.2, -0.4])
    stack = ExtensionStack((WeightDecay(0.3),))
    td, _ = td_loss({"w": w}, TARGET)
    td_grad = jax.grad(lambda p: td_loss(p, TARGET)[0])({"w": w})["w"]
    critic, loss, _, norm, metrics = critic_step(linear(w), td_loss, TARGET, BATCH, agent_state(), stack)
    assert float(loss) == pytest.approx(float(td) + 0.3 * float(jnp.sum(w**2)), rel=1e-6)
    np.testing.assert_allclose(critic.params["w"], w - LR * (td_grad + 2 * 0.3 * w), rtol=1e-6)
    assert float(norm) == pytest.approx(float(jnp.linalg.norm(td_grad + 0.6 * w)), rel=1e-6)
    assert float(metrics["decay/term"]) == pytest.approx(0.3 * float(jnp.sum(w**2)), rel=1e-6)

    def policy_loss(params):
        return -jnp.mean(BATCH.obs @ params["w"]), ()

    actor, loss, _, _, _ = actor_step(linear(w), policy_loss, BATCH, agent_state(), stack)
    mean_obs = jnp.mean(BATCH.obs, axis=0)
    assert float(loss) == pytest.approx(float(-mean_obs @ w + 0.3 * jnp.sum(w**2)), rel=1e-6)
    np.testing.assert_allclose(actor.params["w"], w - LR * (-mean_obs + 0.6 * w), rtol=1e-6)


# The loop's phases on a real run ------------------------------------------------------------


def digest(params) -> jax.Array:
    """One number that changes with any parameter."""
    return sum(jnp.sum(x * (i + 1)) for i, x in enumerate(jax.tree.leaves(params)))


@dataclass(frozen=True)
class Probe(Extension):
    """init_state then pretrain (3, doubled), post_update (the network it sees, a count), eval_metrics."""

    def init_state(self, ctx, agent_state):
        return {"init": jnp.float32(3.0), "seen": jnp.float32(0.0), "count": jnp.int32(0)}

    def pretrain(self, ctx, agent_state, ext_state):
        return agent_state, {**ext_state, "init": 2 * ext_state["init"]}

    def post_update(self, ctx, agent_state, ext_state):
        seen = digest(agent_state.critic_state.params)
        return agent_state, {**ext_state, "seen": seen, "count": ext_state["count"] + 1}

    def eval_metrics(self, ctx, agent_state, ext_state):
        return {"probe/count": ext_state["count"], "probe/n_updates": agent_state.n_updates}


def probe_agent(*extensions) -> DQN:
    return DQN(
        "CartPole-v1",
        learning_starts=100,
        batch_size=16,
        buffer_size=2000,
        architecture=("16", "relu"),
        extensions=(Probe(), *extensions),
    )


def post_update_saw_the_update(state) -> bool:
    """The network post_update last saw is the one the last update left."""
    return bool(np.isclose(state.ext_state[0]["seen"][0], digest(first_seed(state.critic_state.params))))


@pytest.fixture(scope="module")
def probed():
    """300 steps of a 600-step run, then its other 300: one program for both calls (same shape).

    The run also carries PriorData (ajax.extensions.prior_data), whose check on DQN's replay is
    here rather than in test_prior_data.py, so that it reads this program instead of compiling one.
    """
    data = collect_dataset("CartPole-v1", cartpole_expert, 500, seed=0)
    agent = probe_agent(PriorData(data))
    logging = LoggingConfig(log_frequency=100)
    first = agent.train(seed=[0], n_timesteps=300, total_timesteps=600, logging_config=logging)
    resumed = agent.train(n_timesteps=300, initial_state=jax.tree.map(jnp.copy, first[0]), logging_config=logging)
    return first, resumed, data


def test_loop_phases_run_in_order_with_their_effect(probed):
    (state, evaluations), _, _ = probed
    entry = state.ext_state[0]
    assert float(entry["init"][0]) == 6.0  # init_state's 3, then pretrain's doubling
    assert int(entry["count"][0]) == int(state.n_updates[0]) == 201  # one post_update per update, 100 to 300
    assert post_update_saw_the_update(state)
    np.testing.assert_array_equal(evaluations["probe/count"][0], [1, 101, 201])  # at timesteps 100, 200, 300
    np.testing.assert_array_equal(evaluations["probe/count"][0], evaluations["probe/n_updates"][0])


def test_a_resumed_run_neither_initialises_nor_pretrains_again(probed):
    _, (resumed, evaluations), _ = probed
    assert float(resumed.ext_state[0]["init"][0]) == 6.0 and int(resumed.ext_state[0]["count"][0]) == 501
    np.testing.assert_array_equal(evaluations["probe/count"][0], [301, 401, 501])


def test_prior_data_puts_the_dataset_in_dqns_replay_then_its_own_steps(probed):
    (state, _), _, data = probed
    buffer = state.collector_state.buffer_state
    assert int(np.asarray(buffer.current_index)[0]) == 500 + 300
    for field in ("obs", "action", "reward", "next_obs", "terminated", "truncated"):
        np.testing.assert_array_equal(np.asarray(getattr(buffer.experience, field))[0, 0, :500], getattr(data, field))


def test_a_post_update_run_before_the_update_is_caught(monkeypatch):
    def before_the_update(self, update):
        def run(state, *experience):
            state = self.extensions.fold_post_update(state)  # the planted fault
            state, aux = update(state, *experience)
            return state.replace(n_updates=state.n_updates + 1), aux

        return run

    monkeypatch.setattr(TrainLoop, "updated", before_the_update)
    state, _ = probe_agent().train(seed=[0], n_timesteps=300)  # no evaluation: the state is what it reads
    assert not post_update_saw_the_update(state)
