"""One scheduler per file; importing this package registers them all."""

from dagsched.schedulers import fcfs, heft, random  # noqa: F401
from dagsched.schedulers.base import Decision, Scheduler, make_scheduler, register, registered_names

__all__ = ["Decision", "Scheduler", "make_scheduler", "register", "registered_names"]
