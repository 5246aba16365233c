"""One scheduler per file; importing this package registers them all."""

from dagsched.schedulers import (  # noqa: F401
    cpop,
    drl,
    drl_plan,
    drl_stream,
    fair,
    fcfs,
    fifo,
    heft,
    heft_lookahead,
    kube_default,
    max_min,
    mcts,
    min_min,
    peft,
    random,
    round_robin,
    sjf,
    sjf_cp,
    srpt_hold,
    tabu,
    tetris,
)
from dagsched.schedulers.base import (
    Decision,
    DecisionPoint,
    Scheduler,
    is_tree_search,
    make_scheduler,
    register,
    registered_names,
    simulate,
)

__all__ = [
    "Decision",
    "DecisionPoint",
    "Scheduler",
    "is_tree_search",
    "make_scheduler",
    "register",
    "registered_names",
    "simulate",
]
