"""CriticPretrain, the frozen expert critic phi* it keeps, and ExpertCriticMetrics, its reader.

The fit by hand on a two-state critic (a time limit bootstraps, a terminal does not); one
TD3 run on a probe env whose value is known (reward 1 forever, truncated every 5 steps,
gamma 0.9: V = 10), resumed once with the same program: phi* holds that value, stays
frozen while the critic trains on, is not refitted on resuming, and the reader reports
what phi* and the critic say; the progress the fit prints; what construction refuses.
"""

import contextlib
import io

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from ajax import ASAC, AVG, PPO, SAC, TD3
from ajax.environments.interaction import Transition
from ajax.extensions import ExtensionStack
from ajax.extensions.cloning import deterministic_action, fit_expert_critic
from ajax.extensions.critic_pretrain import CriticPretrain, ExpertCriticMetrics
from ajax.extensions.pretrain import CloningPretrain
from ajax.logging.wandb_logging import LoggingConfig
from ajax.state import LoopTrainState
from tests.conftest import first_seed, pd_expert
from tests.probe_envs import EndlessReward


def zero_expert(obs):
    return jnp.zeros((obs.shape[0], 1))


def two_state_critic() -> LoopTrainState:
    """Q_i(s, a) = w_i . s for one-hot states, two members: a table the fit must fill."""
    return LoopTrainState.create(
        apply_fn=lambda params, obs, action: params["w"] @ obs.T,
        params={"w": jnp.zeros((2, 2))},
        tx=optax.sgd(0.5),
        target_params={"w": jnp.zeros((2, 2))},
    )


def test_the_fit_bootstraps_through_a_time_limit_and_stops_at_a_terminal():
    # State A loops on itself, reward 1, cut by a time limit: Q = 1 / (1 - 0.5) = 2. State B
    # pays 1 and truly terminates: Q = 1. Treating the time limit as a terminal would give A 1.
    a, b = jnp.array([1.0, 0.0]), jnp.array([0.0, 1.0])
    rows = Transition(
        obs=jnp.stack([a, a, b, b]),
        action=jnp.zeros((4, 1)),
        reward=jnp.ones(4),
        next_obs=jnp.stack([a, a, b, b]),
        terminated=jnp.array([False, False, True, True]),
        truncated=jnp.array([False, True, False, False]),
    )
    fitted, loss = fit_expert_critic(
        two_state_critic(), rows, jnp.zeros((4, 1)), 0.5, jax.random.PRNGKey(0), epochs=60, batch_size=4
    )
    np.testing.assert_allclose(fitted.params["w"], [[2.0, 1.0], [2.0, 1.0]], atol=1e-3)
    np.testing.assert_array_equal(fitted.target_params["w"], fitted.params["w"])  # the targets start at the fit
    assert float(loss) < 1e-5


SMALL = {"actor_architecture": ("16", "relu"), "critic_architecture": ("32", "relu", "32", "relu")}
FIT = CriticPretrain(zero_expert, n_steps=256, epochs=60, batch_size=64, progress=True)


def probe_td3() -> TD3:
    return TD3(
        EndlessReward(continuous=True, episode_steps=5),
        gamma=0.9,
        learning_starts=100,
        critic_learning_rate=3e-3,
        extensions=(FIT, ExpertCriticMetrics()),
        **SMALL,
    )


@pytest.fixture(scope="module")
def runs():
    """A fresh run of 300 steps (learning from step 100, evaluations every 50), then its resumption
    by 100 steps (the same program): (agent, first seed's state, evaluations, what it printed)
    for each."""
    agent, results, state = probe_td3(), [], None
    for n_timesteps in (300, 100):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            state, evaluations = agent.train(
                seed=[0],
                n_timesteps=n_timesteps,
                initial_state=state,
                num_episode_test=1,
                logging_config=LoggingConfig(log_frequency=50),
            )
            jax.effects_barrier()
        results.append((agent, first_seed(state), evaluations, out.getvalue()))
    return results


def critic_values(state, params) -> np.ndarray:
    """Every critic's Q at the probe's only observation, at three actions."""
    obs, action = jnp.ones((3, 1)), jnp.array([[-0.5], [0.0], [0.5]])
    return np.asarray(state.critic_state.apply_fn(params, obs, action))


def test_phi_star_holds_the_expert_value_the_probe_has(runs):
    _, state, _, _ = runs[0]
    np.testing.assert_allclose(critic_values(state, state.ext_state[0].phi_star), 10.0, atol=0.5)
    assert float(state.ext_state[0].loss) < 0.05


def test_phi_star_stays_frozen_while_the_critic_trains_on_and_resuming_does_not_refit(runs):
    (_, fresh, _, _), (_, resumed, _, printed) = runs
    assert not np.allclose(
        critic_values(fresh, fresh.critic_state.params), critic_values(fresh, fresh.ext_state[0].phi_star)
    )
    jax.tree.map(np.testing.assert_array_equal, resumed.ext_state[0].phi_star, fresh.ext_state[0].phi_star)
    assert float(resumed.ext_state[0].loss) == float(fresh.ext_state[0].loss)
    assert not np.allclose(
        critic_values(resumed, resumed.critic_state.params), critic_values(fresh, fresh.critic_state.params)
    )
    assert printed == ""  # no fit, so no progress


def test_progress_prints_the_fit_loss_ten_times(runs):
    printed = runs[0][3]
    lines = printed.splitlines()
    assert len(lines) == 10, printed
    assert lines[0].startswith("CriticPretrain: epoch 6/60, TD loss ")
    assert lines[-1].startswith("CriticPretrain: epoch 60/60, TD loss ")


def test_the_reader_reports_phi_star_against_the_critic(runs):
    agent, state, evaluations, _ = runs[0]
    metrics = jax.jit(agent.extensions.fold_eval_metrics)(state)
    obs = state.collector_state.last_obs
    action = deterministic_action(state.actor_state, state.actor_state.params, obs)
    q_star = float(jnp.mean(state.critic_state.apply_fn(state.ext_state[0].phi_star, obs, action)))
    q = float(jnp.mean(state.critic_state.apply_fn(state.critic_state.params, obs, action)))
    assert float(metrics["expert_critic/q_star_policy"]) == pytest.approx(q_star, rel=1e-5)
    assert float(metrics["expert_critic/q_policy"]) == pytest.approx(q, rel=1e-5)
    assert float(metrics["expert_critic/drift"]) == pytest.approx(q - q_star, rel=1e-4, abs=1e-5)
    # Evaluations at 50 and 100 come before the first update: the critic is still phi*.
    drift = np.asarray(evaluations["expert_critic/drift"][0])
    timesteps = np.asarray(evaluations["timestep"][0])
    assert np.all(drift[timesteps <= 50] == 0.0) and np.any(drift[timesteps > 100] != 0.0), (timesteps, drift)
    assert np.all(np.isfinite(evaluations["critic_pretrain/td_loss"][0][timesteps > 0]))


def test_a_reader_without_the_fitter_before_it_is_refused():
    fit = CriticPretrain(pd_expert)
    with pytest.raises(
        ValueError, match=r"reads the frozen expert critic phi\*.*add CriticPretrain\(expert, \.\.\.\) before"
    ):
        ExtensionStack((ExpertCriticMetrics(),))
    with pytest.raises(ValueError, match="CriticPretrain comes after it: put it before ExpertCriticMetrics"):
        ExtensionStack((ExpertCriticMetrics(), fit))
    with pytest.raises(ValueError, match=r"Two extensions provide the frozen expert critic phi\*"):
        ExtensionStack((fit, fit, ExpertCriticMetrics()))
    with pytest.raises(ValueError, match="add CriticPretrain"):
        SAC("Pendulum-v1", extensions=(CloningPretrain(pd_expert), ExpertCriticMetrics()))
    ExtensionStack((fit, ExpertCriticMetrics()))  # the fitter first: accepted


@pytest.mark.parametrize(
    ("agent", "env"), [(PPO, "Pendulum-v1"), (ASAC, "Pendulum-v1"), (AVG, "Pendulum-v1")], ids=["PPO", "ASAC", "AVG"]
)
def test_agents_without_a_discounted_q_ensemble_refuse_the_fit_and_its_reader(agent, env):
    for extensions in ((CriticPretrain(pd_expert),), (CriticPretrain(pd_expert), ExpertCriticMetrics())):
        with pytest.raises(
            ValueError, match=f"discounted Q\\(s, a\\) critics with target parameters, which {agent.name}"
        ):
            agent(env, extensions=extensions)


def test_bad_input():
    with pytest.raises(TypeError, match="CriticPretrain needs an expert"):
        CriticPretrain()
    with pytest.raises(ValueError, match="CriticPretrain's epochs must be a positive integer, got 0"):
        CriticPretrain(pd_expert, epochs=0)
    with pytest.raises(ValueError, match=r"CriticPretrain\'s noise must lie in \[0, inf\), got -0.1"):
        CriticPretrain(pd_expert, noise=-0.1)
    with pytest.raises(ValueError, match="normalize_observations=True moves them"):
        SAC("Pendulum-v1", normalize_observations=True, extensions=(CriticPretrain(pd_expert),))
    with pytest.raises(ValueError, match="normalize_rewards=True moves them"):
        TD3("Pendulum-v1", normalize_rewards=True, extensions=(CriticPretrain(pd_expert),))
