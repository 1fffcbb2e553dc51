"""SAC's action pipeline (ajax.agents.SAC.action_pipeline) and `action_pipeline=` on SAC and TD3.

The default pipeline is SAC's collection as it was: the same draw as the explore pipeline
SAC built before it had one, and the same run with the default given explicitly.
Expert-guided exploration with a constant expert puts the expert's action in the replay,
at every early step and ever more rarely after, on SAC and on TD3. A recurrent pipeline
acts from the actor's memory. The README's example builds its agent as written. The
mistakes `make_action_pipeline` refuses are here; the agents' own refusals are in
test_arguments.py.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import SAC, TD3
from ajax.agents.SAC.action_pipeline import ActionPipelineConfig
from ajax.agents.SAC.train_SAC import SoftActorCritic, make_action_pipeline
from ajax.environments.create import prepare_env
from ajax.environments.interaction import explore_pipeline, sample_policy
from ajax.networks.memory import MemoryConfig
from tests.conftest import CountingExpert, agent_parts, assert_same_state

TINY = ("16", "relu")
STEPS = 300  # one Pendulum episode and a half on one env copy
SETTINGS = dict(learning_starts=100, batch_size=16, buffer_size=1000, actor_architecture=TINY, critic_architecture=TINY)
EXPERT_ACTION = 0.5  # the constant expert's torque of 1 on Pendulum's [-2, 2], in agent units


def constant_expert(obs):
    """A torque of 1 whatever the state: its action is told apart from any uniform or sampled one."""
    return jnp.ones((*obs.shape[:-1], 1))


def flat_expert(obs):
    """An answer of shape (n,), not (n, 1): refused where env_args lets it be checked."""
    return obs[..., 0]


def guided(**kwargs) -> ActionPipelineConfig:
    return make_action_pipeline(expert_policy=constant_expert, use_expert_guided_exploration=True, **kwargs)


def replayed_actions(state) -> np.ndarray:
    """Seed 0's first STEPS stored actions (one env copy)."""
    return np.asarray(state.collector_state.buffer_state.experience.action[0, 0, :STEPS, 0])


@pytest.fixture(scope="module")
def default_run():
    """A short SAC run without action_pipeline=: the reference the explicit default must reproduce."""
    return SAC("Pendulum-v1", **SETTINGS).train(seed=[0], n_timesteps=STEPS)[0]


@pytest.mark.parametrize("expert", [None, constant_expert], ids=["uniform warm-up", "expert warm-up"])
def test_the_default_pipeline_draws_what_sacs_explore_pipeline_drew(expert):
    """In the warm-up and after, the draw of the explore pipeline SAC called before it had a pipeline."""
    parts = agent_parts(SoftActorCritic, SAC("Pendulum-v1", n_envs=3, expert_policy=expert, **SETTINGS))
    warmup = lambda state: state.collector_state.timestep < SETTINGS["learning_starts"]  # noqa: E731
    before = explore_pipeline(sample_policy, parts.policy, parts.env_args, warmup=warmup, expert=parts.config.expert)
    state = parts.init(jax.random.PRNGKey(0))
    for timestep in (0, 200):
        at = state.replace(collector_state=state.collector_state.replace(timestep=jnp.asarray(timestep, jnp.int32)))
        key, obs = jax.random.PRNGKey(timestep + 1), at.collector_state.last_obs
        np.testing.assert_array_equal(parts.pipeline(at, obs, key)[0], before(at, obs, key)[0])


def test_an_explicit_default_pipeline_trains_the_same_sac(default_run):
    agent = SAC("Pendulum-v1", action_pipeline=make_action_pipeline(env_args=prepare_env("Pendulum-v1")), **SETTINGS)
    state, _ = agent.train(seed=[0], n_timesteps=STEPS)
    assert_same_state(state, default_run)


@pytest.fixture(scope="module")
def guided_sac_run():
    """Expert guidance decaying over the run itself: probability 1 - t / 300."""
    agent = SAC("Pendulum-v1", action_pipeline=guided(total_timesteps=STEPS), **SETTINGS)
    return agent.train(seed=[0], n_timesteps=STEPS)[0]


def assert_guided(actions: np.ndarray) -> None:
    """The expert's action at the first step, in most early steps and few late ones (p = 1 - t / STEPS)."""
    followed = actions == EXPERT_ACTION
    third = STEPS // 3
    assert followed[0]
    assert followed[:third].mean() > 0.7 and followed[-third:].mean() < 0.3, followed.reshape(3, -1).mean(axis=1)


def test_expert_guided_exploration_stores_the_experts_actions(guided_sac_run, default_run):
    actions = replayed_actions(guided_sac_run)
    assert_guided(actions)
    assert not np.any(replayed_actions(default_run) == EXPERT_ACTION)  # the pipeline changed the actions taken


def test_td3_takes_an_action_pipeline_whose_guidance_decays_over_the_runs_horizon():
    agent = TD3("Pendulum-v1", action_pipeline=guided(), **SETTINGS)
    state, _ = agent.train(seed=[0], n_timesteps=STEPS)  # total_timesteps=None: the run's horizon, STEPS
    assert_guided(replayed_actions(state))


def test_a_recurrent_pipeline_acts_from_the_actors_memory():
    memory = MemoryConfig(kind="gru", hidden_size=8)
    settings = SETTINGS | {"memory": memory}
    default = agent_parts(SoftActorCritic, SAC("Pendulum-v1", n_envs=2, **settings))
    recurrent = agent_parts(
        SoftActorCritic, SAC("Pendulum-v1", n_envs=2, action_pipeline=make_action_pipeline(recurrent=True), **settings)
    )
    state = default.init(jax.random.PRNGKey(0))
    state = state.replace(collector_state=state.collector_state.replace(timestep=jnp.asarray(200, jnp.int32)))
    key, obs = jax.random.PRNGKey(1), state.collector_state.last_obs
    (action, extras), (same, same_extras) = default.pipeline(state, obs, key), recurrent.pipeline(state, obs, key)
    np.testing.assert_array_equal(action, same)
    assert_same_state(extras, same_extras)
    assert not np.array_equal(extras["memory"].carries["actor"], state.collector_state.memory.carries["actor"])


def test_the_readmes_example_builds_its_agent():
    def my_expert(obs):
        """Pendulum's raw observation [cos, sin, theta_dot] to a damping torque in [-2, 2]."""
        return jnp.clip(-obs[..., 2:3], -2.0, 2.0)

    env_args = prepare_env("Pendulum-v1")

    from ajax import SAC
    from ajax.agents.SAC.train_SAC import make_action_pipeline

    pipeline = make_action_pipeline(
        expert_policy=my_expert,
        recurrent=False,
        env_args=env_args,
        use_expert_guided_exploration=True,
        total_timesteps=1_000_000,
    )
    agent = SAC(env_id="Pendulum-v1", action_pipeline=pipeline)

    bound = agent.agent_config.action_pipeline
    assert bound.use_expert_guided_exploration and bound.total_timesteps == 1_000_000
    assert bound.env_args is agent.env_args and isinstance(hash(bound), int)  # a static setting of the program


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"use_expert_guided_exploration": True}, "expert_policy and use_expert_guided_exploration=True go together"),
        ({"expert_policy": constant_expert}, "expert_policy and use_expert_guided_exploration=True go together"),
        ({"total_timesteps": 1000}, "total_timesteps sets the horizon over which expert-guided exploration decays"),
        ({"recurrent": True, "expert_policy": constant_expert}, "A recurrent action pipeline takes no expert"),
        ({"recurrent": 1}, "recurrent and use_expert_guided_exploration must be True or False"),
        ({"env_args": prepare_env("CartPole-v1")}, "acts in a continuous action space"),
        (
            {"expert_policy": constant_expert, "use_expert_guided_exploration": True, "total_timesteps": 0},
            r"total_timesteps must be a positive integer, got 0\.",
        ),
        (
            {
                "expert_policy": flat_expert,
                "use_expert_guided_exploration": True,
                "env_args": prepare_env("Pendulum-v1"),
            },
            r"action\[:, None\]",
        ),
    ],
)
def test_make_action_pipeline_refuses_what_it_cannot_honour(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_action_pipeline(**kwargs)


def test_a_stateful_expert_or_an_env_args_of_another_kind_is_refused():
    with pytest.raises(TypeError, match="stateful expert"):
        make_action_pipeline(expert_policy=CountingExpert(), use_expert_guided_exploration=True)
    with pytest.raises(TypeError, match="env_args is an EnvironmentConfig"):
        make_action_pipeline(env_args="Pendulum-v1")
