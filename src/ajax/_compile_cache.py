"""The persistent JAX compile cache that `import ajax` switches on.

A second process that compiles the same program loads it from disk instead. Entries are
kept per CPU model, architecture, Python, JAX and jaxlib version, so machines sharing a
home directory, or environments with other versions, never load each other's programs.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from pathlib import Path

DEFAULT_ROOT = Path.home() / ".cache" / "ajax" / "jax_compile_cache"


def cpu_model() -> str:
    """The CPU's model name: cache entries (and benchmark rows) are only valid on the same one."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown-cpu"


def cache_subdirectory() -> str:
    """The name of this machine's and these versions' own cache directory."""
    import jax
    import jaxlib

    cpu = re.sub(r"[^A-Za-z0-9]+", "-", cpu_model()).strip("-")[:48]
    python = "py{}.{}".format(*sys.version_info[:2])
    return f"{platform.machine()}-{cpu}-{python}-jax{jax.__version__}-jaxlib{jaxlib.__version__}"


def cache_root() -> Path:
    return Path(os.environ.get("AJAX_JAX_COMPILE_CACHE_DIR", DEFAULT_ROOT)).expanduser()


def configure() -> Path | None:
    """Point JAX at the cache; `AJAX_NO_COMPILE_CACHE=1` leaves it off. Returns the directory used."""
    if os.environ.get("AJAX_NO_COMPILE_CACHE", "") not in ("", "0"):
        return None
    import jax

    directory = cache_root() / cache_subdirectory()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None  # a read-only home must not stop the import
    jax.config.update("jax_compilation_cache_dir", str(directory))
    # Small programs are worth caching too: tests and short runs compile many of them.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return directory


def prune(root: str | os.PathLike, max_bytes: int) -> list[Path]:
    """Delete the least recently used cache files under `root` until the rest fit in `max_bytes`."""
    files = [p for p in Path(root).rglob("*") if p.is_file()]
    files.sort(key=lambda p: p.stat().st_atime)
    total = sum(p.stat().st_size for p in files)
    removed = []
    for path in files:
        if total <= max_bytes:
            break
        total -= path.stat().st_size
        path.unlink(missing_ok=True)
        removed.append(path)
    return removed


# JAX's monitoring events: one duration per backend compile (a cache read included), and on a
# hit a count with the compile time the stored program once took.
BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"
CACHE_HIT = "/jax/compilation_cache/cache_hits"
CACHE_WRITE = "/jax/compilation_cache/cache_misses"
TIME_SAVED = "/jax/compilation_cache/compile_time_saved_sec"
CACHE_READ = "/jax/compilation_cache/cache_retrieval_time_sec"


class CompileTally:
    """What a command compiled and what it loaded from the compile cache, counted from JAX's own
    monitoring events while the context is open, so that a user sees whether a second run hit
    the cache instead of guessing from its wall time."""

    def __init__(self) -> None:
        self.programs = self.loaded = self.stored = 0
        self.backend_s = self.saved_s = self.read_s = 0.0

    def _event(self, event: str, **_: object) -> None:
        if event == CACHE_HIT:
            self.loaded += 1
        elif event == CACHE_WRITE:
            self.stored += 1

    def _duration(self, event: str, seconds: float, **_: object) -> None:
        if event == BACKEND_COMPILE:
            self.programs += 1
            self.backend_s += seconds
        elif event == TIME_SAVED:
            self.saved_s += seconds
        elif event == CACHE_READ:
            self.read_s += seconds

    def __enter__(self) -> CompileTally:
        from jax import monitoring

        monitoring.register_event_listener(self._event)
        monitoring.register_event_duration_secs_listener(self._duration)
        return self

    def __exit__(self, *exc: object) -> None:
        from jax import monitoring

        monitoring.unregister_event_listener(self._event)
        monitoring.unregister_event_duration_listener(self._duration)

    def summary(self) -> str:
        """One line: the programs compiled and their seconds, those loaded and the seconds saved."""
        compiled = self.programs - self.loaded
        line = f"XLA programs: {compiled} compiled in {max(self.backend_s - self.read_s, 0.0):.1f} s"
        if self.loaded:
            line += f", {self.loaded} loaded from the compile cache ({self.saved_s:.1f} s of compiling saved)"
        elif configured_directory() is None:
            line += " (the compile cache is off)"
        if self.stored:
            line += f"; {self.stored} stored for the next run"
        return line + "."


def configured_directory() -> str | None:
    """The compile cache directory JAX writes to, or None when the cache is off."""
    import jax

    return jax.config.jax_compilation_cache_dir
