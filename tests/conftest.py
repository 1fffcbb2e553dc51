"""What the test modules share: experts, reading results, comparing states, counting branches.

Test modules import these (`from tests.conftest import last_returns`) instead of importing
one another. Tiny networks and budgets everywhere a test is about plumbing; a module whose
tests read one run trains it once in a module-scoped fixture.

The default suite mostly compiles short programs, so it compiles them with XLA's least
optimising settings (`jax_disable_most_optimizations`: about half the compile time, the
same values up to float rounding) and, on the CPU, with XLA's loop emitters in place of its
fusion emitters (`FAST_COMPILE`: a quarter less time again on a sample of agent tests). A
test marked `learning` (a calibrated threshold over thousands of steps), `optimized` (whose
run outlasts its compile) or `slow` compiles as users do.

Tracing makes millions of short-lived Python objects, and each full collection of the
garbage collector walks every object the session holds (the collected modules, JAX's caches):
the objects alive once the tests are collected are frozen out of its walks, and it collects
less often (about 6% less time on the agents' files, measured).
"""

import gc
import os
import re
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# Through the environment, so that the processes tests start (the CLI's, the examples') compile alike.
os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax._src import compiler as jax_compiler  # noqa: E402

# pytest imports ajax, and with it jax, before this file (pyproject's filterwarnings names
# ajax.nonfinite.NonFiniteWarning), so jax has read its flags already: set this one again.
jax.config.update("jax_disable_most_optimizations", os.environ["JAX_DISABLE_MOST_OPTIMIZATIONS"] not in ("", "0"))

# The XLA options every compile of the default suite's takes, with jax_disable_most_optimizations,
# and XLA's defaults for them, which every other compile takes: named on each compile, since a
# process a test run starts (pytest-xdist's workers) inherits FAST_COMPILE through XLA_FLAGS.
FAST_COMPILE = {"xla_cpu_use_fusion_emitters": False}
AS_USERS = {"xla_cpu_use_fusion_emitters": True}
# The XLA flags users have, for a process a test starts to compile as they do.
USERS_XLA_FLAGS = os.environ.get("XLA_FLAGS", "")
_get_compile_options = jax_compiler.get_compile_options
# Holds a mark while a module marked `exact` runs: it compares two differently fused programs'
# floats bit for bit, which XLA's fusion emitters keep and its loop emitters may not.
EXACT: list[bool] = []


def _with_fast_compile(*args: Any, env_options_overrides: dict | None = None, **kwargs: Any) -> Any:
    """JAX's compile options, with `FAST_COMPILE` while most optimisations are off and `AS_USERS`
    otherwise: the setting at the moment of the compile, so that a learning test's compiles go as
    users' do."""
    fast = jax.config.values["jax_disable_most_optimizations"] and not EXACT
    env_options_overrides = {**(FAST_COMPILE if fast else AS_USERS), **(env_options_overrides or {})}
    return _get_compile_options(*args, env_options_overrides=env_options_overrides, **kwargs)


# JAX has no public setting for an XLA option on every compile; its compile-options builder is
# where jax_disable_most_optimizations itself takes effect.
jax_compiler.get_compile_options = _with_fast_compile
if os.environ["JAX_DISABLE_MOST_OPTIMIZATIONS"] not in ("", "0"):
    # The processes tests start (the CLI's, the examples') compile alike. This process has read
    # its flags already: its backend starts here at the latest.
    jax.devices()
    os.environ["XLA_FLAGS"] = " ".join(
        [USERS_XLA_FLAGS, *(f"--{name}={str(value).lower()}" for name, value in FAST_COMPILE.items())]
    ).strip()
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from ajax.environments.controllers import cartpole_push as cartpole_expert  # noqa: E402, F401
from ajax.environments.controllers import pendulum_pd as pd_expert  # noqa: E402, F401
from ajax.environments.utils import StatefulExpert  # noqa: E402
from ajax.logging.wandb_logging import LoggingConfig  # noqa: E402

AS_USERS_COMPILE = ("learning", "optimized", "slow")
# Python's defaults are (700, 10, 10): a young collection every 700 net allocations.
GC_THRESHOLDS = (50_000, 50, 100)


def pytest_collection_finish(session):
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


@pytest.fixture(autouse=True, scope="module")
def _fusion_emitters_for_exact_comparisons(request):
    # A module's mark (`pytestmark`), so that its module-scoped runs compile under it too.
    if request.node.get_closest_marker("exact") is None:
        yield
        return
    EXACT.append(True)
    jax.clear_caches()  # no program compiled with FAST_COMPILE is reused
    try:
        yield
    finally:
        EXACT.pop()
        jax.clear_caches()


@pytest.fixture(autouse=True)
def _compile_as_users_do_for_long_runs(request):
    if not any(request.node.get_closest_marker(marker) for marker in AS_USERS_COMPILE):
        yield
        return
    before = jax.config.values["jax_disable_most_optimizations"]
    jax.config.update("jax_disable_most_optimizations", False)
    try:
        yield
    finally:
        jax.config.update("jax_disable_most_optimizations", before)


def agent_parts(parts_class, agent):
    """An agent's reusable parts (`SoftActorCritic`, `ProximalActorCritic`) built from its settings."""
    return parts_class(
        agent.env_args,
        agent.network_args,
        agent.optimizer_args["actor"],
        agent.optimizer_args["critic"],
        agent.agent_config,
        agent.extensions,
    )


# A TD-MPC2 small enough to compile in seconds that still plans, bursts and wraps its replay:
# the resume contract's and test_tdmpc2.py's short run share it, and so one compiled program.
TDMPC2_SMALL = {
    "model_size": 1,
    "n_envs": 2,
    "enc_dim": 16,
    "mlp_dim": 16,
    "latent_dim": 16,
    "batch_size": 8,
    "buffer_size": 300,
    "num_samples": 16,
    "num_elites": 4,
    "num_pi_trajs": 2,
    "iterations": 2,
    "seed_steps": 100,
}
# TDMPC2MultiTask at the same sizes: it collects nothing, so it takes no envs, replay or warm-up.
TDMPC2_MULTITASK_SMALL = {
    **{key: value for key, value in TDMPC2_SMALL.items() if key not in ("n_envs", "buffer_size", "seed_steps")},
    "task_dim": 8,
}


def pendulum_multitask_dataset(n_rows: int = 64):
    """A one-task MultiTaskDataset shaped as Pendulum-v1 (3 observations, 1 action, episodes of 200) whose
    task is named Pendulum-v1, so TDMPC2MultiTask evaluates it there by default.

    Random rows from numpy, no env stepped: where the other agents are built on an env id, this is what
    TDMPC2MultiTask is built on, and the tests that build it (or briefly train it) need no good data.
    """
    from ajax.buffers import Dataset, MultiTaskDataset

    rng = np.random.default_rng(0)
    obs = rng.normal(size=(n_rows + 1, 3)).astype(np.float32)
    rows = Dataset(
        obs=obs[:-1],
        action=rng.uniform(-1.0, 1.0, size=(n_rows, 1)).astype(np.float32),
        reward=rng.uniform(-10.0, 0.0, size=n_rows).astype(np.float32),
        next_obs=obs[1:],
        terminated=np.zeros(n_rows, bool),
        truncated=np.zeros(n_rows, bool),
    )
    return MultiTaskDataset.from_datasets(
        {"Pendulum-v1": rows}, episode_lengths={"Pendulum-v1": 200}, score_ranges={"Pendulum-v1": (-1500.0, -150.0)}
    )


BUDGET = re.compile(r"n_timesteps=(\d[\d_]*)")


def cut_budgets(text: str, most: int) -> str:
    """Python source with every literal `n_timesteps=` budget over `most` cut to `most`: a page's
    or an example's code, run shorter than written."""
    return BUDGET.sub(lambda m: f"n_timesteps={min(int(m.group(1).replace('_', '')), most)}", text)


def first_seed(tree):
    """One seed's slice of a run's state."""
    return jax.tree.map(lambda x: x[0], tree)


def last_returns(agent, n_timesteps: int, log_frequency: int, seeds=(0, 1, 2), **train_kwargs) -> np.ndarray:
    """Each seed's last evaluation return: a learning test's score."""
    _, evaluations = agent.train(
        seed=list(seeds),
        n_timesteps=n_timesteps,
        logging_config=LoggingConfig(log_frequency=log_frequency),
        **train_kwargs,
    )
    returns, timesteps = evaluations["Eval/episodic mean reward"], evaluations["timestep"]
    return np.array([row[steps >= 0][-1] for row, steps in zip(returns, timesteps, strict=True)])


def assert_same_state(a, b, rtol: float = 0.0) -> None:
    leaves_a, leaves_b = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(leaves_a) == len(leaves_b)
    for x, y in zip(leaves_a, leaves_b, strict=True):
        np.testing.assert_allclose(np.asarray(x, np.float64), np.asarray(y, np.float64), rtol=rtol, atol=rtol)


def assert_split_through_checkpoint_equals_one_call(make_agent, total: int, half: int, path) -> Any:
    """The resume contract through a file: `half` steps, saved and restored into a fresh
    agent's skeleton, then the rest, equal one call of `total`; returns that call's state."""
    from ajax.checkpoint import restore_into, save_checkpoint

    whole, _ = make_agent().train(seed=[0, 1], n_timesteps=total)
    first, _ = make_agent().train(seed=[0, 1], n_timesteps=half, total_timesteps=total)
    saved = save_checkpoint(first, path)
    fresh = make_agent()
    skeleton, _ = fresh.train(seed=[0, 1], n_timesteps=0)
    restored = restore_into(skeleton, saved)
    assert_same_state(first, restored)  # the carries, episode starts and stored carries included
    second, _ = fresh.train(initial_state=restored, n_timesteps=total - half, total_timesteps=total)
    assert_same_state(whole, second)
    return whole


def count_conds(jaxpr) -> int:
    """The `cond` primitives in a jaxpr, nested ones included: a gate that stays a branch."""
    count = 0
    for eqn in jaxpr.eqns:
        count += eqn.primitive.name == "cond"
        for param in eqn.params.values():
            for sub in param if isinstance(param, tuple | list) else [param]:
                if hasattr(sub, "jaxpr"):
                    count += count_conds(sub.jaxpr if hasattr(sub.jaxpr, "eqns") else sub.jaxpr.jaxpr)
    return count


def swing_up_expert(obs):
    """Energy pumping (E = theta_dot^2 / 2 + 15 cos theta, 15 upright at rest), a PD hold near the top.

    Scores -177 over 20 of gymnax Pendulum's episodes (the PD expert above: -1,256, a random policy's level).
    """
    cos, theta_dot = obs[..., 0], obs[..., 2]
    theta = jnp.arctan2(obs[..., 1], cos)
    energy = 0.5 * theta_dot**2 + 15.0 * cos
    pump = jnp.clip(0.5 * theta_dot * (15.0 - energy), -2.0, 2.0)
    hold = jnp.clip(-(10.0 * theta + 2.0 * theta_dot), -2.0, 2.0)
    return jnp.where(cos > 0.9, hold, pump)[..., None]


def smooth_expert(obs):
    """A torque smooth in the observation ([-2, 2]), so a small network can clone it closely."""
    return jnp.clip(-(1.0 * obs[..., 1] + 0.3 * obs[..., 2]), -2.0, 2.0)[..., None]


@dataclass(frozen=True)
class CountingExpert(StatefulExpert):
    """Answers `value` and counts its calls: a stand-in for a PID's integral."""

    value: float = 0.5

    def init_state(self):
        return jnp.zeros((), jnp.int32)

    def __call__(self, obs, state):
        return jnp.full((1,), self.value), state + 1
