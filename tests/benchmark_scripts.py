"""The scripts under benchmarks/ as modules, for their tests: they are run by hand, not installed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
STUDIES = BENCHMARKS / "studies"


def load_benchmark(name: str) -> ModuleType:
    """benchmarks/`name`.py imported under its file's stem (registered in sys.modules, as its dataclasses need).

    A study is named with its folder: `load_benchmark("studies/dqn_stability")`.
    """
    return load_script(BENCHMARKS / f"{name}.py")


def load_script(path: Path) -> ModuleType:
    """The repository's script at `path` (benchmarks/, scripts/) imported under its file's stem."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module
