"""NodeTimeline.earliest_starts answers every query exactly as earliest_start does, down both of its paths;
no slot crowds out a zero-length use planned inside it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dagsched.sim.slots
from dagsched.sim.slots import NodeTimeline, Timelines

INF = float("inf")

# round values make slots end exactly where others begin; 0.1 + 0.2 > 0.3 tests the 1e-12 tolerance
round_times = st.sampled_from([0.0, 0.1, 0.3, 1.0, 2.0, 2.5, 3.0, 5.0, 8.0]) | st.floats(0.0, 10.0)
round_durations = st.sampled_from([0.0, 0.2, 1.0, 2.0, 3.0, 1e-13]) | st.floats(0.0, 6.0)


Case = tuple[NodeTimeline, list[tuple[float, float, tuple[float, float, float]]]]


@st.composite
def timelines(draw: st.DrawFn) -> Case:
    """A node (classic: one slot; or cpu/mem/gpu) with up to 10 reservations, and up to 80 queries it can host."""
    classic = draw(st.booleans())
    cap = (1.0, INF, INF) if classic else (4.0, 16.0, 2.0)
    line = NodeTimeline(cap, draw(st.sampled_from([0.0, 0.0, 2.0, 4.5])))
    requests = (
        st.just((1.0, 0.0, 0.0))
        if classic
        else st.tuples(
            st.sampled_from([0.5, 1.0, 2.0, 4.0]) | st.floats(0.1, 4.0),
            st.sampled_from([0.0, 8.0, 16.0]),
            st.sampled_from([0.0, 1.0, 2.0]),
        )
    )
    for _ in range(draw(st.integers(0, 10))):
        start = draw(round_times)
        line.reserve(start, start + draw(round_durations), draw(requests))
    queries = draw(st.lists(st.tuples(round_times, round_durations, requests), min_size=1, max_size=80))
    return line, queries


@pytest.mark.parametrize("few", [0, 10**9], ids=["numpy", "loop"])
@settings(max_examples=200, deadline=None)
@given(case=timelines(), shared=st.booleans())
def test_earliest_starts_equals_earliest_start_bit_for_bit(few: int, case: Case, shared: bool) -> None:
    """Each answer equals the scalar search's (==, not approx), with one request per query or one for all."""
    line, queries = case
    if shared:
        queries = [(ready, dur, queries[0][2]) for ready, dur, _ in queries]
    want = [line.earliest_start(ready, dur, req) for ready, dur, req in queries]
    ready_s = np.array([q[0] for q in queries])
    duration_s = np.array([q[1] for q in queries])
    req = np.array(queries[0][2]) if shared else np.array([q[2] for q in queries])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dagsched.sim.slots, "_FEW_QUERIES", few)
        got = line.earliest_starts(ready_s, duration_s, req)
    assert got.tolist() == want


def test_earliest_starts_on_a_classic_queue() -> None:
    """Busy [0, 5) and [7, 9): a 2-long task ready at 1 fits in the gap at 5; a 3-long one waits until 9;
    one ready at 8 waits until 9; one ready at 12 starts at 12; a zero-length one ready at 6 starts at 6."""
    line = NodeTimeline((1.0, INF, INF))
    line.reserve(0.0, 5.0, (1.0, 0.0, 0.0))
    line.reserve(7.0, 9.0, (1.0, 0.0, 0.0))
    got = line.earliest_starts(np.array([1.0, 1.0, 8.0, 12.0, 6.0]), np.array([2.0, 3.0, 1.0, 1.0, 0.0]), (1, 0, 0))
    assert got.tolist() == [5.0, 9.0, 9.0, 12.0, 6.0]


@settings(max_examples=200, deadline=None)
@given(case=timelines())
def test_a_slot_never_crowds_out_a_zero_length_use(case: Case) -> None:
    """Brute force over the recorded points: where one lies strictly inside a returned slot, the slot's request,
    the point's and what else is planned then fit the node together (in classic mode they never do)."""
    line, queries = case
    for ready, duration, req in queries:
        start = line.earliest_start(ready, duration, req)
        for at, other in zip(line.points, line.point_reqs, strict=True):
            if start < at < start + duration:
                used = line.used_at(at)
                assert all(used[k] + req[k] + other[k] <= line.cap[k] + 1e-9 for k in range(3)), (start, at)


@pytest.mark.parametrize("few", [0, 10**9], ids=["numpy", "loop"])
def test_a_zero_length_use_holds_its_instant(few: int) -> None:
    """Classic node, a zero-length task planned at 5 and nothing else: a 10-long task ready at 0 starts at 5 (the
    zero-length one runs first at 5), not across it at 0; a 5-long one ends at 5 and starts at 0; a second
    zero-length one shares the instant; after it the node is free; the node's planned use now ends at 5, not 0."""
    one = (1.0, 0.0, 0.0)
    lines = Timelines([NodeTimeline((1.0, INF, INF))])
    line = lines[0]
    line.reserve(5.0, 5.0, one)
    assert line.points == [5.0] and lines.last_use[0] == 5.0
    want = [5.0, 0.0, 5.0, 6.0]
    queries = [(0.0, 10.0), (0.0, 5.0), (5.0, 0.0), (6.0, 1.0)]
    assert [line.earliest_start(ready, duration, one) for ready, duration in queries] == want
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dagsched.sim.slots, "_FEW_QUERIES", few)
        got = line.earliest_starts(np.array([0.0, 0.0, 5.0, 6.0]), np.array([10.0, 5.0, 0.0, 1.0]), one)
    assert got.tolist() == want
    cloud = NodeTimeline((4.0, 16.0, 0.0))
    cloud.reserve(5.0, 5.0, (1.0, 0.0, 0.0))
    assert cloud.earliest_start(0.0, 10.0, (3.0, 0.0, 0.0)) == 0.0  # room for both at 5
    assert cloud.earliest_start(0.0, 10.0, (3.5, 0.0, 0.0)) == 5.0  # none


@pytest.mark.parametrize("few", [0, 10**9], ids=["numpy", "loop"])
def test_earliest_starts_tolerates_rounding_at_a_slot_end(few: int) -> None:
    """Busy from 0.3: a 0.2-long task ready at 0.1 ends at 0.1 + 0.2 = 0.30000000000000004 in floats, within
    the 1e-12 tolerance, so it starts at 0.1, as earliest_start says; a 0.25-long one waits until the end, 1.0."""
    line = NodeTimeline((1.0, INF, INF))
    line.reserve(0.3, 1.0, (1.0, 0.0, 0.0))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dagsched.sim.slots, "_FEW_QUERIES", few)
        got = line.earliest_starts(np.array([0.1, 0.1]), np.array([0.2, 0.25]), (1.0, 0.0, 0.0))
    assert got.tolist() == [0.1, 1.0] == [line.earliest_start(0.1, d, (1.0, 0.0, 0.0)) for d in (0.2, 0.25)]


@settings(max_examples=100, deadline=None)
@given(case=timelines(), extra=st.tuples(round_times, round_durations))
def test_a_copy_of_timelines_answers_alike_and_changes_alone(case: Case, extra: tuple[float, float]) -> None:
    """What heft_lookahead relies on to try a choice: the copy gives the same earliest starts, and a reservation on
    it leaves the original (and the original's last-use array) as it was."""
    line, queries = case
    lines = Timelines([line, NodeTimeline(line.cap)])
    twin = lines.copy()
    for ready, duration, req in queries:
        assert twin[0].earliest_start(ready, duration, req) == line.earliest_start(ready, duration, req)
    before = (list(line.times), list(line.used), list(line.points), lines.last_use.copy())
    start, duration = extra
    twin[0].reserve(start, start + duration + 1.0, queries[0][2])
    twin[0].reserve(start, start, queries[0][2])
    twin[1].reserve(start, start + duration + 1.0, queries[0][2])
    assert (line.times, line.used, line.points) == before[:3] and np.array_equal(lines.last_use, before[3])
    assert lines[1].times == [0.0] and twin.last_use[1] == start + duration + 1.0
