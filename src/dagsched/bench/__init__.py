"""The benchmark: suites, the runner (in-process, local processes or Ray), the results store,
statistics, the report and the adversarial search.

    from dagsched.bench import get_suite, run_suite, load_results
    summary = run_suite("quick", "results/quick", workers=2)
    rows = load_results("results/quick")

Names load lazily so that importing one submodule does not pull in the others (Ray, SQLAlchemy).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_LAZY = {
    "Cell": "suites",
    "Mode": "suites",
    "ProblemSpec": "suites",
    "Suite": "suites",
    "get_suite": "suite_file",
    "load_suite_file": "suite_file",
    "run_suite": "runner",
    "RunSummary": "runner",
    "ResultStore": "store",
    "load_results": "store",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"dagsched.bench.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'dagsched.bench' has no attribute {name!r}")


__all__ = sorted(_LAZY)
