"""Offline data of several tasks for one model: `MultiTaskDataset`.

TD-MPC2's multi-task model (Hansen et al. 2024, section 4) trains on the transitions of
tasks whose observations and actions differ in size. As the reference does for its mt30
and mt80 datasets, every observation is zero-padded to the largest observation size and
every action to the largest action size, and each row carries its task's index. Per task,
the dataset knows its sizes, its episode length (from which the discount follows), its
action mask (1 on the task's own action dimensions) and the range its returns are scored on.

The rows keep the conventions of `ajax.buffers.Dataset`: the action in [-1, 1] agent units,
`next_obs` the observation the step reached, a time limit apart from a true terminal. The
tasks' blocks lie one after another; the last row of each block is marked truncated, so a
window of consecutive rows never runs from one task's data into the next. `save` and `load`
keep a dataset as one .npz, so one made once (scripts/make_multitask_dataset.py) trains many runs.
"""

from __future__ import annotations

import dataclasses
import json
import os
import uuid
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from ajax.buffers.dataset import Dataset, refuse_nonfinite
from ajax.environments.interaction import Transition


@dataclass(frozen=True)
class TaskInfo:
    """One task of a multi-task dataset: its sizes, episode length and score range.

    `score_range` = (low, high): returns scored 0 and 100 by the normalised score, e.g. a
    random policy's return and an expert's (the reference scores DMC as return / 10, i.e. (0, 1000)).
    """

    name: str
    observation_dim: int
    action_dim: int
    episode_length: int
    score_range: tuple[float, float]

    def normalized(self, episode_return: jax.Array) -> jax.Array:
        low, high = self.score_range
        return 100.0 * (episode_return - low) / (high - low)


# The arrays a saved dataset holds, beside its tasks (as JSON under "tasks"), and the dtype each loads as.
_ARRAYS = {
    "obs": np.float32,
    "action": np.float32,
    "reward": np.float32,
    "next_obs": np.float32,
    "terminated": np.bool_,
    "truncated": np.bool_,
    "task": np.int32,
}


@struct.dataclass
class MultiTaskDataset:
    """Rows of several tasks, padded to common sizes, each with its task's index."""

    obs: jax.Array  # (size, max observation_dim), zero-padded
    action: jax.Array  # (size, max action_dim), zero-padded
    reward: jax.Array
    next_obs: jax.Array
    terminated: jax.Array
    truncated: jax.Array  # also True on the last row of every task's block
    task: jax.Array  # (size,) int32: the index of the row's task in `tasks`
    tasks: tuple[TaskInfo, ...] = struct.field(pytree_node=False)

    @classmethod
    def from_datasets(
        cls,
        datasets: Mapping[str, Dataset],
        episode_lengths: Mapping[str, int],
        score_ranges: Mapping[str, tuple[float, float]],
    ) -> MultiTaskDataset:
        """Pad and join one `Dataset` per task (in the mapping's order), each with its episode length and score range.

        Each dataset's episodes must follow one another in its rows, as `collect_dataset` with
        one env copy writes them.
        """
        if not datasets:
            raise ValueError("A multi-task dataset needs at least one task's Dataset.")
        for name, table in (("episode_lengths", episode_lengths), ("score_ranges", score_ranges)):
            missing = sorted(set(datasets) - set(table))
            if missing:
                raise ValueError(f"{name} has no entry for the tasks {missing}: give one per task.")
        for name, (low, high) in score_ranges.items():
            if not low < high:
                raise ValueError(f"score_ranges[{name!r}] = ({low}, {high}) must rise: (low, high) with low < high.")
        obs_dim = max(int(d.obs.shape[-1]) for d in datasets.values())
        action_dim = max(int(d.action.shape[-1]) for d in datasets.values())

        def pad(x: np.ndarray, width: int) -> np.ndarray:
            x = np.asarray(x, np.float32)
            return np.pad(x, ((0, 0), (0, width - x.shape[-1])))

        tasks, blocks = [], []
        for index, (name, data) in enumerate(datasets.items()):
            if data.action.ndim != 2:
                raise ValueError(f"Task {name!r} has discrete actions; TD-MPC2's multi-task model acts continuously.")
            refuse_nonfinite(data, f"Task {name!r}'s dataset")
            truncated = np.asarray(data.truncated, bool).copy()
            truncated[-1] = True  # the block's end: no window crosses into the next task
            blocks.append(
                {
                    "obs": pad(data.obs, obs_dim),
                    "action": pad(data.action, action_dim),
                    "reward": np.asarray(data.reward, np.float32),
                    "next_obs": pad(data.next_obs, obs_dim),
                    "terminated": np.asarray(data.terminated, bool),
                    "truncated": truncated,
                    "task": np.full(len(truncated), index, np.int32),
                }
            )
            tasks.append(
                TaskInfo(
                    name=name,
                    observation_dim=int(data.obs.shape[-1]),
                    action_dim=int(data.action.shape[-1]),
                    episode_length=int(episode_lengths[name]),
                    score_range=(float(score_ranges[name][0]), float(score_ranges[name][1])),
                )
            )
        joined = {key: jnp.asarray(np.concatenate([block[key] for block in blocks])) for key in blocks[0]}
        return cls(**joined, tasks=tuple(tasks))

    @property
    def size(self) -> int:
        return int(self.reward.shape[0])

    @property
    def observation_dim(self) -> int:
        return int(self.obs.shape[-1])

    @property
    def action_dim(self) -> int:
        return int(self.action.shape[-1])

    def action_masks(self) -> jax.Array:
        """(n_tasks, action_dim): 1 on each task's own action dimensions, 0 on the padding."""
        return jnp.asarray([[1.0] * t.action_dim + [0.0] * (self.action_dim - t.action_dim) for t in self.tasks])

    def windows(self, key: jax.Array, batch_size: int, horizon: int) -> tuple[Transition, jax.Array]:
        """`batch_size` windows of `horizon` consecutive rows, time-first, and each window's task (its first row's)."""
        starts = jax.random.randint(key, (batch_size,), 0, self.size - horizon + 1)
        rows = starts[None, :] + jnp.arange(horizon)[:, None]  # (H, B)
        window = Transition(
            obs=self.obs[rows],
            action=self.action[rows],
            reward=self.reward[rows],
            next_obs=self.next_obs[rows],
            terminated=self.terminated[rows],
            truncated=self.truncated[rows],
        )
        return window, self.task[starts]

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the rows and the tasks to one .npz at `path` (exactly that name), and return it.

        A dataset takes minutes of training and rollouts to make, so the file is written to a
        temporary name beside it and moved into place in one step: an interrupted save leaves
        the previous file (or none), never a truncated one. The tasks are stored as JSON, so
        the file loads without pickle.
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        arrays = {name: np.asarray(getattr(self, name)) for name in _ARRAYS}
        tasks = json.dumps([dataclasses.asdict(task) for task in self.tasks])
        # A fresh name in the same directory (os.replace cannot move across file systems),
        # created with the usual permissions, which tempfile's private 0600 files lack.
        temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        try:
            with open(temporary, "xb") as file:
                np.savez_compressed(file, **arrays, tasks=np.asarray(tasks))
            os.replace(temporary, path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> MultiTaskDataset:
        """The dataset `save` wrote at `path`, checked: a ValueError naming the file if it is damaged,
        lacks a key, its arrays and tasks do not fit together (a file edited or written by other code), or a
        float array holds a NaN or an infinity (`refuse_nonfinite`)."""
        path = Path(path)
        try:
            with np.load(path, allow_pickle=False) as file:
                contents = {name: file[name] for name in file.files}
        except FileNotFoundError:
            raise
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as error:
            raise ValueError(f"{path} is not a readable .npz written by MultiTaskDataset.save: {error}") from error
        missing = sorted((set(_ARRAYS) | {"tasks"}) - set(contents))
        if missing:
            raise ValueError(f"{path} lacks the keys {missing}: it was not written by MultiTaskDataset.save.")
        try:
            tasks = tuple(
                TaskInfo(**{**entry, "score_range": tuple(float(x) for x in entry["score_range"])})
                for entry in json.loads(str(contents["tasks"]))
            )
        except (TypeError, KeyError, ValueError) as error:
            raise ValueError(f"{path} holds tasks that are not a list of TaskInfo fields: {error}") from error
        if not tasks:
            raise ValueError(f"{path} names no task.")
        for task in tasks:
            low, high = task.score_range
            if not low < high:
                raise ValueError(f"{path}: task {task.name!r} has the score range ({low}, {high}), which must rise.")
        arrays = {name: contents[name].astype(dtype) for name, dtype in _ARRAYS.items()}
        size = int(arrays["reward"].shape[0]) if arrays["reward"].ndim else 0
        obs_dim = max(task.observation_dim for task in tasks)
        action_dim = max(task.action_dim for task in tasks)
        expected = {
            "obs": (size, obs_dim),
            "action": (size, action_dim),
            "reward": (size,),
            "next_obs": (size, obs_dim),
            "terminated": (size,),
            "truncated": (size,),
            "task": (size,),
        }
        for name, shape in expected.items():
            if arrays[name].shape != shape:
                raise ValueError(
                    f"{path}: {name} has shape {arrays[name].shape}, expected {shape} ({size} rows; tasks of at most "
                    f"{obs_dim} observation and {action_dim} action dimensions)."
                )
        if size < 1 or arrays["task"].min() < 0 or arrays["task"].max() >= len(tasks):
            raise ValueError(f"{path}: it needs a row, and every row's task id must index its {len(tasks)} tasks.")
        loaded = cls(**{name: jnp.asarray(array) for name, array in arrays.items()}, tasks=tasks)
        refuse_nonfinite(loaded, f"The dataset in {path}")
        return loaded
