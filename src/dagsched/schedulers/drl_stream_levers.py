"""The learned dispatch index with its parallelism cap and admission hold: `drl_stream` at the lever weights.

`drl_stream` loading `stream-index-v1-levers.safetensors` (`policy.stream_index.SHIPPED_LEVERS`): the same order,
hold and node heads, and per workflow with a ready task a learned cap (a hard limit at a factor of its weighted fair
share, as `fair_cap`'s) and, while none of its tasks has started, a learned admission hold (as `srpt_admit`'s); both
heads are still at the hand rules' values (factor 4, busy share 0.85, ratio 1). `drl_stream` with its default
weights has no lever heads, so the two levers need this name to be picked where schedulers are chosen by name (the
benchmark, the CLI, the service).
Source, complexity and ties: `drl_stream`'s (docs/shared-cluster.md, "Parallelism caps and admission").
"""

from __future__ import annotations

from dagsched.policy.stream_index import SHIPPED_LEVERS
from dagsched.schedulers.base import register
from dagsched.schedulers.drl_stream import DRLStream


@register
class DRLStreamLevers(DRLStream):
    name = "drl_stream_levers"
    best_for = (
        "heterogeneous shared clusters under load with long streams: the shortest mean completion measured on "
        "hetero-16 at 150 workflows (0.980 and 0.909 x srpt_hold, Poisson and bursty); on homogeneous ones fair_cap"
    )
    default_weights = SHIPPED_LEVERS
