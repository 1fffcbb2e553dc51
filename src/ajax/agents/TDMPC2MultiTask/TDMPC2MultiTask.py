"""TDMPC2MultiTask: one TD-MPC2 model trained offline on several tasks (Hansen et al. 2024, section 4)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from ajax.agents.base import run_config, shared_counters
from ajax.agents.TDMPC2.core import discount_from_episode_length
from ajax.agents.TDMPC2.TDMPC2 import TDMPC2, WIDE_ACTIONS
from ajax.agents.TDMPC2MultiTask.train_TDMPC2MultiTask import make_train, task_evaluation
from ajax.buffers.multitask import MultiTaskDataset
from ajax.checks import require_counts
from ajax.environments.create import prepare_env
from ajax.evaluate import evaluate
from ajax.extensions import Extension
from ajax.log import evaluation_keys
from ajax.logging.wandb_logging import LoggingConfig
from ajax.logging.worker import forward, recording
from ajax.state import SEED_AXIS

RETURN = "episodic mean reward"
SCORE = "Eval/normalized score"


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
    make_train = staticmethod(make_train)
    # The multi-task model has no termination head, and each task takes its discount from its episodes.
    sweepable: ClassVar[frozenset[str]] = TDMPC2.sweepable - {"gamma", "termination_coef"}

    def __init__(
        self,
        dataset: MultiTaskDataset,
        eval_envs: Mapping[str, Any] | None = None,
        model_size: int = 5,
        task_dim: int = 96,
        batch_size: int = 1024,
        learning_rate: float = 3e-4,
        enc_lr_scale: float = 0.3,
        grad_clip_norm: float = 20.0,
        tau: float = 0.01,
        rho: float = 0.5,
        entropy_coef: float = 1e-4,
        consistency_coef: float = 20.0,
        reward_coef: float = 0.1,
        value_coef: float = 0.1,
        horizon: int = 3,
        iterations: int = 6,
        num_samples: int = 512,
        num_elites: int = 64,
        num_pi_trajs: int = 24,
        min_std: float = 0.05,
        max_std: float = 2.0,
        temperature: float = 0.5,
        mpc: bool = True,
        num_bins: int = 101,
        vmin: float = -10.0,
        vmax: float = 10.0,
        simnorm_dim: int = 8,
        dropout: float = 0.01,
        enc_dim: int | None = None,
        mlp_dim: int | None = None,
        latent_dim: int | None = None,
        num_enc_layers: int | None = None,
        num_q: int | None = None,
        extensions: Sequence[Extension] = (),
    ) -> None:
        config = run_config(locals(), self.name, exclude=("dataset", "eval_envs"))
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
        # horizon also sizes the single-task constructor's replay and warm-up below: checked here, a
        # mistaken horizon is refused by its own name.
        require_counts(task_dim=task_dim, horizon=horizon)
        arguments = {k: v for k, v in config.items() if k not in ("algo_name", "task_dim")}
        # The single-task constructor checks every shared setting; its env is the first task's.
        super().__init__(envs[names[0]], n_envs=1, buffer_size=horizon, seed_steps=horizon, episodic=False, **arguments)
        self.config = config
        self.eval_env_args = []
        for task in dataset.tasks:
            env_args = prepare_env(envs[task.name], n_envs=1)
            if not env_args.continuous:
                raise ValueError(f"The eval env of task {task.name!r} has discrete actions; TD-MPC2 acts continuously.")
            if (env_args.observation_dim, env_args.action_dim) != (task.observation_dim, task.action_dim):
                raise ValueError(
                    f"The eval env of task {task.name!r} has {env_args.observation_dim} observation and "
                    f"{env_args.action_dim} action dimensions; the dataset's task has {task.observation_dim} and "
                    f"{task.action_dim}."
                )
            self.eval_env_args.append(env_args)
        self.dataset = dataset
        base = self.agent_config
        planner = dataclasses.replace(base.planner, iterations=iterations + 2 * (dataset.action_dim >= WIDE_ACTIONS))
        arch = dataclasses.replace(
            base.arch,
            observation_dim=dataset.observation_dim,
            action_dim=dataset.action_dim,
            n_tasks=len(dataset.tasks),
            task_dim=task_dim,
        )
        self.agent_config = dataclasses.replace(base, arch=arch, planner=planner)
        self.config["resolved"] = {
            "tasks": names,
            "discounts": [discount_from_episode_length(task.episode_length) for task in dataset.tasks],
            "iterations": planner.iterations,
            **dataclasses.asdict(arch.size),
        }

    def train_kwargs(self) -> dict[str, Any]:
        return {**super().train_kwargs(), "dataset": self.dataset}

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
