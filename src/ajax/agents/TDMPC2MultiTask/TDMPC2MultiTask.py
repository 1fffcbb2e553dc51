"""TDMPC2MultiTask: one TD-MPC2 model trained offline on several tasks (Hansen et al. 2024, section 4)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from ajax.agents.base import shared_counters
from ajax.agents.TDMPC2.core import discount_from_episode_length
from ajax.agents.TDMPC2.TDMPC2 import TDMPC2, WIDE_ACTIONS
from ajax.agents.TDMPC2MultiTask.train_TDMPC2MultiTask import make_train, task_evaluation
from ajax.buffers.dataset import refuse_nonfinite
from ajax.buffers.multitask import MultiTaskDataset, TaskInfo
from ajax.environments.create import prepare_env
from ajax.evaluate import evaluate
from ajax.hyperparameters import Hyperparameters, Settings, checked_later, count, keywords
from ajax.log import evaluation_keys
from ajax.logging.wandb_logging import LoggingConfig
from ajax.logging.worker import forward, recording
from ajax.state import SEED_AXIS, EnvironmentConfig

RETURN = "episodic mean reward"
SCORE = "Eval/normalized score"


# The single-task keywords a model trained offline on several tasks sets itself: one env copy
# (none steps while it trains), no replay or warm-up (`_replay`), each task's discount from its
# episodes, no termination head (as the reference's multi-task model), the env's own settings
# (each task is evaluated in its own env).
SINGLE_TASK = TDMPC2.hyperparameters.fixing(
    n_envs=1,
    buffer_size=None,
    seed_steps=None,
    gamma=None,
    episodic=False,
    termination_coef=1.0,
    episode_length=None,
    action_repeat=1,
    env_params=None,
    memory=None,
    encoder="mlp",  # the datasets hold flat observations
)


def task_envs(dataset: MultiTaskDataset, eval_envs: Mapping[str, Any] | None) -> dict[str, Any]:
    """Each task's evaluation env (id or env) by name, after refusing another kind of dataset or other tasks."""
    if not isinstance(dataset, MultiTaskDataset):
        raise TypeError(
            f"dataset must be a MultiTaskDataset (ajax.buffers.MultiTaskDataset.from_datasets), got "
            f"{type(dataset).__name__}."
        )
    names = [task.name for task in dataset.tasks]
    envs = {name: name for name in names} if eval_envs is None else dict(eval_envs)
    if set(envs) != set(names):
        raise ValueError(
            f"eval_envs must name exactly the dataset's tasks {names}; got {sorted(envs)}. Map each task's "
            "name to its env id or env."
        )
    return envs


def task_env_args(task: TaskInfo, env: Any) -> EnvironmentConfig:
    """A task's evaluation env, refused unless it acts continuously in the task's sizes."""
    env_args = prepare_env(env, n_envs=1)
    if not env_args.continuous:
        raise ValueError(f"The eval env of task {task.name!r} has discrete actions; TD-MPC2 acts continuously.")
    if (env_args.observation_dim, env_args.action_dim) != (task.observation_dim, task.action_dim):
        raise ValueError(
            f"The eval env of task {task.name!r} has {env_args.observation_dim} observation and "
            f"{env_args.action_dim} action dimensions; the dataset's task has {task.observation_dim} and "
            f"{task.action_dim}."
        )
    return env_args


class TDMPC2MultiTask(TDMPC2):
    """TD-MPC2's model with a learned task embedding, trained offline on a `MultiTaskDataset`.

    `TDMPC2MultiTask(dataset, eval_envs={task: env}, model_size=..., task_dim=96)`. Every
    input of every network (encoder, dynamics, reward, Q-functions, policy prior) is joined
    by the task's embedding (norm at most 1); each row of a batch trains with its own task's
    embedding, action mask and discount (from the task's episode length). `n_timesteps`
    counts updates. With a `LoggingConfig`, every `log_frequency` updates each task is
    evaluated in its own env from Python, between compiled chunks of updates, and logged as
    `Eval/<task>/episodic mean reward` with `Eval/normalized score` (the mean over tasks of
    100 (return - low) / (high - low), each task's score range from the dataset).
    `eval_envs` maps each task's name to an env id or env (default: the names as ids).
    Defaults are the reference's for offline multi-task training: batches of 1,024; the
    rest as `TDMPC2`'s. Episodic mode is off, as the reference's multi-task model has no
    termination head.
    """

    name: ClassVar[str] = "TDMPC2MultiTask"
    built_on: ClassVar[str] = "dataset"
    make_train = staticmethod(make_train)
    hyperparameters: ClassVar[Hyperparameters] = keywords(
        eval_envs=checked_later(
            None,
            "a mapping of each task's name to an env id or env, or None",
            doc="where each task is evaluated (None: the env of the task's name)",
        ),
        model_size=SINGLE_TASK.declared["model_size"],
        task_dim=count(96, doc="the learned task embedding's width"),
    ) | SINGLE_TASK.with_defaults(batch_size=1024)

    def __init__(self, dataset: MultiTaskDataset, **settings: Any) -> None:
        envs = task_envs(dataset, settings.get("eval_envs"))
        # The single-task constructor checks every shared setting; its env is the first task's.
        super().__init__(envs[dataset.tasks[0].name], **settings)
        s = self.settings
        rows = np.bincount(np.asarray(dataset.task), minlength=len(dataset.tasks))
        for task, held in zip(dataset.tasks, rows, strict=True):
            if held < s.horizon:
                raise ValueError(
                    f"Task {task.name!r} has {held} rows in the dataset, fewer than one training window of "
                    f"horizon={s.horizon}: collect more of it, or lower horizon."
                )
        refuse_nonfinite(dataset, "TDMPC2MultiTask's dataset")  # one built in memory, not through `load`
        del self.config["eval_envs"]  # env ids or envs, not settings: config.json keeps the dataset's tasks
        self.eval_env_args = [task_env_args(task, envs[task.name]) for task in dataset.tasks]
        self.dataset = dataset
        base = self.agent_config
        planner = dataclasses.replace(base.planner, iterations=s.iterations + 2 * (dataset.action_dim >= WIDE_ACTIONS))
        arch = dataclasses.replace(
            base.arch,
            observation_dim=dataset.observation_dim,
            action_dim=dataset.action_dim,
            n_tasks=len(dataset.tasks),
            task_dim=s.task_dim,
        )
        self.agent_config = dataclasses.replace(base, arch=arch, planner=planner)
        self.config["resolved"] = {
            "tasks": [task.name for task in dataset.tasks],
            "discounts": [discount_from_episode_length(task.episode_length) for task in dataset.tasks],
            "iterations": planner.iterations,
            **dataclasses.asdict(arch.size),
        }

    def _replay(self, s: Settings) -> tuple[int, int | None]:
        """No replay: the dataset is sampled. The single-task checks see one window, and no warm-up beyond it."""
        return s.horizon, s.horizon

    def train_kwargs(self) -> dict[str, Any]:
        return {**super().train_kwargs(), "dataset": self.dataset}

    def first_update(self) -> None:
        """Offline: every step of a call is an update."""
        return None

    def train(
        self,
        seed: int | Sequence[int] | None = None,
        n_timesteps: int = 100_000,
        num_episode_test: int = 10,
        logging_config: LoggingConfig | None = None,
        initial_state: Any = None,
        total_timesteps: int | None = None,
        on_nonfinite: str = "warn",
    ) -> tuple[Any, dict[str, np.ndarray] | None]:
        """`n_timesteps` updates per seed; with a `LoggingConfig`, every task evaluated each `log_frequency` updates.

        The updates between two evaluations are one compiled program (chunks of equal length
        share it); the evaluations run from Python in between, one compiled program per task.
        """
        if logging_config is None:
            return super().train(
                seed, n_timesteps, num_episode_test, None, initial_state, total_timesteps, on_nonfinite
            )
        if num_episode_test < 1:
            raise ValueError(f"num_episode_test must be a positive integer, got {num_episode_test}.")
        start = 0 if initial_state is None else shared_counters(initial_state)["timestep"]
        end = start + int(n_timesteps)
        horizon = end if total_timesteps is None else int(total_timesteps)
        every = int(logging_config.log_frequency)
        state = initial_state
        if state is None:
            state, _ = super().train(seed, 0, num_episode_test, None, None, horizon, on_nonfinite)
        n_seeds = jax.tree.leaves(state.rng)[0].shape[0]
        names = list(seed) if isinstance(seed, Sequence) else [seed] if seed is not None else list(range(n_seeds))
        rows: list[dict[str, np.ndarray]] = []
        with recording(logging_config.with_config(self.config), names):
            timestep = start
            while timestep < end:
                stop = min((timestep // every + 1) * every, end)
                state, _ = super().train(None, stop - timestep, num_episode_test, None, state, horizon, on_nonfinite)
                timestep = stop
                if timestep % every == 0:
                    keys = jax.vmap(lambda one: evaluation_keys(one)[0])(state)
                    metrics = self._evaluate_tasks(state, num_episode_test, keys)
                    state = state.replace(n_logs=state.n_logs + 1)
                    metrics["timestep"] = np.full(n_seeds, timestep)
                    rows.append(metrics)
                    if logging_config.has_backend:
                        forward(np.asarray(timestep), {k: v for k, v in metrics.items() if k != "timestep"})
        if not rows:
            return state, None
        return state, {key: np.stack([row[key] for row in rows], axis=1) for key in rows[0]}

    def evaluate(self, state: Any, num_episode_test: int = 10, seed: int = 0) -> dict[str, np.ndarray]:
        """Every task's evaluation of every seed, with keys drawn from `seed` (the run left untouched)."""
        n_seeds = jax.tree.leaves(state.rng)[0].shape[0]
        return self._evaluate_tasks(state, num_episode_test, jax.random.split(jax.random.PRNGKey(seed), n_seeds))

    def _evaluate_tasks(self, state: Any, num_episode_test: int, keys: jax.Array) -> dict[str, np.ndarray]:
        metrics: dict[str, np.ndarray] = {}
        scores = []
        for index, (task, env_args) in enumerate(zip(self.dataset.tasks, self.eval_env_args, strict=True)):
            program_key = ("evaluate", index, num_episode_test)
            if program_key not in self._programs:
                policy = task_evaluation(self.agent_config, self.dataset, index)

                def one(state, key, env_args=env_args, policy=policy, index=index):
                    return evaluate(state, jax.random.fold_in(key, index), env_args, policy, num_episode_test)

                self._programs[program_key] = jax.jit(jax.vmap(one, axis_name=SEED_AXIS))
            result = self._programs[program_key](state, keys)
            episode_return = np.asarray(result[f"Eval/{RETURN}"])
            metrics[f"Eval/{task.name}/{RETURN}"] = episode_return
            metrics[f"Eval/{task.name}/normalized score"] = np.asarray(task.normalized(jnp.asarray(episode_return)))
            scores.append(metrics[f"Eval/{task.name}/normalized score"])
        metrics[SCORE] = np.mean(scores, axis=0)
        return metrics
