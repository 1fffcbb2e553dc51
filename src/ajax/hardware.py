"""Which JAX, backend and devices a run uses, in one line.

An accelerator's JAX build that failed to install, or a `JAX_PLATFORMS` left over in the shell, makes
JAX run on the CPU with at most a warning that scrolls away; the run then looks like any other, only
slower. `ajax train` prints `device_report()` before it trains so that a run says where it ran, and
`python -c "import ajax; print(ajax.device_report())"` checks an installation without training.

This module sits below the agents and the commands: it imports JAX only, so anything may import it.
"""

from __future__ import annotations

import os
from typing import Any

import jax

GIB = 2**30


def device_info() -> dict[str, Any]:
    """What `device_report` says, as data: JAX's version, the backend a run uses and its devices.

    Keys: `jax` (the version), `backend` (`jax.default_backend()`: "cpu", "gpu" or "tpu"),
    `n_devices` (the backend's devices across every process), `device_kind` (the first device's,
    such as "TPU v5 lite"), `memory_bytes` (the first device's memory limit as its runtime reports
    it; None where it reports none, as on the CPU), `process_count`, and `jax_platforms` (the
    environment's `JAX_PLATFORMS`, which restricts the backends JAX may pick; None when unset).
    """
    devices = jax.devices()
    stats = devices[0].memory_stats() or {}
    return {
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "n_devices": len(devices),
        "device_kind": devices[0].device_kind,
        "memory_bytes": stats.get("bytes_limit"),
        "process_count": jax.process_count(),
        "jax_platforms": os.environ.get("JAX_PLATFORMS") or None,
    }


def device_report() -> str:
    """One line naming JAX's version, the backend, the number and kind of devices and, where known, their memory.

    For example `JAX 0.10.2, backend tpu: 1 device, TPU v5 lite, 15.7 GiB` or, with the CPU
    forced, `JAX 0.10.2, backend cpu: 1 device, cpu (JAX_PLATFORMS=cpu)`.
    """
    info = device_info()
    n = info["n_devices"]
    parts = [f"{n} device{'s' if n != 1 else ''}", info["device_kind"]]
    if info["memory_bytes"] is not None:
        memory = f"{info['memory_bytes'] / GIB:.1f} GiB"
        parts.append(memory if n == 1 else f"{memory} on the first")
    if info["process_count"] > 1:
        parts.append(f"{info['process_count']} processes")
    line = f"JAX {info['jax']}, backend {info['backend']}: {', '.join(parts)}"
    if info["jax_platforms"] is not None:
        line += f" (JAX_PLATFORMS={info['jax_platforms']})"
    return line
