"""Replay buffers (flashbax) and offline datasets."""

from ajax.buffers.dataset import Dataset, collect_dataset
from ajax.buffers.replay import ReplayBuffer

__all__ = ["Dataset", "ReplayBuffer", "collect_dataset"]
