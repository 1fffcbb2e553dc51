"""Logging configuration and, with a backend on, the writers."""

from ajax.logging.wandb_logging import LoggingConfig

__all__ = ["LoggingConfig"]
