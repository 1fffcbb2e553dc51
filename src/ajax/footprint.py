"""What a run's state takes in memory, checked before anything is allocated.

A run's state is one pytree whose size is known from its shapes alone (`jax.eval_shape`):
the replay buffers dominate it, times the seeds. A run that cannot fit is refused with the
figure and the fields that take the most, instead of being killed by the operating system
midway with no word from Ajax (a million-row DreamerV3 replay is 2.6 GB a seed). A replay is
allocated for what its run's horizon writes (`ActorCritic.replay_capacity`), so the figure is
that of the run asked for, not of buffer_size.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import jax

# The share of the memory available when the run starts that its state may take: the
# program's working arrays, the evaluations and the interpreter need the rest.
HEADROOM = 0.8


def leaf_bytes(tree: Any) -> list[tuple[str, int]]:
    """Every array of `tree` (shapes suffice) with its path and size in bytes, largest first."""
    sized = [
        (jax.tree_util.keystr(path, simple=True, separator="."), math.prod(leaf.shape) * leaf.dtype.itemsize)
        for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]
    ]
    return sorted(sized, key=lambda item: -item[1])


def available_bytes(device: jax.Device | None = None) -> int | None:
    """The memory a new run can take on `device` (default: the first): an accelerator's free
    memory, or on a CPU the host's available memory (Linux's MemAvailable); None if unknown."""
    device = device or jax.devices()[0]
    if device.platform != "cpu":
        stats = device.memory_stats() or {}
        if "bytes_limit" in stats:
            return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
        return None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def gigabytes(n: int) -> str:
    return f"{n / 1e9:.1f} GB"


def check_fits(skeleton: Any, agent: str, n_seeds: int, available: int | None = None) -> None:
    """Refuse a state larger than the memory it may take, naming what takes the most and what to lower."""
    available = available_bytes() if available is None else available
    if available is None:
        return
    sizes = leaf_bytes(skeleton)
    total = sum(size for _, size in sizes)
    if total <= HEADROOM * available:
        return
    largest = ", ".join(f"{path} {gigabytes(size)}" for path, size in sizes[:3])
    raise MemoryError(
        f"{agent}'s state for {n_seeds} seed(s) would take {gigabytes(total)}, more than the "
        f"{gigabytes(int(HEADROOM * available))} this run may use ({HEADROOM:.0%} of the {gigabytes(available)} "
        f"available). The largest arrays: {largest}. Lower buffer_size (a replay takes the transitions the "
        "run's horizon writes, at most buffer_size) or train fewer seeds at once."
    )
