"""One scheduler per file; importing this package registers them all.

Every module of the package is imported here, found by `pkgutil` in name order: a scheduler in a new file is
registered by its `@register` alone, with no list to edit. Modules of shared machinery (`base`, `static`,
`greedy`, `search_common`, `rollout`, `progress`, ...) register nothing and are imported all the same.
"""

import importlib
import pkgutil

from dagsched.schedulers.base import (
    Decision,
    DecisionPoint,
    Scheduler,
    default_scheduler,
    is_tree_search,
    make_scheduler,
    register,
    registered_names,
    scheduler_class,
    simulate,
)

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = [
    "Decision",
    "DecisionPoint",
    "Scheduler",
    "default_scheduler",
    "is_tree_search",
    "make_scheduler",
    "register",
    "registered_names",
    "scheduler_class",
    "simulate",
]
