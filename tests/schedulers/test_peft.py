"""PEFT on the textbook example of the HEFT paper, checked against an independent implementation."""

from __future__ import annotations

import pytest

from dagsched.model import CompiledProblem
from dagsched.model.ranks import optimistic_cost_table
from dagsched.schedulers import simulate
from dagsched.sim.config import SimConfig

CLASSIC = SimConfig(classic=True)
Costs = dict[int, tuple[int, int, int]]
Comm = dict[tuple[int, int], int]


def reference_oct(costs: Costs, comm: Comm) -> dict[int, list[float]]:
    """OCT(t, p) = max over children s of min over q of OCT(s, q) + w(s, q) + (c(t, s) if q != p), from the paper."""
    procs = range(3)
    table: dict[int, list[float]] = {}

    def oct_row(t: int) -> list[float]:
        if t not in table:
            children = [s for (a, s) in comm if a == t]
            table[t] = [
                max(
                    (
                        min(oct_row(s)[q] + costs[s][q] + (comm[(t, s)] if q != p else 0) for q in procs)
                        for s in children
                    ),
                    default=0.0,
                )
                for p in procs
            ]
        return table[t]

    for t in costs:
        oct_row(t)
    return table


def reference_peft(costs: Costs, comm: Comm) -> dict[int, tuple[int, float, float]]:
    """A plain transcription of PEFT's pseudo-code: task -> (processor, start, finish)."""
    oct_ = reference_oct(costs, comm)
    rank = {t: sum(row) / 3 for t, row in oct_.items()}
    parents = {t: [a for (a, b) in comm if b == t] for t in costs}
    placed: dict[int, tuple[int, float, float]] = {}
    busy: list[list[tuple[float, float]]] = [[], [], []]
    while len(placed) < len(costs):
        ready = [t for t in costs if t not in placed and all(p in placed for p in parents[t])]
        t = max(ready, key=lambda t: (rank[t], -t))
        best: tuple[float, int, float] | None = None
        for p in range(3):
            est = max((placed[a][2] + (comm[(a, t)] if placed[a][0] != p else 0) for a in parents[t]), default=0.0)
            for s, e in sorted(busy[p]):  # insertion: first gap long enough
                if est + costs[t][p] <= s:
                    break
                est = max(est, e)
            o_eft = est + costs[t][p] + oct_[t][p]
            if best is None or o_eft < best[0]:
                best = (o_eft, p, est)
        assert best is not None
        _, p, start = best
        placed[t] = (p, start, start + costs[t][p])
        busy[p].append((start, start + costs[t][p]))
    return placed


def test_oct_matches_the_definition(heft_example: CompiledProblem, heft_example_tables: tuple[Costs, Comm]) -> None:
    """ranks.optimistic_cost_table equals the paper's recursive definition on every task and processor."""
    expected = reference_oct(*heft_example_tables)
    table = optimistic_cost_table(heft_example)
    for t, row in expected.items():
        assert list(table[t - 1]) == pytest.approx(row)
    # by hand: n10 is the exit (0); n7's only child is n10 (costs 21, 7, 16; c = 17), so OCT(n7, P1) =
    # min(21, 7 + 17, 16 + 17) = 21, OCT(n7, P2) = min(21 + 17, 7, 33) = 7, OCT(n7, P3) = min(38, 24, 16) = 16
    assert list(table[9]) == [0.0, 0.0, 0.0]
    assert list(table[6]) == [21.0, 7.0, 16.0]


def test_peft_makespan_is_85(heft_example: CompiledProblem, heft_example_tables: tuple[Costs, Comm]) -> None:
    """PEFT schedules the HEFT example in 85 time units: the same placement and times as the reference transcription."""
    reference = reference_peft(*heft_example_tables)
    assert max(finish for _, _, finish in reference.values()) == 85.0
    result = simulate(heft_example, "peft", CLASSIC)
    assert result.valid, result.violations
    assert result.metrics.makespan == pytest.approx(85.0)
    got = {int(heft_example.task_ids[a.task][1:]): (a.node, a.start, a.end) for a in result.trace.attempts}
    assert got == reference
