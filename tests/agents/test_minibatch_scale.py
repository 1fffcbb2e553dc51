"""PPO's and APO's warning when batch_size makes the update sequential (issue 58).

batch_size counts transitions, so a rollout of n_steps * n_envs splits into more minibatches,
each waiting for the one before, as n_envs grows: the SB3 defaults at 2048 env copies make
655,360 sequential steps per rollout. Construction warns past SEQUENTIAL_MINIBATCH_LIMIT and
suggests a batch_size of a fixed count of minibatches; the agents' defaults and a
PureJaxRL-like setting stay silent. Construction only: nothing here trains.
"""

import re
import warnings

import pytest

from ajax import APO, PPO
from ajax.agents.PPO.PPO import SUGGESTED_MINIBATCHES, suggested_batch_size
from ajax.networks.memory import MemoryConfig

AGENTS = [(PPO, "CartPole-v1"), (APO, "Pendulum-v1")]
PUREJAXRL_LIKE = dict(n_envs=4, n_steps=128, batch_size=128, n_epochs=4)
SUGGESTION = re.compile(r"batch_size=(\d+) makes (\d+) per epoch")


def silent(agent_cls, env_id, **settings):
    """Build the agent with every warning an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return agent_cls(env_id, **settings)


@pytest.mark.parametrize(("agent_cls", "env_id"), AGENTS)
def test_defaults_at_2048_envs_warn_once_with_the_numbers_and_batch_size(agent_cls, env_id):
    # 2048 * 2048 = 4,194,304 transitions / 64 = 65,536 minibatches per epoch, times 10 epochs.
    numbers = (
        r"batch_size=64 makes 655,360 sequential minibatch steps per rollout, over 10,000: the rollout of "
        r"n_steps \* n_envs = 2048 \* 2048 = 4,194,304 transitions splits into 65,536 minibatches per epoch, "
        r"times n_epochs=10\..* batch_size=131072 makes 32 per epoch"
    )
    with pytest.warns(UserWarning, match=numbers) as record:
        agent_cls(env_id, n_envs=2048)
    assert len(record) == 1
    assert record[0].filename == __file__  # the user's line, past the keyword-checking wrappers


@pytest.mark.parametrize(("agent_cls", "env_id"), AGENTS)
@pytest.mark.parametrize("settings", [{}, PUREJAXRL_LIKE], ids=["defaults", "purejaxrl_like"])
def test_defaults_and_a_purejaxrl_like_setting_do_not_warn(agent_cls, env_id, settings):
    silent(agent_cls, env_id, **settings)


@pytest.mark.parametrize(("agent_cls", "env_id"), AGENTS)
@pytest.mark.parametrize(
    ("n_envs", "n_steps", "batch_size"),
    # 32 divides the first rollout; 2,002,000 = 2^4 * 5^3 * 7 * 11 * 13, and its largest count up to 32 is 28.
    [(2048, 2048, 64), (1001, 2000, 16)],
)
def test_the_suggested_batch_size_divides_the_rollout_and_silences_the_warning(
    agent_cls, env_id, n_envs, n_steps, batch_size
):
    with pytest.warns(UserWarning, match="sequential minibatch steps") as record:
        agent_cls(env_id, n_envs=n_envs, n_steps=n_steps, batch_size=batch_size)
    suggested, per_epoch = map(int, SUGGESTION.search(str(record[0].message)).groups())
    rollout = n_envs * n_steps
    assert rollout % suggested == 0 and rollout // suggested == per_epoch <= SUGGESTED_MINIBATCHES
    silent(agent_cls, env_id, n_envs=n_envs, n_steps=n_steps, batch_size=suggested)


@pytest.mark.parametrize(
    ("rollout", "expected"),
    [(2048 * 2048, 2048 * 2048 // 32), (2_002_000, 2_002_000 // 28), (45_000, 45_000 // 30), (4099, 4099)],
)
def test_suggested_batch_size_keeps_at_most_32_minibatches(rollout, expected):
    # rollout // 32 when 32 divides it, else the divisor just above (4099 is prime: one minibatch).
    assert suggested_batch_size(rollout) == expected
    assert rollout % expected == 0


def test_recurrent_ppo_splits_by_n_minibatches_and_does_not_warn():
    # With memory, batch_size is unused: its default of 64 would make 655,360 steps at 2048 envs.
    silent(PPO, "CartPole-v1", n_envs=2048, memory=MemoryConfig(kind="gru", hidden_size=8))
