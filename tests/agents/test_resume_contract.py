"""Every agent: same seed, same result; and a run split in two ends where one uninterrupted call does.

Each agent trains once (the module-scoped `full_run`); the determinism check runs that agent's
compiled program again, and the split run's fresh agent traces its own anew, so tracing is held
to the same bits (when its trace is the same program, the compile cache serves it). Every agent
is held to this here and nowhere else.
"""

import functools

import jax
import numpy as np
import pytest

from ajax.agents.registry import AGENTS as REGISTERED
from ajax.logging.wandb_logging import LoggingConfig
from tests.conftest import assert_same_state
from tests.kit import tiny_agent

# Every registered agent, tiny (`tests/kit.py`): a new agent is held to the contract by being registered.
AGENTS = {name: functools.partial(tiny_agent, name) for name in REGISTERED}
# HALF on no on-policy rollout's boundary (64 steps), nor LOG's. Every call of a run (the one
# call, the fresh leg and the resumed one) runs one program: the count of iterations is traced.
TOTAL, HALF, LOG = 448, 224, 64
# The evaluations' continuity is the shared loop's: checked on one agent of each way of
# collecting (on-policy, replay, offline, UDRL's episodes, DAgger's expert labels, DreamerV3's
# rows: the world models' shape of the loop). The others' runs go unlogged, which compiles a third less.
LOGGED = frozenset({"PPO", "SAC", "IQL", "UDRL", "DAgger", "DreamerV3"})


def logging_for(name: str) -> LoggingConfig | None:
    return LoggingConfig(log_frequency=LOG) if name in LOGGED else None


@pytest.fixture(scope="module", params=sorted(AGENTS))
def full_run(request):
    name = request.param
    agent = AGENTS[name]()
    state, evaluations = agent.train(seed=[0, 1], n_timesteps=TOTAL, logging_config=logging_for(name))
    return name, agent, state, evaluations


def test_same_seed_same_result(full_run):
    name, agent, state, evaluations = full_run
    again, evaluations_again = agent.train(seed=[0, 1], n_timesteps=TOTAL, logging_config=logging_for(name))
    assert_same_state(state, again)
    for key in evaluations or ():
        np.testing.assert_array_equal(evaluations[key], evaluations_again[key])
    # ...and different seeds differ.
    params = jax.tree.leaves((state.critic_state or state.actor_state).params)[0]  # UDRL has no critic
    assert not np.allclose(params[0], params[1])


def test_a_run_split_in_two_equals_one_call(full_run):
    name, _, state, evaluations = full_run
    # A fresh agent, which traces and compiles its program anew, runs the two legs.
    split = AGENTS[name]()
    first, first_evaluations = split.train(
        seed=[0, 1], n_timesteps=HALF, total_timesteps=TOTAL, logging_config=logging_for(name)
    )
    rollout = split.rollout_steps()
    # HALF is no rollout boundary: an on-policy first leg runs its last rollout whole.
    assert int(first.collector_state.timestep[0]) == (HALF if rollout is None else -(-HALF // rollout) * rollout)
    # The run continues from the state, and legs whose budgets add up to the run's end where one call ends.
    second, second_evaluations = split.train(
        seed=[0, 1],
        n_timesteps=TOTAL - HALF,
        initial_state=first,
        total_timesteps=TOTAL,
        logging_config=logging_for(name),
    )
    # A fresh call and a resumed one run the same compiled program: the split run is exact.
    assert_same_state(state, second)
    # The evaluations continue: the two halves' rows are the uninterrupted run's rows, at
    # the same timesteps.
    if name == "APG":  # unlogged, it returns each update's metrics: the halves' are the whole run's
        for key in evaluations:
            joined = np.concatenate([first_evaluations[key], second_evaluations[key]], axis=1)
            np.testing.assert_array_equal(joined, evaluations[key], err_msg=key)
        return
    if evaluations is None:
        return
    joined = {key: np.concatenate([first_evaluations[key], second_evaluations[key]], axis=1) for key in evaluations}
    filled, joined_filled = evaluations["timestep"][0] >= 0, joined["timestep"][0] >= 0
    assert evaluations["timestep"][0][filled].tolist() == list(range(LOG, TOTAL + 1, LOG))  # the horizon's row too
    for key in evaluations:
        np.testing.assert_array_equal(joined[key][:, joined_filled], evaluations[key][:, filled], err_msg=key)


def test_seeds_that_disagree_on_counters_are_refused(full_run):
    name, _, state, _ = full_run
    broken = state.replace(
        collector_state=state.collector_state.replace(timestep=state.collector_state.timestep.at[1].add(1))
    )
    with pytest.raises(ValueError, match="same timestep"):
        AGENTS[name]().train(seed=[0, 1], n_timesteps=10, initial_state=broken)
