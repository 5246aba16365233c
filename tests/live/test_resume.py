"""Resuming a journalled run: the journal keeps what each finished command and function handed its children (and
reads a store journalled before it kept outputs), and a done task counts as done only where its children can have
its output (an emulated payload is made again; a command's stdout or a function's value must have been kept)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

from dagsched.io.native import workflow_from_native
from dagsched.live.journal import Journal, attempts, runs
from dagsched.live.run import resumed_tasks
from dagsched.live.worker import OUTPUT_CAP_BYTES, journal_text
from dagsched.model import Cluster, Node, Problem, compile_problem
from dagsched.model.compiled import CompiledProblem


def _chain() -> CompiledProblem:
    """emulated e -> command c -> function f -> emulated g."""
    wf = workflow_from_native(
        {
            "name": "w",
            "tasks": [
                {"id": "e", "runtime": 1},
                {"id": "c", "runtime": 1, "dependencies": ["e"], "run": {"command": ["echo", "x"]}},
                {"id": "f", "runtime": 1, "dependencies": ["c"], "run": {"python": "dagsched.live.demo:numbers"}},
                {"id": "g", "runtime": 1, "dependencies": ["f"]},
            ],
        }
    )
    return compile_problem(Problem(workflows=[wf], cluster=Cluster(nodes=[Node(id="n0", cpu=2, mem=4)])))


def _row(task: str, output: tuple[str, str] | None = None) -> dict[str, object]:
    row: dict[str, object] = {"workflow": "w", "task": task, "node": "n0", "start_s": 0.0, "end_s": 1.0}
    return row | {"outcome": "done", "output": output}


def test_the_journal_keeps_outputs_and_a_later_finish_replaces_an_earlier_one(tmp_path: Path) -> None:
    journal = Journal(f"sqlite:///{tmp_path / 'runs.sqlite'}")
    first = journal.start({"workflows": []})
    journal.record(first, [_row("e"), _row("c", ("text", "x\n")), _row("f", ("json", "[1, 2]"))])
    second = journal.start({"workflows": []}, resumed_from=first)
    journal.record(second, [_row("f"), _row("g")])  # f finished again: its value was not kept this time
    loaded = journal.load(second)
    assert loaded.done == {("w", t): "n0" for t in "ecfg"}
    assert loaded.outputs == {("w", "c"): ("text", "x\n")}
    assert journal.load(first).outputs == {("w", "c"): ("text", "x\n"), ("w", "f"): ("json", "[1, 2]")}
    journal.close()


def test_a_store_journalled_before_outputs_were_kept_resumes(tmp_path: Path) -> None:
    """The journal's tables as they were without `live_outputs`: opening the store adds it, nothing else changes."""
    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    engine = sa.create_engine(url)
    old = sa.MetaData()
    runs.to_metadata(old)
    attempts.to_metadata(old)
    old.create_all(engine)
    with engine.begin() as db:
        db.execute(runs.insert().values(run_id="r1", created_s=0.0, status="interrupted", args="{}"))
        db.execute(attempts.insert().values(run_id="r1", **{k: v for k, v in _row("e").items() if k != "output"}))
    engine.dispose()
    journal = Journal(url)
    assert "live_outputs" in sa.inspect(journal.engine).get_table_names()
    loaded = journal.load("r1")
    assert loaded.done == {("w", "e"): "n0"} and loaded.outputs == {}
    journal.close()


def test_a_done_task_whose_output_a_child_needs_and_was_not_kept_runs_again() -> None:
    cp = _chain()
    everything_but_g = {("w", t): "n0" for t in "ecf"}
    kept = {("w", "c"): ("text", "x\n"), ("w", "f"): ("json", "[1]")}
    resumed = resumed_tasks(cp, everything_but_g, kept)
    assert resumed.done == {0: 0, 1: 0, 2: 0}
    assert resumed.outputs == {1: ("text", "x\n"), 2: ("json", "[1]")}
    # f's value not kept: f runs again, and needs c's stdout, which was kept: c stays done
    assert resumed_tasks(cp, everything_but_g, {("w", "c"): ("text", "x\n")}).done == {0: 0, 1: 0}
    # nothing kept: f runs again, so c does, whose emulated parent e's payload is made again: e stays done
    assert resumed_tasks(cp, everything_but_g).done == {0: 0}
    # every task done: nothing is left to hand an output to
    assert resumed_tasks(cp, everything_but_g | {("w", "g"): "n0"}).done == {0: 0, 1: 0, 2: 0, 3: 0}


def test_a_function_value_is_journalled_only_where_json_gives_it_back() -> None:
    assert journal_text({"word": "ALPHA", "n": [1, 2.5, None]}) == '{"word": "ALPHA", "n": [1, 2.5, null]}'
    assert journal_text((1, 2)) is None  # read back as a list
    assert journal_text({1: "a"}) is None  # read back with a string key
    assert journal_text(b"bytes") is None
    assert journal_text(float("nan")) is None
    assert journal_text("x" * OUTPUT_CAP_BYTES) is None  # with its quotes, over the cap
    assert journal_text("x" * (OUTPUT_CAP_BYTES - 2)) is not None
