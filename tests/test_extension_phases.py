"""Each agent declares the extension phases it folds, as the Architecture page lists them,
and construction refuses an extension whose phase the agent never folds."""

from dataclasses import dataclass

import jax.numpy as jnp
import pytest

from ajax.agents.registry import AGENTS
from ajax.extensions import LOOP_PHASES, Extension

REPLAY_CRITIC = {"on_target", "critic_loss", "actor_loss"}  # critic_step and actor_step / soft_actor_step
FOLDED = {
    "SAC": REPLAY_CRITIC | {"action"},  # its action pipeline
    "TD3": REPLAY_CRITIC,
    "REDQ": REPLAY_CRITIC,
    "ASAC": REPLAY_CRITIC,
    "AVG": REPLAY_CRITIC,
    "DQN": {"on_target", "critic_loss"},
    "PPO": {"actor_loss"},
    "APO": {"actor_loss"},
    "PQN": set(),
    "UDRL": {"actor_loss"},
    "DAgger": {"actor_loss"},
    "IQL": REPLAY_CRITIC,
}
ENV = {True: "Pendulum-v1", False: "CartPole-v1", None: "CartPole-v1"}


def required(name: str) -> dict:
    """What an agent cannot be built without: IQL's offline dataset."""
    if name != "IQL":
        return {}
    from ajax.buffers import collect_dataset

    return {"dataset": collect_dataset("Pendulum-v1", lambda obs: jnp.zeros((*obs.shape[:-1], 1)), 64)}


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
        agent(ENV[agent.continuous], extensions=(OverridesEveryAction(),))
    else:
        with pytest.raises(ValueError, match=f"action, which {name} never folds"):
            agent(ENV[agent.continuous], extensions=(OverridesEveryAction(),), **required(name))
    if "critic_loss" not in agent.supported_extension_phases:
        with pytest.raises(ValueError, match=f"critic_loss, which {name} never folds"):
            agent(ENV[agent.continuous], extensions=(AddsACriticLoss(),), **required(name))
    else:
        agent(ENV[agent.continuous], extensions=(AddsACriticLoss(),), **required(name))


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
