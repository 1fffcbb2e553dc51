"""The non-finite guard: a run whose numbers go NaN or infinite says which seed, from which
timestep, and whether the env or the updates went first; a healthy run says nothing."""

import warnings

import jax.numpy as jnp
import numpy as np
import pytest

from ajax import PPO, SAC, TD3
from ajax.extensions.expert import ImitationLoss
from ajax.nonfinite import NonFiniteError, NonFiniteWarning
from tests.probe_envs import EndlessReward

SMALL = ("16", "relu")


class NaNObservationAtStep3(EndlessReward):
    """EndlessReward (10-step episodes) whose observation is NaN at the third step of each episode."""

    def step_env(self, key, state, action, params):
        obs, state, reward, terminated, info = super().step_env(key, state, action, params)
        return jnp.where(state.time == 3, jnp.nan, obs), state, reward, terminated, info


def sac(env="Pendulum-v1", agent=SAC, **kwargs):
    """A tiny replay actor-critic (SAC, or `agent` of the same arguments), learning from step 8."""
    return agent(
        env,
        n_envs=1,
        learning_starts=8,
        batch_size=8,
        buffer_size=64,
        actor_architecture=SMALL,
        critic_architecture=SMALL,
        **kwargs,
    )


def ppo(env="CartPole-v1", **kwargs):
    return PPO(
        env,
        n_envs=1,
        n_steps=8,
        batch_size=8,
        n_epochs=1,
        actor_architecture=SMALL,
        critic_architecture=SMALL,
        **kwargs,
    )


@pytest.mark.parametrize("make", [sac, ppo], ids=["replay", "on-policy"])
def test_an_env_emitting_nan_is_named_with_the_step_it_did(make):
    env = NaNObservationAtStep3(continuous=make is sac, episode_steps=10)
    with pytest.warns(NonFiniteWarning) as caught:
        state, _ = make(env).train(seed=[0, 1], n_timesteps=16)
    message = str(caught[0].message)
    assert "seed 0: observations from the env" in message and "seed 1: observations from the env" in message
    assert "non-finite from timestep 3" in message and "check the env" in message
    assert np.asarray(state.nonfinite.timestep).tolist() == [3, 3]


def test_a_diverging_update_is_told_from_an_env_fault_and_can_raise():
    with pytest.raises(NonFiniteError, match=r"seed 0: .*(a loss|the network parameters).* non-finite from timestep"):
        ppo(actor_learning_rate=1e30, critic_learning_rate=1e30).train(seed=0, n_timesteps=32, on_nonfinite="raise")


def test_an_expert_answering_nan_is_refused_before_it_can_poison_the_loss():
    """Such an expert once trained on and was reported by this guard; it is now refused where it
    enters, at construction (a diverging update still reaches the guard: the test above)."""
    with pytest.raises(ValueError, match=r"ImitationLoss's expert .*non-finite action"):
        sac(extensions=(ImitationLoss(lambda obs: jnp.full(obs.shape[:-1] + (1,), jnp.nan)),))


def test_a_healthy_run_says_nothing_and_a_bad_setting_is_refused():
    """TD3's delayed actor fills the metrics of the steps it skips with NaN: that is no fault."""
    td3 = sac(agent=TD3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NonFiniteWarning)
        for agent in (ppo(), td3):
            state, _ = agent.train(seed=0, n_timesteps=16)
            assert int(state.nonfinite.timestep[0]) == -1
    with pytest.raises(ValueError, match="on_nonfinite must be one of"):
        ppo().train(seed=0, n_timesteps=16, on_nonfinite="ignore")
