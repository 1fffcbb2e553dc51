"""`ajax.sweep`: a grid trained as one program equals its configurations trained one by one.

For an on-policy (PPO), a replay (SAC) and an incremental (AVG) agent, two configurations
that differ in a learning rate and in gamma are swept on two seeds and trained again as
separate `train()` calls. The evaluations must agree to float32 rounding and the parameters
to 1e-5: a swept learning rate is a float32 array in the optimiser's state
(`optax.inject_hyperparams`) where a single run's is a constant XLA folds into Adam's
update, so the last bits of each step may differ (about 3e-7 after a few hundred updates
when measured). The sweep's programs are traced once each, for all configurations.

Every agent's declared sweepable arguments each change a number of its static settings, and
its whole sweep program traces with all of them traced at once.
"""

from __future__ import annotations

import inspect
from unittest import mock

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import AVG, PPO, SAC, TDMPC2MultiTask
from ajax.agents.loop import RunSettings
from ajax.agents.registry import AGENTS
from ajax.buffers import collect_dataset
from ajax.logging.wandb_logging import LoggingConfig
from ajax.sweep import SweepProgram, configurations, sweep, swept_paths
from tests.conftest import (
    TDMPC2_MULTITASK_SMALL,
    TDMPC2_SMALL,
    cartpole_expert,
    pd_expert,
    pendulum_multitask_dataset,
)

SMALL = ("16", "relu")
RETURN = "Eval/episodic mean reward"

CASES = {
    "PPO": (
        PPO,
        "CartPole-v1",
        {"n_envs": 2, "n_steps": 16, "batch_size": 16, "n_epochs": 2, "actor_architecture": SMALL},
        [{"actor_learning_rate": 1e-3, "gamma": 0.9}, {"actor_learning_rate": 3e-3, "gamma": 0.99}],
        160,
    ),
    "SAC": (
        SAC,
        "Pendulum-v1",
        {
            "learning_starts": 32,
            "batch_size": 16,
            "buffer_size": 200,
            "actor_architecture": SMALL,
            "critic_architecture": SMALL,
        },
        [{"critic_learning_rate": 1e-3, "gamma": 0.9}, {"critic_learning_rate": 3e-3, "gamma": 0.99}],
        96,
    ),
    "AVG": (
        AVG,
        "Pendulum-v1",
        {"actor_architecture": SMALL, "critic_architecture": SMALL},
        [{"actor_learning_rate": 1e-3, "gamma": 0.9}, {"actor_learning_rate": 3e-3, "gamma": 0.99}],
        64,
    ),
}
SEEDS = [0, 1]


# PPO's sweep runs in the default suite; the replay and incremental agents' (a minute each on
# 2 cores) run with the slow tests.
@pytest.fixture(
    scope="module", params=[name if name == "PPO" else pytest.param(name, marks=pytest.mark.slow) for name in CASES]
)
def swept_and_single(request):
    agent_cls, env_id, fixed, configs, budget = CASES[request.param]
    logging = LoggingConfig(log_frequency=budget // 2)
    traces = []
    make_train = agent_cls.make_train

    def counted(**kwargs):
        traces.append(kwargs["run"])
        return make_train(**kwargs)

    with mock.patch.object(agent_cls, "make_train", staticmethod(counted)):
        state, evaluations, order = sweep(
            agent_cls, env_id, configs=configs, seed=SEEDS, n_timesteps=budget, logging_config=logging, **fixed
        )
    singles = [
        agent_cls(env_id, **fixed, **config).train(seed=SEEDS, n_timesteps=budget, logging_config=logging)
        for config in configs
    ]
    return (state, evaluations, order, len(traces)), singles, configs


def test_a_sweep_equals_its_configurations_trained_one_by_one(swept_and_single):
    (state, evaluations, order, _), singles, configs = swept_and_single
    assert order == configs
    for index, (single_state, single_evaluations) in enumerate(singles):
        np.testing.assert_allclose(evaluations[RETURN][index], single_evaluations[RETURN], rtol=1e-4)
        np.testing.assert_array_equal(evaluations["timestep"][index], single_evaluations["timestep"])
        for swept, single in zip(
            jax.tree.leaves(state.actor_state.params), jax.tree.leaves(single_state.actor_state.params), strict=True
        ):
            assert swept.shape[:2] == (len(configs), len(SEEDS))
            np.testing.assert_allclose(swept[index], single, atol=1e-5)
    # The configurations really trained apart: their parameters differ.
    first = jax.tree.leaves(state.actor_state.params)[0]
    assert not np.allclose(first[0], first[1])


def test_the_sweep_traces_each_of_its_programs_once(swept_and_single):
    (*_, n_traces), _, _ = swept_and_single
    assert n_traces == 2  # the initial state's program and the run's, each for every configuration


def test_a_grid_is_every_combination_in_order():
    assert configurations({"gamma": [0.9, 0.99], "tau": [0.1, 0.2]}, None) == [
        {"gamma": 0.9, "tau": 0.1},
        {"gamma": 0.9, "tau": 0.2},
        {"gamma": 0.99, "tau": 0.1},
        {"gamma": 0.99, "tau": 0.2},
    ]


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        ({"grid": {"n_steps": [16, 32]}}, "cannot sweep 'n_steps': it fixes a shape.*It can sweep: .*gamma"),
        ({"grid": {"gama": [0.9]}}, "no argument 'gama'. Did you mean gamma"),
        ({"grid": {}}, "grid= needs at least one argument"),
        ({"grid": {"gamma": []}}, r"grid\['gamma'\] is empty"),
        ({"grid": {"gamma": [0.9, 0.99, 0.9]}}, r"grid\['gamma'\] lists 0.9 twice"),
        ({"configs": [{"gamma": 0.9}, {"gamma": 0.9}]}, r"lists \{'gamma': 0.9\} twice \(entries 0 and 1\)"),
        ({"configs": []}, "configs= needs at least one"),
        ({"grid": {"gamma": [0.9]}, "configs": [{"gamma": 0.9}]}, "one of them"),
        ({"grid": {"gamma": [0.9, 0.99]}, "gamma": 0.9}, "both swept and given as a fixed argument"),
        ({"grid": {"gamma": [0.9, 1.5]}}, "gamma must lie in"),
    ],
)
def test_a_sweep_refuses_what_it_cannot_run_before_compiling(arguments, match):
    with pytest.raises(ValueError, match=match):
        sweep(PPO, "CartPole-v1", n_timesteps=64, n_envs=2, n_steps=16, batch_size=16, **arguments)


@pytest.mark.parametrize("values", [0.9, "0.9"])
def test_a_grid_value_that_is_not_a_list_is_refused_naming_its_argument(values):
    with pytest.raises(TypeError, match=r"grid\['gamma'\] must be a list of the values to sweep.*write \["):
        sweep(PPO, "CartPole-v1", grid={"gamma": values}, n_timesteps=64, n_envs=2, n_steps=16, batch_size=16)


# Each agent small, on an env it takes; TDMPC2MultiTask's "env" is its dataset.
SETUPS = {
    "APG": ("Pendulum-v1", {"n_envs": 2, "horizon": 8, "actor_architecture": SMALL}),
    "APO": ("Pendulum-v1", {"n_envs": 2, "n_steps": 16, "batch_size": 16, "actor_architecture": SMALL}),
    "ASAC": ("Pendulum-v1", {"learning_starts": 8, "batch_size": 8, "buffer_size": 64, "actor_architecture": SMALL}),
    "AVG": ("Pendulum-v1", {"actor_architecture": SMALL, "critic_architecture": SMALL}),
    "DAgger": (
        "CartPole-v1",
        {"expert_policy": cartpole_expert, "n_steps": 16, "batch_size": 8, "buffer_size": 64, "architecture": SMALL},
    ),
    "DQN": ("CartPole-v1", {"learning_starts": 8, "batch_size": 8, "buffer_size": 64, "architecture": SMALL}),
    "DreamerV3": (
        "Pendulum-v1",
        {"n_envs": 2, "batch_size": 2, "batch_length": 8, "buffer_size": 200, "train_ratio": 2, "imag_horizon": 4},
    ),
    "IQL": ("Pendulum-v1", {"batch_size": 8, "actor_architecture": SMALL}),  # its dataset added in _setup
    "PPO": ("CartPole-v1", {"n_envs": 2, "n_steps": 16, "batch_size": 16, "actor_architecture": SMALL}),
    "PQN": ("CartPole-v1", {"n_envs": 2, "n_steps": 8, "n_minibatches": 2, "architecture": SMALL}),
    "REDQ": ("Pendulum-v1", {"learning_starts": 8, "batch_size": 8, "buffer_size": 64, "actor_architecture": SMALL}),
    "SAC": ("Pendulum-v1", {"learning_starts": 8, "batch_size": 8, "buffer_size": 64, "actor_architecture": SMALL}),
    "TD3": ("Pendulum-v1", {"learning_starts": 8, "batch_size": 8, "buffer_size": 64, "actor_architecture": SMALL}),
    "TDMPC2": ("Pendulum-v1", {**TDMPC2_SMALL, "episodic": False}),  # no termination read: built at once
    "UDRL": ("CartPole-v1", {"n_steps": 16, "batch_size": 8, "buffer_size": 64, "architecture": SMALL}),
}


def _setup(name):
    if name == "TDMPC2MultiTask":
        return TDMPC2MultiTask, pendulum_multitask_dataset(), TDMPC2_MULTITASK_SMALL
    env_id, kwargs = SETUPS[name]
    if name == "IQL":
        kwargs = {**kwargs, "dataset": collect_dataset(env_id, lambda obs: jnp.clip(-obs[..., 2:3], -2, 2), 64)}
    return AGENTS[name], env_id, kwargs


def _two_values(agent_cls, name):
    """Two values of a sweepable argument a constructor accepts: its default (or a stand-in for None) and half."""
    default = inspect.signature(agent_cls.__init__).parameters[name].default
    if default is None:  # a derived target entropy, or no gradient clipping
        default = -1.0 if name == "target_entropy" else 1.0
    return float(default), (0.5 * float(default) if default else 0.01)


# The world models take half a minute each to trace on 2 cores: they run with the slow tests.
HEAVY = ("DreamerV3", "TDMPC2", "TDMPC2MultiTask")


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in HEAVY else n for n in [*SETUPS, "TDMPC2MultiTask"]]
)
def test_every_declared_sweepable_argument_is_a_number_the_program_traces(name):
    agent_cls, env_id, kwargs = _setup(name)
    assert agent_cls.sweepable, f"{name} declares nothing it can sweep"
    run = RunSettings(0, 64, 64)
    values = {argument: _two_values(agent_cls, argument) for argument in sorted(agent_cls.sweepable)}
    for argument, pair in values.items():  # each one alone reaches a number of the settings
        agents = [agent_cls(env_id, **kwargs, **{argument: value}) for value in pair]
        assert swept_paths([agent.static_settings(run) for agent in agents]), f"{argument} changes nothing"
    agents = [agent_cls(env_id, **kwargs, **{k: pair[i] for k, pair in values.items()}) for i in range(2)]
    program = SweepProgram.build(agents, run)
    keys = jax.ShapeDtypeStruct((2, 1, 2), jnp.uint32)
    state = jax.eval_shape(program.fresh, program.values, keys)
    final, _ = jax.eval_shape(program.run, program.values, keys, state)
    assert jax.tree.leaves(final.rng)[0].shape[:2] == (2, 1)


def _imitation_sweep():
    from ajax.extensions.expert import ImitationLoss

    kwargs = dict(CASES["SAC"][2])
    configs = [{"extensions": (ImitationLoss(pd_expert, weight=weight),)} for weight in (0.1, 3.0)]
    return kwargs, configs


def test_an_extensions_weight_is_swept_as_a_number():
    kwargs, configs = _imitation_sweep()
    run = RunSettings(0, 64, 64)
    agents = [SAC("Pendulum-v1", **kwargs, **config) for config in configs]
    program = SweepProgram.build(agents, run)
    assert [path[-1] for path in program.paths] == ["weight"]
    keys = jax.ShapeDtypeStruct((2, 1, 2), jnp.uint32)
    jax.eval_shape(program.run, program.values, keys, jax.eval_shape(program.fresh, program.values, keys))


@pytest.mark.slow
def test_a_sweep_of_an_extensions_weight_equals_its_runs_one_by_one():
    kwargs, configs = _imitation_sweep()
    state, _, _ = sweep(SAC, "Pendulum-v1", configs=configs, seed=SEEDS, n_timesteps=96, **kwargs)
    for index, config in enumerate(configs):
        single, _ = SAC("Pendulum-v1", **kwargs, **config).train(seed=SEEDS, n_timesteps=96)
        for swept, alone in zip(
            jax.tree.leaves(state.actor_state.params), jax.tree.leaves(single.actor_state.params), strict=True
        ):
            np.testing.assert_allclose(swept[index], alone, atol=1e-5)
