"""Files become dicts or a clear InputError naming the file; the format is told from the content."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from dagsched.io import detect_format, read_document, read_workflow, workflow_from_dict
from dagsched.io.documents import write_document
from dagsched.model.errors import InputError

DOC = {"name": "w", "tasks": [{"id": "a", "runtime": 1.5}]}


@pytest.mark.parametrize("name", ["w.json", "w.yaml", "w.yml", "w.json.gz", "w.yaml.gz", "W.JSON"])
def test_every_supported_extension_reads_back_what_was_written(tmp_path: Path, name: str) -> None:
    """JSON, YAML and their gzip forms all hold the same dict."""
    path = tmp_path / name
    write_document(DOC, path)
    assert read_document(path) == DOC


def test_gzip_file_is_really_compressed(tmp_path: Path) -> None:
    """A .gz name means gzip bytes on disk, readable by any gzip tool."""
    path = tmp_path / "w.json.gz"
    write_document(DOC, path)
    assert json.loads(gzip.decompress(path.read_bytes())) == DOC


def test_unknown_extension_names_the_file_and_the_fault(tmp_path: Path) -> None:
    """An extension we cannot parse is refused before reading, naming the file."""
    path = tmp_path / "w.txt"
    path.write_text("{}")
    with pytest.raises(InputError) as err:
        read_document(path)
    assert err.value.field == str(path)
    assert "unknown file extension" in err.value.fault and ".json, .yaml or .yml" in err.value.fault


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    """A path that does not exist gives an InputError naming it, not a bare OSError."""
    path = tmp_path / "absent.yaml"
    with pytest.raises(InputError, match="cannot read file") as err:
        read_document(path)
    assert err.value.field == str(path)


def test_unparsable_json_names_file_line_and_column(tmp_path: Path) -> None:
    """Broken JSON is reported with its position."""
    path = tmp_path / "w.json"
    path.write_text('{"name": "w",\n "tasks": [}\n')
    with pytest.raises(InputError) as err:
        read_document(path)
    assert err.value.field == str(path)
    assert err.value.fault.startswith("not valid JSON: line 2, column 12")


def test_unparsable_yaml_names_file_and_line(tmp_path: Path) -> None:
    """Broken YAML is reported with its line."""
    path = tmp_path / "w.yaml"
    path.write_text("name: w\ntasks:\n  - id: a\n   runtime: [1\n")
    with pytest.raises(InputError) as err:
        read_workflow(path)
    assert err.value.field == str(path)
    assert err.value.fault.startswith("not valid YAML: line 4")


def test_yaml_key_given_twice_is_refused(tmp_path: Path) -> None:
    """YAML would keep the last `runtime:` silently; a hand-edited file with two is a mistake to report."""
    path = tmp_path / "w.yaml"
    path.write_text("name: w\ntasks:\n  - id: a\n    runtime: 1\n    runtime: 2\n")
    with pytest.raises(InputError) as err:
        read_workflow(path)
    assert err.value.field == str(path)
    assert err.value.fault.startswith("not valid YAML: line 5, column 5: duplicate key 'runtime'")


def test_yaml_merge_keys_still_work(tmp_path: Path) -> None:
    """`<<:` merges defaults that the mapping's own keys override; that is not a duplicate."""
    path = tmp_path / "w.yaml"
    path.write_text("name: w\ntasks:\n  - <<: {id: a, runtime: 5, priority: 2}\n    runtime: 1\n")
    task = read_workflow(path).tasks[0]
    assert (task.id, task.runtime, task.priority) == ("a", 1.0, 2)


def test_corrupt_gzip_names_the_file(tmp_path: Path) -> None:
    """Bytes that are not gzip under a .gz name are refused as such."""
    path = tmp_path / "w.json.gz"
    path.write_bytes(b"not gzip at all")
    with pytest.raises(InputError, match="not a valid gzip file") as err:
        read_document(path)
    assert err.value.field == str(path)


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    """A list at the top level is no document of ours."""
    path = tmp_path / "w.yaml"
    path.write_text("- 1\n- 2\n")
    with pytest.raises(InputError, match="expected a mapping at the top level, got list"):
        read_document(path)


def test_detect_format_from_top_level_keys() -> None:
    """WfFormat has schemaVersion+workflow, classic has machines, native has name+tasks."""
    assert detect_format({"schemaVersion": "1.5", "workflow": {}, "name": "x"}) == "wfformat"
    assert detect_format({"tasks": [], "machines": []}) == "classic"
    assert detect_format({"name": "x", "tasks": []}) == "native"


def test_unrecognised_document_lists_what_it_found() -> None:
    """Anything else is refused with the keys it has and the shapes we accept."""
    with pytest.raises(InputError) as err:
        detect_format({"nodes": [], "latency": 0})
    assert err.value.field == "document"
    assert "latency, nodes" in err.value.fault and "WfFormat" in err.value.fault


def test_classic_document_is_not_a_workflow() -> None:
    """A classic file carries its own machines, so it must go through read_problem."""
    with pytest.raises(InputError, match="use read_problem"):
        workflow_from_dict({"tasks": [], "machines": []})


def test_content_errors_name_the_file_too(tmp_path: Path) -> None:
    """With several input files, a field alone is ambiguous: the file is added to the fault."""
    path = tmp_path / "w.yaml"
    path.write_text("name: w\ntasks:\n  - {id: a, runtime: -3}\n")
    with pytest.raises(InputError) as err:
        read_workflow(path)
    assert err.value.field == "tasks[0].runtime"
    assert "greater than or equal to 0" in err.value.fault and str(path) in err.value.fault
