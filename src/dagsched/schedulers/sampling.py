"""sampling: HEFT's upward rank, sampled and decoded by HEFT's list scheduler; the best plan on predictions runs.

What it does: `drl`'s planner with no network. The centre the samples are drawn around is each task's upward
rank over the critical path, times a fixed scale; K plans of it perturbed by Gumbel noise, in cross-entropy
rounds, beside HEFT's, PEFT's and CPOP's plans and orders; the candidate of least planned makespan runs
(`schedulers.priority_sampling`, where the sampler and the decoder are described).
Why it is the service's default: on problems none of them saw, `drl`'s trained scores sample no shorter plans
than this centre at the same K (docs/planner.md, "Where the network stands"), so the default plans without a
network: no PyTorch on its path, the same plans for a seed.
Sources: Jeon et al., one-shot priority sampling (ICLR 2023) for sampling priorities around a centre; HEFT
(Topcuoglu et al. 2002) for the centre and the decoder.
Complexity, tie-breaks and departures: `drl`'s (K from the same time budget and cost model).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from dagsched.schedulers.base import register
from dagsched.schedulers.priority_sampling import SERVICE_SAMPLING, PrioritySampling


@register
class RankSampling(PrioritySampling):
    """Untrained priority sampling (`sampling`): `drl` with the upward rank as its scores, no policy to load."""

    name = "sampling"
    needs = frozenset[str]()
    service_options = MappingProxyType(SERVICE_SAMPLING)
    best_for = (
        "one workflow at a time, the service's default: HEFT's, CPOP's and PEFT's plans and K samples around the"
        " upward rank, the shortest runs; never longer than HEFT on predictions"
    )

    def __init__(self, **options: Any) -> None:
        super().__init__(scores="rank_u", **options)
