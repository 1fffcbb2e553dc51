"""A tiny version of any registered agent, for the tests about plumbing rather than learning.

`tiny_agent(name)` builds the agent with every keyword it declares that has a tiny value in
`TINY` set to it, then the few settings a generic rule cannot know (`SPECIFIC`: what an agent
cannot be built without, the world models' sizes). A new agent is in every per-agent table
(the resume contract, the argument checks, the sweeps) by being registered; it needs a
`SPECIFIC` row only where the generic sizes do not fit it.
"""

import functools
from typing import Any

import jax.numpy as jnp

from ajax.agents.registry import AGENTS
from ajax.buffers import collect_dataset
from ajax.networks.hyperspherical import SimbaV2Network
from tests.conftest import (
    TDMPC2_MULTITASK_SMALL,
    TDMPC2_SMALL,
    cartpole_expert,
    pendulum_multitask_dataset,
)

LAYERS = ("16", "relu")
# The tiny value of each keyword an agent may declare: small networks, batches, buffers and rollouts.
TINY: dict[str, Any] = {
    "n_envs": 2,
    "actor_architecture": LAYERS,
    "critic_architecture": LAYERS,
    "architecture": LAYERS,
    "batch_size": 32,
    "buffer_size": 1000,
    "learning_starts": 100,
    "n_steps": 32,
    "n_epochs": 2,
}


@functools.cache
def iql_dataset():
    """1,000 steps of a damping controller on Pendulum: IQL's fixed offline data."""
    return collect_dataset("Pendulum-v1", lambda obs: jnp.clip(-obs[..., 2:3], -2.0, 2.0), 1_000, seed=0)


@functools.cache
def multitask_dataset():
    return pendulum_multitask_dataset()


# What the generic sizes cannot say: required arguments, and sizes of another kind.
SPECIFIC: dict[str, Any] = {
    "APG": lambda: {"horizon": 16},
    "PQN": lambda: {"n_minibatches": 2},
    "REDQ": lambda: {"n_critics": 4, "utd_ratio": 3},
    "TQC": lambda: {"n_critics": 2, "n_quantiles": 3},
    # Renormalising from its fifth update on, so that the plumbing tests cross the warm-up's switch.
    "CrossQ": lambda: {"renorm_warmup_steps": 4},
    # Its own hyperspherical networks, small, and a coarse support.
    "SimbaV2": lambda: {
        "actor_architecture": SimbaV2Network(16, 1),
        "critic_architecture": SimbaV2Network(16, 1),
        "n_atoms": 11,
    },
    "DAgger": lambda: {"expert_policy": cartpole_expert, "n_gradient_steps": 4},
    "IQL": lambda: {"dataset": iql_dataset()},
    "UDRL": lambda: {"n_updates_per_iter": 4, "buffer_size": 16, "top_k": 4},
    # Continuous, its rings (100 rows per env) wrapped by the resume contract's 448 steps (224 ticks); its
    # first update at tick 16 (a batch of 2 x 8-row sequences), then one every 8 ticks.
    "DreamerV3": lambda: {
        "batch_size": 2,
        "batch_length": 8,
        "buffer_size": 200,
        "train_ratio": 1,
        "imag_horizon": 4,
        "warmup_updates": 0,
    },
    # Planning from step 100 on, its burst of 100 updates then one per step, a replay that wraps.
    "TDMPC2": lambda: TDMPC2_SMALL,
    "TDMPC2MultiTask": lambda: TDMPC2_MULTITASK_SMALL,
}


# Where an agent that acts in both kinds of action space is tried on discrete actions: PPO's
# categorical actor, DAgger, whose expert is CartPole's, and UDRL, calibrated on CartPole.
DISCRETE = frozenset({"PPO", "DAgger", "UDRL"})


def env_of(name: str) -> Any:
    """What agent `name` is built on: an env id fitting its actions (Pendulum where it takes both,
    but for `DISCRETE`), or TDMPC2MultiTask's dataset."""
    if name == "TDMPC2MultiTask":
        return multitask_dataset()
    return "CartPole-v1" if AGENTS[name].continuous is False or name in DISCRETE else "Pendulum-v1"


def tiny_settings(name: str) -> dict[str, Any]:
    """The keywords that make agent `name` tiny."""
    declared = AGENTS[name].hyperparameters.declared
    settings = {keyword: size for keyword, size in TINY.items() if keyword in declared}
    return {**settings, **SPECIFIC.get(name, dict)()}


def tiny_agent(name: str, **overrides: Any) -> Any:
    """Agent `name`, tiny, with `overrides` over its tiny settings."""
    return AGENTS[name](env_of(name), **{**tiny_settings(name), **overrides})
