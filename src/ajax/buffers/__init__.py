"""Replay buffers (flashbax)."""

from ajax.buffers.replay import ReplayBuffer

__all__ = ["ReplayBuffer"]
