"""Make the project's small multi-task dataset, Pendulum-v1 and Reacher-misc, from Ajax's own SAC.

For each task SAC trains for `--sac-steps` steps (64x64 ReLU networks, learning rate 1e-3, 1,000
uniform warm-up steps; 30,000 by default: Pendulum is solved by 10,000, Reacher-misc still gains
up to 30,000). Its greedy policy then collects `--steps` transitions in one env copy, so each
episode's rows follow one another, split evenly over the `--noise` levels: Gaussian noise of that
standard deviation added to every action in agent units ([-1, 1]), then clipped. The default
levels, 0.1, 0.5 and 1.0, give a spread of quality an offline learner has to sort: with the
defaults Pendulum's data scores about 98, 95 and 61, Reacher's about 111, 92 and 88 (SAC's
policy shrugs off noise of 0.5; 1.0 makes clearly worse episodes).

Each task's score range is measured here too: low the mean return of a uniformly random policy
over `--random-episodes` episodes, high the trained SAC's mean greedy return over
`--eval-episodes`, so the normalised score reads 0 at random and 100 at the data's expert. A SAC
no better than random is refused (a budget too small for the task). The dataset is written with
`MultiTaskDataset.save`; read it back with `MultiTaskDataset.load`. The defaults take about 100 s
on 2 CPU cores; the smoke test below (too short for a good policy) about 55 s, mostly compiling.

    JAX_PLATFORMS=cpu python scripts/make_multitask_dataset.py
    JAX_PLATFORMS=cpu python scripts/make_multitask_dataset.py --sac-steps 10000 --steps 1000 --out runs/tiny.npz
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ajax import SAC
from ajax.buffers import Dataset, MultiTaskDataset, collect_dataset
from ajax.environments.create import prepare_env
from ajax.environments.utils import ExpertInAgentUnits, uniform_action
from ajax.evaluate import EvalPolicy, PolicyCarry, evaluate
from ajax.extensions.cloning import deterministic_action
from ajax.state import EnvironmentConfig

TASKS = ("Pendulum-v1", "Reacher-misc")
RETURN = "Eval/episodic mean reward"
RELU64 = ("64", "relu", "64", "relu")
# SAC's settings for both tasks: small networks train fast on a CPU; the Zoo's Pendulum learning rate.
SAC_SETTINGS = {
    "learning_starts": 1_000,
    "actor_architecture": RELU64,
    "critic_architecture": RELU64,
    "actor_learning_rate": 1e-3,
    "critic_learning_rate": 1e-3,
}


def greedy_expert(state: object) -> ExpertInAgentUnits:
    """The trained SAC's deterministic action (its squashed Gaussian's mode), first seed.

    The actor answers in agent units already, so the expert is built without an action box:
    its actions pass through to the dataset unconverted.
    """
    actor = jax.tree.map(lambda leaf: leaf[0], state.actor_state)
    return ExpertInAgentUnits(lambda obs: deterministic_action(actor, actor.params, obs))


def random_return(env_args: EnvironmentConfig, n_episodes: int, seed: int) -> float:
    """A uniformly random policy's mean return, over the same episodes an agent's evaluation plays.

    The policy carries its key through the episodes; it reads no agent state, so none is given.
    """

    def uniform(state: None, obs: jax.Array, key: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        key, draw = jax.random.split(key)
        return uniform_action(draw, env_args, obs.shape[0]), jnp.zeros(obs.shape[0]), key

    carry = PolicyCarry(init=lambda state, n: jax.random.PRNGKey(seed + 1), advance=lambda key, reward: key)
    policy = EvalPolicy(uniform, carry=carry)
    metrics = jax.jit(lambda key: evaluate(None, key, env_args, policy, n_episodes))(jax.random.PRNGKey(seed))
    return float(metrics[RETURN])


def episode_returns(data: Dataset) -> np.ndarray:
    """The returns of the episodes that end within `data` (its rows in order, one env copy)."""
    ends = np.flatnonzero(np.asarray(data.terminated) | np.asarray(data.truncated))
    if not len(ends):
        return np.zeros(0)
    starts = np.concatenate([[0], ends[:-1] + 1])
    return np.add.reduceat(np.asarray(data.reward), starts)[: len(ends)]


def noisy_rollouts(
    env_id: str, expert: ExpertInAgentUnits, n_steps: int, noise: Sequence[float], seed: int
) -> tuple[Dataset, list[np.ndarray]]:
    """`n_steps` rows split evenly over the noise levels, in one table, and each level's episode returns.

    Every level's rollout starts a fresh episode, so its last row is marked truncated (a time
    limit: its next_obs is the true next observation): no window runs from one rollout into the next.
    """
    sizes = [len(part) for part in np.array_split(np.arange(n_steps), len(noise))]
    parts, returns = [], []
    for index, (size, level) in enumerate(zip(sizes, noise, strict=True)):
        data = collect_dataset(env_id, expert, size, seed=seed + 1 + index, noise=level)
        returns.append(episode_returns(data))
        parts.append(data.replace(truncated=data.truncated.at[-1].set(True)))
    return jax.tree.map(lambda *leaves: jnp.concatenate(leaves), *parts), returns


def make_task(env_id: str, args: argparse.Namespace) -> tuple[Dataset, int, tuple[float, float], str]:
    """Train SAC on one task, collect its noisy data and measure its score range; and a summary's details."""
    started = time.perf_counter()
    agent = SAC(env_id, **SAC_SETTINGS)
    state, _ = agent.train(seed=args.seed, n_timesteps=args.sac_steps)
    high = float(agent.evaluate(state, num_episode_test=args.eval_episodes, seed=args.seed)[RETURN][0])
    env_args = prepare_env(env_id)
    low = random_return(env_args, args.random_episodes, args.seed)
    if not low < high:
        raise SystemExit(
            f"{env_id}: SAC after {args.sac_steps} steps returns {high:.1f}, no better than a random policy's "
            f"{low:.1f}, so the score range would not rise: give it more --sac-steps."
        )
    data, returns = noisy_rollouts(env_id, greedy_expert(state), args.steps, args.noise, args.seed)
    score = lambda r: f"{100.0 * (np.mean(r) - low) / (high - low):.0f}" if len(r) else "n/a (no whole episode)"  # noqa: E731
    scores = ", ".join(f"{score(r)} at noise {level}" for r, level in zip(returns, args.noise, strict=True))
    details = f"data scored {scores}; {time.perf_counter() - started:.0f} s"
    return data, env_args.max_episode_steps, (low, high), details


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sac-steps", type=int, default=30_000, help="SAC's training steps per task")
    parser.add_argument("--steps", type=int, default=30_000, help="transitions collected per task")
    parser.add_argument(
        "--noise", type=float, nargs="+", default=[0.1, 0.5, 1.0], help="noise levels, steps split evenly"
    )
    parser.add_argument("--random-episodes", type=int, default=100, help="episodes of the random policy (score 0)")
    parser.add_argument("--eval-episodes", type=int, default=50, help="episodes of SAC's evaluation (score 100)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/multitask_dataset.npz")
    args = parser.parse_args(argv)
    if args.sac_steps <= SAC_SETTINGS["learning_starts"]:
        parser.error(f"--sac-steps must exceed SAC's {SAC_SETTINGS['learning_starts']} warm-up steps.")
    if args.steps < len(args.noise) or min(args.noise) < 0:
        parser.error("--steps must give every noise level a row, and every --noise level must be >= 0.")
    started = time.perf_counter()
    datasets, episode_lengths, score_ranges, details = {}, {}, {}, {}
    for env_id in TASKS:
        datasets[env_id], episode_lengths[env_id], score_ranges[env_id], details[env_id] = make_task(env_id, args)
    dataset = MultiTaskDataset.from_datasets(datasets, episode_lengths=episode_lengths, score_ranges=score_ranges)
    path = dataset.save(args.out)
    for index, task in enumerate(dataset.tasks):
        rows = int(np.sum(np.asarray(dataset.task) == index))
        low, high = task.score_range
        print(f"{task.name}: {rows} rows, score range ({low:.1f}, {high:.1f}); {details[task.name]}")
    print(f"wrote {path} ({dataset.size} rows) in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
