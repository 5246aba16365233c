"""The vocabulary of dagsched and its compiled numpy form."""

from dagsched.model.compiled import EPS, CompiledProblem, compile_problem
from dagsched.model.entities import Cluster, Edge, Link, Node, Problem, Task, TaskRun, Workflow
from dagsched.model.errors import InputError, parse

__all__ = [
    "EPS",
    "Cluster",
    "CompiledProblem",
    "Edge",
    "InputError",
    "Link",
    "Node",
    "Problem",
    "Task",
    "TaskRun",
    "Workflow",
    "compile_problem",
    "parse",
]
