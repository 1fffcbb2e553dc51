"""The documentation's examples run as written and print what the pages say.

The two heaviest (the expert and average-reward examples) are marked slow: their set-ups run
at small sizes in the default suite (docs/extensions.md, tests/agents/test_apo.py and test_asac.py).

Each runs as `__main__` in this process (as `python examples/<name>` would run it, without
paying for a new interpreter and a new JAX import each time).
"""

import contextlib
import io
from pathlib import Path

import pytest

from tests.conftest import cut_budgets

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name: str, budget: int | None = None) -> list[str]:
    """The example's printed lines; with `budget`, its budgets over `budget` cut to it."""
    path = EXAMPLES / name
    code = path.read_text() if budget is None else cut_budgets(path.read_text(), budget)
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        exec(compile(code, str(path), "exec"), {"__name__": "__main__", "__file__": str(path)})
    return stdout.getvalue().splitlines()


def test_architecture_example_prints_what_the_page_says():
    assert run_example("architecture_ppo.py") == ["None", "BaseAgentState", "[640 640]", "2", "PPO 64"]


def test_end_to_end_example_counts_every_seed_on_a_shorter_budget():
    lines = run_example("end_to_end.py", budget=2_048)
    assert lines[0] == "cpu"
    # 2,048 // (8 * 128) + 1 = 3 rollouts of 1,024 steps for each of the 8 seeds.
    assert lines[1] == "[" + " ".join(["3072"] * 8) + "]"


# About 40 s on 2 cores with a cold compile cache: the program as the page shows it, at its budget.
@pytest.mark.slow
def test_end_to_end_example_counts_every_seed():
    lines = run_example("end_to_end.py")
    assert lines[0] == "cpu"
    # 16,384 // (8 * 128) + 1 = 17 rollouts of 1,024 steps for each of the 8 seeds.
    assert lines[1] == "[" + " ".join(["17408"] * 8) + "]"


# About 40 s on 2 cores: held out of the default suite, which checks APO's and ASAC's reward
# rates against known answers (tests/agents/test_apo.py, test_asac.py).
@pytest.mark.slow
def test_average_reward_example_prints_one_estimate_per_seed():
    lines = run_example("average_reward.py")
    assert len(lines) == 2
    for line in lines:
        estimates = [float(x) for x in line.strip("[]").split()]
        # Two seeds each; Pendulum pays between -16.3 and 0 per step, and these budgets leave
        # the policies near random (about -6 per step), entropy term included for ASAC.
        assert len(estimates) == 2 and estimates[0] != estimates[1]
        assert all(-16.3 < x < 0.0 for x in estimates), line


# About 40 s on 2 cores (four programs at the default sizes): held out of the default suite,
# which runs the same SAC and TD3 expert set-ups at small sizes in docs/extensions.md.
@pytest.mark.slow
def test_expert_example_prints_the_agents_lead_over_the_expert():
    lines = run_example("expert_guidance.py")
    assert len(lines) == 1
    # One seed, two evaluations (1,000 and 2,000 steps): the agent's return minus the PD expert's.
    biases = [float(x) for x in lines[0].strip("[]").split()]
    assert len(biases) == 2 and all(-2000.0 < b < 2000.0 for b in biases), lines


def test_custom_extension_example_logs_its_term_under_its_own_name():
    assert run_example("custom_extension.py") == ["['penalty/action_square']", "(2, 2)"]
