"""A native task's `run:` (a command or a Python function) and `retries:` are read, written back unchanged, and
refused when malformed with an error naming the field as written."""

from __future__ import annotations

import pytest

from dagsched.io.native import workflow_from_native, workflow_to_native
from dagsched.model.errors import InputError


def _wf(run: object, **extra: object) -> dict[str, object]:
    return {"name": "w", "tasks": [{"id": "a", "runtime": 1}, {"id": "b", "runtime": 2, "run": run, **extra}]}


def test_run_and_retries_round_trip() -> None:
    doc = _wf({"command": ["echo", "hi"]}, retries=2)
    wf = workflow_from_native(doc)
    assert wf.tasks[1].run is not None and wf.tasks[1].run.command == ["echo", "hi"]
    assert wf.tasks[1].retries == 2 and wf.tasks[0].run is None and wf.tasks[0].retries == 0
    assert workflow_from_native(workflow_to_native(wf)) == wf
    assert workflow_to_native(wf)["tasks"][1]["run"] == {"command": ["echo", "hi"]}
    fn = workflow_from_native(_wf({"python": "pkg.mod:step"}))
    assert fn.tasks[1].run is not None and fn.tasks[1].run.python == "pkg.mod:step"


@pytest.mark.parametrize(
    ("run", "field", "says"),
    [
        ({"command": []}, "tasks[1].run.command", "at least 1"),
        ({"command": "echo hi"}, "tasks[1].run.command", "valid list"),
        ({"command": [""]}, "tasks[1].run.command[0]", "at least 1 character"),
        ({"python": "no_function"}, "tasks[1].run.python", "module:function"),
        ({}, "tasks[1].run", "exactly one"),
        ({"command": ["x"], "python": "a:b"}, "tasks[1].run", "exactly one"),
        ({"shell": "ls"}, "tasks[1].run.shell", "unknown field"),
    ],
)
def test_bad_run_fields_are_named(run: object, field: str, says: str) -> None:
    with pytest.raises(InputError) as err:
        workflow_from_native(_wf(run))
    assert err.value.field == field
    assert says in err.value.fault


def test_negative_retries_are_refused() -> None:
    with pytest.raises(InputError) as err:
        workflow_from_native(_wf({"command": ["true"]}, retries=-1))
    assert err.value.field == "tasks[1].retries"
