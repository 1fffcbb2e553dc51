"""The spans JAX reports for tracing, lowering and compiling, recorded while a block runs.

Its own module, importing nothing of Ajax, so a peer's benchmark worker (Rejax in its own
environment) times its compilation the same way Ajax's are timed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import Any

import jax

# The events JAX times around tracing to a jaxpr, lowering to MLIR and the backend compile
# (jax/_src/dispatch.py: JAXPR_TRACE_EVENT, JAXPR_TO_MLIR_MODULE_EVENT, BACKEND_COMPILE_EVENT),
# by the name a benchmark row gives each stage.
STAGES = {
    "trace_s": "/jax/core/compile/jaxpr_trace_duration",
    "lower_s": "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "backend_compile_s": "/jax/core/compile/backend_compile_duration",
}
COMPILE_EVENTS = frozenset(STAGES.values())


class CompileSpans:
    """The spans JAX reports for tracing, lowering and compiling while it is active.

    JAX calls a duration listener as each span ends, with its length: the span is
    (now - duration, now). Nested spans (a jit traced inside another's trace) overlap, so
    `total()` is the length of their union.
    """

    _lock = threading.Lock()
    _active: list[CompileSpans] = []
    _registered = False

    def __init__(self) -> None:
        self.spans: list[tuple[float, float]] = []
        self.by_event: dict[str, list[tuple[float, float]]] = {}
        self.by_program: dict[str, float] = {}  # backend-compile seconds by the program's name

    @classmethod
    def _listener(cls, event: str, duration: float, **kwargs: Any) -> None:
        if event not in COMPILE_EVENTS:
            return
        end = time.time()
        program = str(kwargs.get("fun_name", "?"))
        with cls._lock:
            for recorder in cls._active:
                recorder.spans.append((end - duration, end))
                recorder.by_event.setdefault(event, []).append((end - duration, end))
                if event == STAGES["backend_compile_s"]:
                    recorder.by_program[program] = recorder.by_program.get(program, 0.0) + duration

    def __enter__(self) -> CompileSpans:
        with CompileSpans._lock:
            if not CompileSpans._registered:
                jax.monitoring.register_event_duration_secs_listener(CompileSpans._listener)
                CompileSpans._registered = True
            CompileSpans._active.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        with CompileSpans._lock:
            CompileSpans._active.remove(self)

    def slowest_programs(self, n: int = 6) -> dict[str, float]:
        """The `n` programs whose backend compiles took longest, with their seconds."""
        ranked = sorted(self.by_program.items(), key=lambda item: -item[1])[:n]
        return {name: round(seconds, 3) for name, seconds in ranked}

    def total(self, event: str | None = None) -> float:
        """The union of every span, or of one event's (tracing, lowering or compiling) alone."""
        return union_length(self.spans if event is None else self.by_event.get(event, []))


def union_length(spans: Iterable[tuple[float, float]]) -> float:
    """The length of the union of `(start, end)` intervals: overlaps counted once."""
    total, current_start, current_end = 0.0, None, None
    for start, end in sorted(spans):
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        total += current_end - current_start
    return total
