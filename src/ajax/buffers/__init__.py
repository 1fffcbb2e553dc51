"""Replay buffers (flashbax) and offline datasets."""

from ajax.buffers.dataset import Dataset, collect_dataset
from ajax.buffers.multitask import MultiTaskDataset, TaskInfo
from ajax.buffers.replay import ReplayBuffer

__all__ = ["Dataset", "MultiTaskDataset", "ReplayBuffer", "TaskInfo", "collect_dataset"]
