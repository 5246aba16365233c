"""The one fold of a plan chain's events (`service.chain.fold`), read by the re-plan and the gap report alike: a task
is never both running and finished, every attempt that ended without finishing is counted once, a node is down
exactly from its `node_down` to its `node_up`, and the overrun rule is one threshold."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dagsched.service.chain import OVERRUN_RATIO, fold, overran

TASKS = ("a", "b", "c")
NODES = ("n0", "n1")
PLANNED = {t: {"node": NODES[i % 2]} for i, t in enumerate(TASKS)}


@st.composite
def logs(draw: st.DrawFn) -> list[dict]:
    """Event logs in time order, of any kinds, tasks and nodes (the fold must not assume a well-formed log)."""
    kinds = ("task_started", "task_finished", "task_failed", "task_overran", "node_down", "node_up")
    out = []
    for i in range(draw(st.integers(0, 30))):
        kind = draw(st.sampled_from(kinds))
        task = draw(st.sampled_from(TASKS)) if kind.startswith("task_") else None
        node = draw(st.sampled_from((*NODES, None))) if task else draw(st.sampled_from(NODES))
        payload = {"migrate": draw(st.booleans())} if kind == "task_overran" else {}
        out.append({"id": i, "kind": kind, "task": task, "node": node, "at": float(i), "payload": payload})
    return out


@settings(max_examples=200, deadline=None)
@given(logs())
def test_a_fold_keeps_its_invariants(events: list[dict]) -> None:
    ran = fold(events, PLANNED)
    assert not set(ran.running) & set(ran.finished)
    starts = sum(e["kind"] == "task_started" for e in events)
    assert ran.started == starts
    assert ran.failed + len(ran.finished) + len(ran.running) <= starts + len(ran.unstarted_finishes)
    for node in NODES:
        last = [e["kind"] for e in events if e["kind"] in ("node_down", "node_up") and e["node"] == node]
        assert (node in ran.down) == (bool(last) and last[-1] == "node_down")
    for node, start, end in ran.finished.values():
        assert start <= end and node in NODES


def test_a_node_lost_under_a_running_task_fails_it_and_the_finish_after_is_a_fault() -> None:
    """a starts on n0 (its planned node, as the event names none), n0 goes down: one failed attempt, nothing runs;
    a's finish afterwards has no start: it is kept apart, not counted as done."""
    events = [
        {"kind": "task_started", "task": "a", "node": None, "at": 0.0},
        {"kind": "node_down", "task": None, "node": "n0", "at": 1.0},
        {"kind": "task_finished", "task": "a", "node": None, "at": 2.0},
    ]
    ran = fold(events, PLANNED)
    assert (ran.started, ran.failed, ran.running, ran.finished) == (1, 1, {}, {})
    assert ran.unstarted_finishes == [("a", 2.0)] and ran.down == {"n0"}


def test_the_overrun_rule_is_one_threshold() -> None:
    assert OVERRUN_RATIO == 2.0
    assert overran(10.01, 5.0) and not overran(10.0, 5.0) and not overran(9.0, 5.0)
