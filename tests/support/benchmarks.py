"""The benchmark scripts imported as modules, for tests of their pure parts."""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType

from tests.support.paths import BENCHMARKS


def import_benchmark(name: str) -> ModuleType:
    """``benchmarks/NAME.py`` imported as the module ``NAME`` (the scripts import one another
    by bare name); the environment is restored after it, since benchmarks/common.py sets
    defaults for its own processes when imported."""
    environ = dict(os.environ)
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCHMARKS))
        os.environ.clear()
        os.environ.update(environ)
