"""Property: any valid small workflow survives write_workflow -> read_workflow unchanged, in YAML and JSON."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from dagsched.io import read_workflow, write_workflow
from dagsched.model import Edge, Task, Workflow
from dagsched.model.entities import MAX_SECONDS

# Any Unicode scalar except surrogates (which no UTF-8 file can hold).
text = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=6)  # ids hold no NUL
amount = st.floats(min_value=0.0, max_value=1e15, allow_nan=False, allow_infinity=False)
seconds = st.floats(min_value=0.0, max_value=MAX_SECONDS, allow_nan=False, allow_infinity=False)  # what can be run
labels = st.dictionaries(text, st.text(st.characters(codec="utf-8"), max_size=6), max_size=2)


@st.composite
def workflows(draw: st.DrawFn) -> Workflow:
    ids = draw(st.lists(text, min_size=1, max_size=6, unique=True))
    tasks = [
        Task(
            id=tid,
            runtime=draw(seconds),
            cpu=draw(amount),
            mem=draw(amount),
            gpu=draw(st.integers(0, 8)),
            priority=draw(st.integers(-(2**31), 2**31)),
            critical=draw(st.booleans()),
            deadline=draw(st.none() | seconds),
            labels=draw(labels),
            costs=draw(st.none() | st.dictionaries(text, seconds, max_size=2)),
        )
        for tid in ids
    ]
    # Edges only from earlier to later tasks, so the graph is acyclic; listed by child, the order a file keeps.
    edges = [
        Edge(src=ids[p], dst=ids[c], data=draw(st.sampled_from([0.0, 1.0]) | amount))
        for c in range(len(ids))
        for p in range(c)
        if draw(st.booleans())
    ]
    return Workflow(
        name=draw(text),
        tasks=tasks,
        edges=edges,
        submit_time=draw(seconds),
        deadline=draw(st.none() | seconds),
        labels=draw(labels),
    )


@settings(max_examples=150, deadline=None)
@given(wf=workflows(), suffix=st.sampled_from([".yaml", ".json", ".yml.gz"]))
def test_read_of_write_is_identity(wf: Workflow, suffix: str) -> None:
    """Every field, every float bit and the edge order come back as they were."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"wf{suffix}"
        write_workflow(wf, path)
        assert read_workflow(path) == wf


@settings(max_examples=50, deadline=None)
@given(wf=workflows(), seed=st.integers(0, 2**32))
def test_edges_in_any_order_come_back_as_the_same_graph(wf: Workflow, seed: int) -> None:
    """A file lists dependencies per task, so edges come back grouped by child: same set, same data."""
    edges = list(wf.edges)
    random.Random(seed).shuffle(edges)
    shuffled = wf.model_copy(update={"edges": edges})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "wf.yaml"
        write_workflow(shuffled, path)
        back = read_workflow(path)
    assert back.tasks == wf.tasks
    assert sorted(back.edges, key=lambda e: (e.src, e.dst)) == sorted(wf.edges, key=lambda e: (e.src, e.dst))
    position = {t.id: i for i, t in enumerate(wf.tasks)}
    children = [position[e.dst] for e in back.edges]
    assert children == sorted(children)
