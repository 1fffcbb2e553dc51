"""The replay agents use their memory: a cue seen at an episode's first step pays at every later one.

`CueRecall` (tests/probe_envs.py) shows -1 or +1 at the first of its 5 steps, then zeros;
each step pays a * cue. Seeing only the present, an agent earns the first step's 1 and then
0 in expectation; with memory the best return is 5. Each agent learns it in 3,000 steps,
from burn-in alone and from stored state.

Calibration (2026-12-01), greedy returns over 10 episodes from the final state, seeds 0-2
(GRU of 32, 64-unit layers, windows of 4 burn-in + 8 trained steps, batches of 64):

| agent | burn-in | stored state | feed-forward |
| --- | --- | --- | --- |
| SAC | 3.45, 3.39, 3.49 | 3.48, 3.40, 3.50 | 0.73, 0.65, 0.76 |
| ASAC | 3.45, 3.39, 3.49 | 3.48, 3.40, 3.50 | 0.73, 0.66, 0.76 |
| REDQ (4 critics, UTD 2) | 3.43, 3.41, 3.40 | 3.43, 3.42, 3.39 | |
| TD3 | 5.0, 5.0, 5.0 | 5.0, 5.0, 5.0 | -0.60, 0.85, 1.24 |

SAC's greedy action stays inside the bounds its entropy keeps it from; TD3's deterministic
one reaches them. Thresholds: every seed with memory at 2.5 or more (half way from what
the present alone earns to 5), feed-forward SAC below 1.5 on average.
"""

import numpy as np
import pytest

from ajax import ASAC, REDQ, SAC, TD3
from tests.probe_envs import CueRecall

AGENTS = {"SAC": SAC, "ASAC": ASAC, "REDQ": REDQ, "TD3": TD3}


def recall_returns(name: str, memory: dict | None, stored_state: bool = False) -> np.ndarray:
    settings = dict(
        learning_starts=500,
        batch_size=64,
        buffer_size=20_000,
        actor_architecture=("64", "relu"),
        critic_architecture=("64", "relu"),
    )
    if name != "ASAC":
        settings["gamma"] = 0.9
    if name == "REDQ":
        settings.update(n_critics=4, utd_ratio=2)
    if memory is not None:
        settings.update(memory=memory, sequence_length=8, burn_in=4, stored_state=stored_state)
    agent = AGENTS[name](CueRecall(5), **settings)
    state, _ = agent.train(seed=[0, 1, 2], n_timesteps=3_000)
    return np.asarray(agent.evaluate(state, num_episode_test=10)["Eval/episodic mean reward"])


GRU = {"kind": "gru", "hidden_size": 32}
# All slow: even SAC's burn-in case alone took 28-55 s of the default suite on two cores.
CASES = [
    pytest.param(name, stored, marks=[pytest.mark.learning, pytest.mark.slow])
    for name in AGENTS
    for stored in (False, True)
]


@pytest.mark.parametrize(("name", "stored_state"), CASES)
def test_a_recurrent_replay_agent_recalls_the_cue(name, stored_state):
    scores = recall_returns(name, GRU, stored_state)
    assert scores.min() >= 2.5, scores


@pytest.mark.slow
@pytest.mark.learning
def test_without_memory_the_cue_is_lost():
    scores = recall_returns("SAC", None)
    assert scores.mean() < 1.5, scores
