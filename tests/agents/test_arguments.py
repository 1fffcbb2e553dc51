"""Every agent refuses a mistaken argument at construction, naming it, before anything compiles.

One table of mistakes, applied to every registered agent that takes the argument: counts
that are not integers (a bool included), rates and norms that are not finite and positive,
a discount outside (0, 1], an env class instead of an instance, another env's params, and
seeds that are not distinct integers in [0, 2**32).
"""

import functools
import inspect

import jax.numpy as jnp
import numpy as np
import pytest
from gymnax.environments.classic_control import CartPole

from ajax.agents.registry import AGENTS
from ajax.buffers import collect_dataset
from ajax.environments.create import make_env
from tests.conftest import cartpole_expert


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
