"""Property tests: whatever a file or a request holds, the readers raise InputError (naming a field) and nothing
else: arbitrary JSON values, documents shaped like each format with wrong parts, arbitrary bytes as files."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagsched.io import read_problem, read_workflow, workflow_from_dict
from dagsched.model.errors import InputError

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
KEYS = ["name", "tasks", "edges", "id", "runtime", "dependencies", "task", "data", "resources", "cpu", "mem", "gpu",
        "schemaVersion", "workflow", "specification", "execution", "files", "parents", "children", "machines",
        "runtimeInSeconds", "inputFiles", "outputFiles", "sizeInBytes", "costs", "links", "deadline",
        "priority"]  # fmt: skip
shaped = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=5),
    max_leaves=30,
)
PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


def _only_input_errors(data: object) -> None:
    try:
        workflow_from_dict(data)  # type: ignore[arg-type]
    except InputError as err:
        assert err.field is not None and err.fault
    # anything else propagates and fails the test


@PROPERTY
@given(json_values)
def test_any_json_value_is_a_workflow_or_an_input_error(data: object) -> None:
    _only_input_errors(data)


@PROPERTY
@given(st.dictionaries(st.sampled_from(KEYS), shaped, max_size=6))
def test_documents_shaped_like_the_formats_are_a_workflow_or_an_input_error(data: dict) -> None:
    _only_input_errors(data)
    _only_input_errors({**data, "name": "w", "tasks": data.get("tasks", [])})
    _only_input_errors({"name": "w", "schemaVersion": "1.5", "workflow": data})


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.binary(max_size=300) | st.text(max_size=300).map(str.encode), st.sampled_from([".json", ".yaml", ".json.gz"]))
def test_any_file_is_read_or_refused_with_an_input_error(content: bytes, suffix: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"w{suffix}"
        path.write_bytes(content)
        for read in (read_workflow, lambda p: read_problem([p])):
            try:
                read(path)
            except InputError as err:
                assert err.field and err.fault


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(json_values)
def test_any_yaml_document_is_read_or_refused_with_an_input_error(data: object) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in (("w.yaml", yaml.safe_dump(data)), ("w.json", json.dumps(data))):
            path = Path(tmp) / name
            path.write_text(text)
            try:
                read_workflow(path)
            except InputError as err:
                assert err.field and err.fault


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.dictionaries(st.sampled_from(KEYS), shaped, max_size=6))
def test_problem_files_shaped_like_the_formats_are_read_or_refused(data: dict) -> None:
    """Through read_problem too: a document with `machines` is read as a classic problem (its own reader)."""
    with tempfile.TemporaryDirectory() as tmp:
        for doc in (data, {**data, "machines": data.get("machines", [])}):
            path = Path(tmp) / "p.json"
            path.write_text(json.dumps(doc))
            try:
                read_problem([path])
            except InputError as err:
                assert err.field and err.fault
