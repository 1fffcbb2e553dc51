"""CloningPretrain (ajax.extensions.pretrain) and the cloning it runs (ajax.extensions.cloning).

The cloning loss and its fit by hand; CloningPretrain brings the fresh state's actor to
the expert on every agent the Why Ajax page names for it (SAC, TD3, REDQ, ASAC, AVG, APO),
measured on held-out states the expert visits; bad input.

ImitationLoss (ajax.extensions.expert) adds the same cloning loss to every actor step; its
fold on each replay actor is checked here too, on these fresh states, whose programs take
seconds each to compile (its on-policy folds: tests/extensions/test_expert.py).
"""

import functools
import inspect
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from ajax import APO, ASAC, AVG, PPO, REDQ, SAC, TD3
from ajax.agents.loop import RunSettings
from ajax.buffers.dataset import expert_transitions
from ajax.environments.create import prepare_env
from ajax.environments.utils import ExpertInAgentUnits
from ajax.extensions import Extension
from ajax.extensions.cloning import cloning_loss, fit
from ajax.extensions.expert import ImitationLoss
from ajax.extensions.pretrain import CloningPretrain, with_initial_head
from ajax.state import SEED_AXIS, LoopTrainState
from tests.conftest import first_seed, pd_expert, smooth_expert

TINY = ("16", "relu")


def linear_actor(w: float, learning_rate: float = 0.1) -> LoopTrainState:
    """mu(s) = w * s: a deterministic actor whose cloning loss is a parabola in w."""
    return LoopTrainState.create(
        apply_fn=lambda p, obs: p["w"] * obs, params={"w": jnp.asarray(w)}, tx=optax.sgd(learning_rate)
    )


def test_cloning_loss_is_the_mean_squared_distance_to_the_expert():
    obs = jnp.array([[1.0, 2.0], [-1.0, 0.5]])
    expert = jnp.array([[0.0, 1.0], [1.0, 1.0]])
    # w = 2: actions [[2, 4], [-2, 1]]; squared distances summed per row 4 + 9 = 13 and 9 + 0 = 9.
    assert float(cloning_loss(linear_actor(2.0), {"w": jnp.asarray(2.0)}, obs, expert)) == pytest.approx(11.0)


def test_fit_clones_a_linear_expert():
    obs = jax.random.normal(jax.random.PRNGKey(0), (256, 1))
    fitted, loss = fit(linear_actor(2.0), obs, 0.5 * obs, jax.random.PRNGKey(1), epochs=20, batch_size=64)
    assert float(fitted.params["w"]) == pytest.approx(0.5, abs=1e-3) and float(loss) < 1e-5


@dataclass(frozen=True)
class KeepsTheFreshActor(Extension):
    """Every init_state runs before any pretrain: this one keeps the untrained actor's parameters."""

    def init_state(self, ctx, agent_state):
        return agent_state.actor_state.params


CLONES = {
    TD3: CloningPretrain(smooth_expert, n_steps=2_000, epochs=30, batch_size=128),
    **{
        agent: CloningPretrain(smooth_expert, n_steps=1_000, epochs=60, batch_size=100)
        for agent in (SAC, REDQ, ASAC, AVG, APO)
    },
}
IMITATION = ImitationLoss(pd_expert, weight=2.5)


@pytest.fixture(scope="module")
def fresh():
    """agent class (and a CloningPretrain other than CLONES') -> (the agent, its fresh run's state before
    the cloning, and after): built once each.

    One program yields both states (seed 0): the fresh state's actor is the one a plain agent starts from.
    """

    @functools.cache
    def build(agent_class, clone=None):
        extensions = (KeepsTheFreshActor(), clone or CLONES[agent_class], IMITATION)
        agent = agent_class("Pendulum-v1", actor_architecture=TINY, critic_architecture=TINY, extensions=extensions)
        one_seed = agent.get_make_train()(run=RunSettings(0, 0, 0))
        fresh_state = jax.jit(jax.vmap(one_seed.fresh_state, axis_name=SEED_AXIS))
        state = first_seed(fresh_state(jax.random.PRNGKey(0)[None]))
        return agent, state.replace(actor_state=state.actor_state.replace(params=state.ext_state[0])), state

    return build


@pytest.fixture(scope="module")
def held_out():
    """States the expert visits, drawn with another key than any pretrain's own rollout, and its actions there."""
    expert = ExpertInAgentUnits.for_env(smooth_expert, prepare_env("Pendulum-v1"))
    obs = expert_transitions(jax.random.PRNGKey(7), prepare_env("Pendulum-v1"), expert, 1_000).obs.reshape(-1, 3)
    return obs, expert(obs)


def mode(actor_state, params, obs):
    """The actor's deterministic action: a distribution's mode (SAC's), or TD3's output."""
    out = actor_state.apply_fn(params, obs)
    return out.mode() if hasattr(out, "mode") else out


def expert_gap(state, held_out) -> float:
    """Mean |mu(s) - expert(s)| in agent units."""
    obs, expert_action = held_out
    return float(jnp.mean(jnp.abs(mode(state.actor_state, state.actor_state.params, obs) - expert_action)))


def test_cloning_pretrain_brings_tds_actor_to_the_expert(fresh, held_out):
    _, plain, cloned = fresh(TD3)
    cloned_gap, plain_gap = expert_gap(cloned, held_out), expert_gap(plain, held_out)
    assert cloned_gap < 0.25 * plain_gap, (cloned_gap, plain_gap)
    assert np.isfinite(float(cloned.ext_state[1]))  # the last cloning loss, kept for the evaluations


@pytest.mark.parametrize("agent_class", [SAC, REDQ, ASAC, AVG, APO], ids=lambda agent: agent.name)
def test_cloning_pretrain_reaches_every_actor_it_is_named_for(fresh, agent_class, held_out):
    _, plain, cloned = fresh(agent_class)
    plain_gap, cloned_gap = expert_gap(plain, held_out), expert_gap(cloned, held_out)
    assert cloned_gap < 0.5 * plain_gap, (agent_class.name, cloned_gap, plain_gap)


@pytest.mark.parametrize("agent_class", [TD3, SAC, REDQ, ASAC], ids=lambda agent: agent.name)
def test_imitation_loss_adds_its_weighted_term_to_every_replay_actor_loss(fresh, agent_class):
    agent, _, state = fresh(agent_class)
    obs = jnp.concatenate(
        [
            jnp.array([[1.0, 0.0, 0.3], [0.0, 1.0, -2.0], [-1.0, 0.0, 1.0]]),
            jax.random.normal(jax.random.PRNGKey(3), (8, 3)),
        ]
    )
    params = state.actor_state.params
    extra, metrics = agent.extensions.fold_actor_loss(state, type("Batch", (), {"obs": obs})(), params)
    # Pendulum's torque box is [-2, 2]: the expert's torque counts halved in agent units.
    by_hand = jnp.mean(jnp.sum(jnp.square(mode(state.actor_state, params, obs) - pd_expert(obs) / 2.0), axis=-1))
    assert float(extra) == pytest.approx(2.5 * float(by_hand), rel=1e-5)
    assert float(metrics["imitation/loss"]) == pytest.approx(float(by_hand), rel=1e-5)


def layers(state) -> dict:
    """The actor's parameters by layer (MLP_0, Dense_0, log_std, ...)."""
    return state.actor_state.params["params"]


def same(a, b) -> bool:
    return all(jax.tree.leaves(jax.tree.map(lambda x, y: bool(jnp.array_equal(x, y)), a, b)))


def test_reset_actor_head_keeps_the_cloned_hidden_layers_and_the_initial_output_layers(fresh, held_out):
    reset = CloningPretrain(smooth_expert, n_steps=1_000, epochs=60, batch_size=100, reset_actor_head=True)
    _, plain, cloned = fresh(SAC, reset)
    _, _, fully_cloned = fresh(SAC)
    assert same(layers(cloned)["Dense_0"], layers(plain)["Dense_0"])  # the mean's layer
    assert same(layers(cloned)["Dense_1"], layers(plain)["Dense_1"])  # the log-std's layer
    assert same(layers(cloned)["MLP_0"], layers(fully_cloned)["MLP_0"])  # the same cloning beneath them
    assert not same(layers(cloned)["MLP_0"], layers(plain)["MLP_0"])


@pytest.mark.parametrize(("agent_class", "log_std"), [(SAC, "Dense_1"), (APO, "log_std")], ids=["SAC", "APO"])
def test_the_cloning_leaves_the_log_std_as_it_started(fresh, agent_class, log_std):
    """The cloning fits the actor's mode, which no log-std parameter moves: no reset of them is needed."""
    _, plain, cloned = fresh(agent_class)
    assert same(layers(cloned)[log_std], layers(plain)[log_std])
    assert not same(layers(cloned)["Dense_0"], layers(plain)["Dense_0"])


def test_an_actor_without_an_output_layer_is_not_reset():
    pid_gains = {"params": {"log_std": jnp.zeros(1), "pid": {"gains": {"K_P": jnp.ones((1, 1))}}}}
    with pytest.raises(ValueError, match="resets the actor's output layer, and this actor has none"):
        with_initial_head(pid_gains, pid_gains)


def test_cloning_pretrain_refuses_what_it_cannot_serve():
    with pytest.raises(ValueError, match="CloningPretrain clones continuous actions"):
        PPO("CartPole-v1", extensions=(CloningPretrain(lambda obs: jnp.zeros(obs.shape[0], jnp.int32)),))
    with pytest.raises(TypeError, match="needs an expert"):
        CloningPretrain()
    with pytest.raises(ValueError, match="CloningPretrain's n_steps must be a positive integer, got 0"):
        CloningPretrain(pd_expert, n_steps=0)
    with pytest.raises(ValueError, match="reset_actor_head must be True or False, got 'yes'"):
        CloningPretrain(pd_expert, reset_actor_head="yes")


@pytest.mark.parametrize(
    ("keyword", "instead"),
    [("skip_actor", "leave it out of extensions="), ("reset_log_std", "no log-std parameter moves.*nothing to reset")],
)
def test_a_keyword_the_design_pages_name_says_what_to_do_instead(keyword, instead):
    """The design pages wrote CloningPretrain(skip_actor=, reset_log_std=): refused by name, not as unexpected."""
    with pytest.raises(TypeError, match=rf"^CloningPretrain takes no {keyword}=: .*{instead}"):
        CloningPretrain(pd_expert, **{keyword: True})
    assert keyword not in inspect.signature(CloningPretrain).parameters
