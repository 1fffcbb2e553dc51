"""Every agent refuses a mistaken argument at construction, naming it, before anything compiles.

One table of mistakes, applied to every registered agent that takes the argument: counts
that are not integers (a bool included), rates and norms that are not finite and positive,
a discount outside (0, 1], an env class instead of an instance, another env's params, and
seeds that are not distinct integers in [0, 2**32). Then what is checked by tracing: an
expert's answer against the action space, a custom env's observations against its declared
space, and a resumed state against the agent's own.
"""

import functools
import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnax.environments import spaces
from gymnax.environments.classic_control import CartPole

from ajax.agents.loop import RunSettings
from ajax.agents.registry import AGENTS
from ajax.buffers import collect_dataset
from ajax.environments.create import make_env
from ajax.extensions.expert import ImitationLoss
from tests.conftest import cartpole_expert, pd_expert
from tests.probe_envs import BestAction


@functools.cache
def tiny_dataset():
    return collect_dataset("Pendulum-v1", lambda obs: jnp.clip(-obs[..., 2:3], -2.0, 2.0), 64, seed=0)


def required(name: str) -> dict:
    """What an agent cannot be built without, besides its env."""
    return {"DAgger": {"expert_policy": cartpole_expert}, "IQL": {"dataset": tiny_dataset()}}.get(name, {})


def env_of(name: str) -> str:
    return "Pendulum-v1" if AGENTS[name].continuous else "CartPole-v1"


MISTAKES = [
    ("n_envs", 2.5, "n_envs must be a positive integer"),
    ("n_envs", True, "n_envs must be a positive integer"),
    ("n_envs", 0, "n_envs must be a positive integer"),
    ("episode_length", 0, "episode_length must be a positive integer"),
    ("actor_learning_rate", float("inf"), "actor_learning_rate must be a finite number above 0"),
    ("critic_learning_rate", -1e-3, "critic_learning_rate must be a finite number above 0"),
    ("learning_rate", float("nan"), "learning_rate must be a finite number above 0"),
    ("max_grad_norm", -1.0, "max_grad_norm must be a finite number above 0"),
    ("gamma", 1.5, r"gamma must be in \(0, 1\]"),
    ("gamma", 0.0, r"gamma must be in \(0, 1\]"),
]
CASES = [
    pytest.param(name, argument, value, match, id=f"{name}-{argument}={value!r}")
    for name in sorted(AGENTS)
    for argument, value, match in MISTAKES
    if argument in inspect.signature(AGENTS[name].__init__).parameters
]


@pytest.mark.parametrize(("name", "argument", "value", "match"), CASES)
def test_a_mistaken_argument_is_refused_by_name(name, argument, value, match):
    with pytest.raises(ValueError, match=match):
        AGENTS[name](env_of(name), **required(name), **{argument: value})


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_an_env_class_or_another_envs_params_is_refused(name):
    other = "CartPole-v1" if AGENTS[name].continuous else "Pendulum-v1"
    with pytest.raises(TypeError, match=r"env_params is a \w+, but this env takes"):
        AGENTS[name](env_of(name), **required(name), env_params=make_env(other, None, False, True)[1])
    if not AGENTS[name].continuous:
        with pytest.raises(TypeError, match="pass an instance, e.g. CartPole()"):
            AGENTS[name](CartPole, **required(name))


@pytest.mark.parametrize(
    ("seed", "match"),
    [
        (1.5, r"seed= takes integers in \[0, 2\*\*32\)"),
        ("42", r"seed= takes integers .* got '42'"),
        (-1, r"seed= takes integers"),
        (2**32, r"seed= takes integers"),
        ([0, True], r"seed= takes integers"),
        ([0, 1, 0], "seed= repeats a seed"),
        ([], "needs at least one seed"),
    ],
)
def test_seeds_must_be_distinct_integers(seed, match):
    agent = AGENTS["DQN"]("CartPole-v1")
    with pytest.raises(ValueError, match=match):
        agent.train(seed=seed, n_timesteps=10)


def test_integer_seeds_of_any_kind_are_read():
    from ajax.agents.base import _seeds

    assert _seeds(np.arange(3)) == [0, 1, 2] and _seeds(np.int64(7)) == [7] and _seeds((4, 2)) == [4, 2]


def flat_expert(obs):
    """The PD expert answering shape (n,) instead of (n, 1): would broadcast a loss to (n, n)."""
    return pd_expert(obs)[..., 0]


EXPERT_USERS = {
    "SAC": lambda expert: AGENTS["SAC"]("Pendulum-v1", expert_policy=expert),
    "TD3": lambda expert: AGENTS["TD3"]("Pendulum-v1", expert_policy=expert),
    "REDQ": lambda expert: AGENTS["REDQ"]("Pendulum-v1", expert_policy=expert),
    "AVG": lambda expert: AGENTS["AVG"]("Pendulum-v1", expert_policy=expert),
    "APO": lambda expert: AGENTS["APO"]("Pendulum-v1", expert_policy=expert),
    "PPO+ImitationLoss": lambda expert: AGENTS["PPO"]("Pendulum-v1", extensions=[ImitationLoss(expert)]),
    "collect_dataset": lambda expert: collect_dataset("Pendulum-v1", expert, 64),
}


@pytest.mark.parametrize("user", sorted(EXPERT_USERS))
def test_an_expert_answering_the_wrong_shape_is_refused(user):
    with pytest.raises(ValueError, match=r"answers 4 observations with a float32 array of shape \(4,\); .*Box of"):
        EXPERT_USERS[user](flat_expert)


@pytest.mark.parametrize(
    ("expert", "error", "match"),
    [
        (lambda obs: cartpole_expert(obs).astype(jnp.float32), ValueError, r"must return integer indices of shape"),
        (lambda obs: cartpole_expert(obs)[:, None], ValueError, r"shape \(4, 1\); .*Discrete\(2\)"),
        (lambda obs: cartpole_expert(obs) + 1, ValueError, r"answered \[2\] on the env's first observations"),
        (lambda obs: obs["x"], TypeError, r"failed on a batch of observations of shape \(4, 4\)"),
    ],
    ids=["float-labels", "column-of-labels", "labels-from-1", "raises"],
)
def test_a_discrete_expert_must_answer_indices_of_the_action_set(expert, error, match):
    with pytest.raises(error, match=match):
        AGENTS["DAgger"]("CartPole-v1", expert_policy=expert)


class DeclaresTwoObservations(BestAction):
    """Emits the probe's one-number observation but declares two."""

    def observation_space(self, params):
        return spaces.Box(-1.0, 1.0, (2,))


class RewardPerAction(BestAction):
    """Answers a reward of shape (1,) where one env's step returns a scalar."""

    def reward(self, action):
        return super().reward(action).reshape(1)


@pytest.mark.parametrize("name", ["DQN", "PPO"])
def test_a_custom_envs_observations_must_match_its_declared_space(name):
    with pytest.raises(ValueError, match=r"reset returns observations of shape \(1,\), but its observation_space"):
        AGENTS[name](DeclaresTwoObservations())
    with pytest.raises(ValueError, match=r"returns a reward of shape \(1,\); .* must be a scalar"):
        AGENTS[name](RewardPerAction())


def zero_state(agent, n_seeds: int = 2):
    """A state shaped like `agent`'s own, of zeros: what `state_mismatch` reads, without compiling a run."""
    run = RunSettings(0, 0, 0)
    shapes = agent._skeleton(agent.get_make_train()(run=run), run, n_seeds)
    return jax.tree.map(lambda leaf: jnp.zeros(leaf.shape, leaf.dtype), shapes)


RESUME_MISMATCHES = {
    "another-agent": (
        lambda: AGENTS["SAC"]("Pendulum-v1"),
        lambda: AGENTS["TD3"]("Pendulum-v1"),
        {},
        "another agent made it",
    ),
    "another-architecture": (
        lambda: AGENTS["TD3"]("Pendulum-v1", actor_architecture=("32", "relu")),
        lambda: AGENTS["TD3"]("Pendulum-v1", actor_architecture=("64", "relu")),
        {},
        r"actor_state\.params\..* \(the actor's architecture differs\)",
    ),
    "another-env": (
        lambda: AGENTS["PPO"]("CartPole-v1"),
        lambda: AGENTS["PPO"]("Acrobot-v1"),
        {},
        r"collector_state\..* \(the environment or n_envs differs\)",
    ),
    "more-seeds": (
        lambda: AGENTS["AVG"]("Pendulum-v1"),
        lambda: AGENTS["AVG"]("Pendulum-v1"),
        {"seed": [0, 1, 2]},
        "it holds 2 seeds, and seed= names 3",
    ),
    "another-offline-agent": (
        lambda: AGENTS["DAgger"]("CartPole-v1", expert_policy=cartpole_expert),
        lambda: AGENTS["IQL"]("Pendulum-v1", dataset=tiny_dataset()),
        {},
        "another agent made it",
    ),
}


@pytest.mark.parametrize("case", sorted(RESUME_MISMATCHES))
def test_a_resumed_state_from_another_agent_env_architecture_or_seed_count_is_refused(case):
    maker, resumer, arguments, match = RESUME_MISMATCHES[case]
    with pytest.raises(ValueError, match=f"initial_state does not fit this .*: .*{match}"):
        resumer().train(initial_state=zero_state(maker()), n_timesteps=0, **arguments)


def test_a_state_resumed_by_its_own_kind_of_agent_passes_the_check():
    from ajax.agents.base import state_mismatch

    state = zero_state(AGENTS["TD3"]("Pendulum-v1"))
    run = RunSettings(0, 0, 0)
    twin = AGENTS["TD3"]("Pendulum-v1")
    assert state_mismatch(state, twin._skeleton(twin.get_make_train()(run=run), run, 2)) is None
