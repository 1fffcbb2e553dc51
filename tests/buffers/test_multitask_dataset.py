"""MultiTaskDataset: padding, task ids and masks, block ends, windows, scores, and the file it saves and loads.

Hand-built tasks, no env and no training: task "wide" (3 observations, 2 actions, 5 rows) and
task "narrow" (1 observation, 1 action, 4 rows), each row's first observation its row number.
"""

import json

import jax
import numpy as np
import pytest

from ajax.buffers import Dataset, MultiTaskDataset, TaskInfo

RANGES = {"wide": (-10.0, 30.0), "narrow": (0.0, 1.0)}
LENGTHS = {"wide": 5, "narrow": 2}


def table(n_rows: int, obs_dim: int, action_dim: int, first_row: int) -> Dataset:
    rows = np.arange(first_row, first_row + n_rows, dtype=np.float32)
    obs = np.stack([rows + 0.1 * k for k in range(obs_dim)], axis=1)
    return Dataset(
        obs=obs,
        action=np.full((n_rows, action_dim), 0.5, np.float32),
        reward=rows,
        next_obs=obs + 1.0,
        terminated=np.zeros(n_rows, bool),
        truncated=np.arange(n_rows) == 1,  # a time limit inside the block, kept as it is
    )


@pytest.fixture
def dataset() -> MultiTaskDataset:
    return MultiTaskDataset.from_datasets(
        {"wide": table(5, 3, 2, first_row=0), "narrow": table(4, 1, 1, first_row=5)},
        episode_lengths=LENGTHS,
        score_ranges=RANGES,
    )


def test_from_datasets_pads_with_zeros_and_gives_every_row_its_task(dataset):
    assert (dataset.size, dataset.observation_dim, dataset.action_dim) == (9, 3, 2)
    np.testing.assert_array_equal(dataset.task, [0] * 5 + [1] * 4)
    np.testing.assert_allclose(dataset.obs[:, 0], np.arange(9))  # the rows in order, task after task
    np.testing.assert_allclose(dataset.obs[5:, 1:], 0.0)  # narrow's missing observations
    np.testing.assert_allclose(dataset.next_obs[5:, 1:], 0.0)
    np.testing.assert_allclose(dataset.next_obs[5:, 0], np.arange(5, 9) + 1.0)
    np.testing.assert_allclose(dataset.action[5:], [[0.5, 0.0]] * 4)  # narrow's missing action
    np.testing.assert_allclose(dataset.action[:5], 0.5)
    np.testing.assert_allclose(dataset.action_masks(), [[1.0, 1.0], [1.0, 0.0]])
    assert dataset.tasks == (
        TaskInfo("wide", observation_dim=3, action_dim=2, episode_length=5, score_range=(-10.0, 30.0)),
        TaskInfo("narrow", observation_dim=1, action_dim=1, episode_length=2, score_range=(0.0, 1.0)),
    )


def test_the_last_row_of_every_block_is_truncated_and_the_rest_kept(dataset):
    np.testing.assert_array_equal(np.flatnonzero(dataset.truncated), [1, 4, 6, 8])
    assert not np.any(dataset.terminated)


@pytest.mark.parametrize(
    "lengths, ranges, message",
    [
        ({"wide": 5}, RANGES, r"episode_lengths has no entry for the tasks \['narrow'\]"),
        (LENGTHS, {"narrow": (0.0, 1.0)}, r"score_ranges has no entry for the tasks \['wide'\]"),
        (LENGTHS, {**RANGES, "wide": (30.0, -10.0)}, r"score_ranges\['wide'\] = \(30.0, -10.0\) must rise"),
        (LENGTHS, {**RANGES, "narrow": (1.0, 1.0)}, r"must rise"),
    ],
)
def test_from_datasets_refuses_a_missing_length_or_score_range_and_a_range_that_does_not_rise(lengths, ranges, message):
    with pytest.raises(ValueError, match=message):
        MultiTaskDataset.from_datasets(
            {"wide": table(5, 3, 2, 0), "narrow": table(4, 1, 1, 5)}, episode_lengths=lengths, score_ranges=ranges
        )


def test_windows_are_time_first_consecutive_rows_with_their_first_rows_task(dataset):
    window, task = dataset.windows(jax.random.PRNGKey(0), batch_size=64, horizon=3)
    assert window.obs.shape == (3, 64, 3) and window.action.shape == (3, 64, 2) and window.reward.shape == (3, 64)
    assert task.shape == (64,)
    starts = np.asarray(window.obs[0, :, 0]).astype(int)
    np.testing.assert_allclose(window.obs[:, :, 0], starts[None, :] + np.arange(3)[:, None])
    np.testing.assert_array_equal(task, np.asarray(dataset.task)[starts])
    assert set(starts) == set(range(7))  # every start a whole window fits after, none past it
    # Windows from rows 3 and 4 run into narrow's block: they are wide's, and truncated where wide ends.
    crossing = starts == 4
    assert np.any(crossing) and np.all(np.asarray(task)[crossing] == 0)
    assert np.all(np.asarray(window.truncated)[0, crossing])


def test_normalized_scores_the_range_from_0_to_100():
    info = TaskInfo("task", observation_dim=1, action_dim=1, episode_length=10, score_range=(-10.0, 30.0))
    np.testing.assert_allclose(info.normalized(np.array([-10.0, 30.0, 10.0, 50.0])), [0.0, 100.0, 50.0, 150.0])


def test_save_then_load_gives_back_every_array_and_the_tasks(dataset, tmp_path):
    path = dataset.save(tmp_path / "data" / "multitask.npz")
    assert path == tmp_path / "data" / "multitask.npz" and sorted(p.name for p in path.parent.iterdir()) == [path.name]
    loaded = MultiTaskDataset.load(path)
    assert loaded.tasks == dataset.tasks
    for name in ("obs", "action", "reward", "next_obs", "terminated", "truncated", "task"):
        original, back = np.asarray(getattr(dataset, name)), np.asarray(getattr(loaded, name))
        assert back.dtype == original.dtype, name
        np.testing.assert_array_equal(back, original, err_msg=name)


def test_a_failed_save_leaves_the_previous_file_and_no_temporary_one(dataset, tmp_path, monkeypatch):
    path = dataset.save(tmp_path / "multitask.npz")
    before = path.read_bytes()

    def interrupted(file, **arrays):
        file.write(b"half a file")
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez_compressed", interrupted)
    with pytest.raises(KeyboardInterrupt):
        dataset.save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_from_datasets_refuses_a_tasks_nonfinite_value_naming_the_task_field_and_row():
    wide = table(5, 3, 2, first_row=0)
    broken = wide.replace(action=wide.action.copy())
    broken.action[3, 1] = np.inf
    with pytest.raises(ValueError, match=r"Task 'wide'.s dataset holds an infinity \(inf\) in action at index 3 "):
        MultiTaskDataset.from_datasets({"wide": broken}, LENGTHS, RANGES)


def write(path, dataset: MultiTaskDataset, **changes) -> None:
    """A file like save's, with some entries changed (None: left out)."""
    contents = {name: np.asarray(getattr(dataset, name)) for name in ("obs", "action", "reward", "next_obs")}
    contents |= {name: np.asarray(getattr(dataset, name)) for name in ("terminated", "truncated", "task")}
    contents["tasks"] = np.asarray(json.dumps([vars(task) for task in dataset.tasks]))
    contents |= changes
    np.savez(path, **{name: value for name, value in contents.items() if value is not None})


def test_load_refuses_a_damaged_file_naming_it(dataset, tmp_path):
    path = dataset.save(tmp_path / "multitask.npz")
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(ValueError, match=r"multitask.npz is not a readable .npz written by MultiTaskDataset.save"):
        MultiTaskDataset.load(path)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"task": None}, r"lacks the keys \['task'\]"),
        ({"tasks": None, "reward": None}, r"lacks the keys \['reward', 'tasks'\]"),
        ({"obs": np.zeros((9, 2), np.float32)}, r"obs has shape \(9, 2\), expected \(9, 3\)"),
        ({"truncated": np.zeros(8, bool)}, r"truncated has shape \(8,\), expected \(9,\)"),
        ({"task": np.full(9, 2, np.int32)}, r"every row's task id must index its 2 tasks"),
        ({"tasks": np.asarray(json.dumps([{"name": "wide"}]))}, r"holds tasks that are not a list of TaskInfo"),
        ({"reward": np.where(np.arange(9) == 6, np.nan, 0.0)}, r"holds a NaN in reward at index 6 \(of 9\)"),
    ],
)
def test_load_refuses_a_file_missing_a_key_or_whose_arrays_and_tasks_disagree(dataset, tmp_path, changes, message):
    path = tmp_path / "edited.npz"
    write(path, dataset, **changes)
    with pytest.raises(ValueError, match=message) as refusal:
        MultiTaskDataset.load(path)
    assert str(path) in str(refusal.value)
