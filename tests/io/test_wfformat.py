"""WfFormat traces load into the DAG the manifest describes; legacy schemas give the same DAG as 1.5."""

from __future__ import annotations

import copy
import csv
import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest

from dagsched.io import read_workflow, workflow_from_dict
from dagsched.io.wfformat import validate_wfformat_schema
from dagsched.model import Edge, InputError

LEGACY_14 = "legacy/blast-chameleon-small-001.v1.4.json.gz"
LEGACY_13 = "legacy/blast-chameleon-small-001.v1.3.json.gz"
FORKJOIN = "helloworld/helloworld-forkjoin-10-chameleon.json.gz"


def _raw(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)  # type: ignore[no-any-return]


def test_every_manifest_trace_loads_with_the_manifest_counts(wfinstances: Path) -> None:
    """Task count, distinct parent/child pairs and the runtime sum match MANIFEST.csv for all 35 files."""
    rows = list(csv.DictReader((wfinstances / "MANIFEST.csv").open()))
    assert len(rows) == 35
    mismatches = []
    for row in rows:
        wf = read_workflow(wfinstances / row["file"])
        got = (len(wf.tasks), len(wf.edges))
        want = (int(row["tasks"]), int(row["edges"]))
        runtime_s = math.fsum(t.runtime for t in wf.tasks)
        if got != want or runtime_s != pytest.approx(float(row["total_runtime_s"]), rel=1e-9, abs=1e-3):
            mismatches.append((row["file"], got, want, runtime_s, row["total_runtime_s"]))
    assert mismatches == []


def test_montage_dss_15d_is_the_largest_and_carries_file_data(wfinstances: Path) -> None:
    """The 2,122-task Montage trace: counts, and every edge's data is the bytes the child reads from the parent."""
    wf = read_workflow(wfinstances / "montage/montage-chameleon-dss-15d-001.json.gz")
    assert (len(wf.tasks), len(wf.edges)) == (2122, 6114)
    spec = _raw(wfinstances / "montage/montage-chameleon-dss-15d-001.json.gz")["workflow"]["specification"]
    size = {f["id"]: f["sizeInBytes"] for f in spec["files"]}
    by_id = {t["id"]: t for t in spec["tasks"]}
    for e in wf.edges[::97]:
        shared = set(by_id[e.src]["outputFiles"]) & set(by_id[e.dst]["inputFiles"])
        assert e.data == sum(size[f] for f in shared)
    assert all(t.mem == 0.0 and t.cpu == 1.0 for t in wf.tasks)  # memoryInBytes and coreCount absent here


def test_forkjoin_task_fields_map_as_documented(wfinstances: Path) -> None:
    """runtimeInSeconds, memoryInBytes (in GiB), priority, command.program land on the Task; edge data = file bytes."""
    wf = read_workflow(wfinstances / FORKJOIN)
    first = wf.tasks[0]
    assert first.id == "cpuhog_forkjoin_00000001"
    assert (first.runtime, first.cpu, first.priority) == (100.187, 1.0, 20)
    assert first.mem == 74628 / 2**30
    assert first.labels == {"program": "cpuhog"}
    assert wf.edges[0] == Edge(src="cpuhog_forkjoin_00000001", dst="cpuhog_forkjoin_00000002", data=9090910.0)
    assert wf.name == "forkjoin-10-5000-0.6-100000000-cascadelake-1-0-1683197671.json"


def test_makeflow_core_count_and_nextflow_program_label(wfinstances: Path) -> None:
    """coreCount becomes cpu; a Nextflow `program` is a whole script, so the task name labels it instead."""
    blast = read_workflow(wfinstances / "blast/blast-chameleon-small-001.json.gz")
    assert {t.cpu for t in blast.tasks} == {1.0}
    assert blast.tasks[0].labels == {"program": "split_fasta"}
    bacass = read_workflow(wfinstances / "nextflow/bacass-dirt02-001.json.gz")
    assert bacass.tasks[0].labels == {"program": "NFCORE_BACASS.BACASS.FASTQC"}


def test_legacy_1_4_and_1_3_give_the_same_dag_and_data(wfinstances: Path) -> None:
    """Same run in two old schemas: same ids (task names), edges, runtimes, edge bytes, and memory (1.3 is in KB)."""
    wf14 = read_workflow(wfinstances / LEGACY_14)
    wf13 = read_workflow(wfinstances / LEGACY_13)
    assert [t.id for t in wf14.tasks] == [t.id for t in wf13.tasks]
    assert wf14.tasks[1].id == "blastall_ID000002"  # the name, not the 'ID000002' id
    assert [t.runtime for t in wf14.tasks] == [t.runtime for t in wf13.tasks]
    assert wf14.edges == wf13.edges
    assert sum(e.data for e in wf14.edges) == 794.0
    assert wf14.tasks[1].mem == 484000000 / 2**30
    assert wf14 == wf13


def test_legacy_1_4_matches_the_1_5_file_of_the_same_run(wfinstances: Path) -> None:
    """The Makeflow BLAST run is also published in 1.5: the legacy reader must agree with it edge for edge."""
    wf14 = read_workflow(wfinstances / LEGACY_14)
    wf15 = read_workflow(wfinstances / "blast/blast-chameleon-small-001.json.gz")
    assert wf14.tasks == wf15.tasks
    assert {(e.src, e.dst, e.data) for e in wf14.edges} == {(e.src, e.dst, e.data) for e in wf15.edges}


def test_schema_validation_passes_on_a_real_1_5_file(wfinstances: Path) -> None:
    """A published 1.5 trace is valid against the bundled WfFormat 1.5 schema."""
    data = _raw(wfinstances / "montage/montage-chameleon-2mass-005d-001.json.gz")
    validate_wfformat_schema(data)
    assert len(workflow_from_dict(data, validate_schema=True).tasks) == 58


def test_schema_validation_names_the_corrupted_path(wfinstances: Path) -> None:
    """A 1.5 trace with a runtime removed and a file size as text fails with the JSON path of the fault."""
    data = _raw(wfinstances / FORKJOIN)
    del data["workflow"]["execution"]["tasks"][3]["runtimeInSeconds"]
    with pytest.raises(InputError) as err:
        workflow_from_dict(data, validate_schema=True)
    assert err.value.field == "workflow.execution.tasks[3]"
    assert err.value.fault == "does not match the WfFormat 1.5 schema: 'runtimeInSeconds' is a required property"

    data = _raw(wfinstances / FORKJOIN)
    data["workflow"]["specification"]["files"][2]["sizeInBytes"] = "big"
    with pytest.raises(InputError) as err:
        validate_wfformat_schema(data)
    assert err.value.field == "workflow.specification.files[2].sizeInBytes"
    assert err.value.fault == "does not match the WfFormat 1.5 schema: 'big' is not of type 'integer'"


def test_schema_1_6_is_read_and_validated_like_1_5(wfinstances: Path) -> None:
    """1.6 is the 1.5 layout plus metrics blocks: same Workflow, schema check still applies."""
    data = _raw(wfinstances / FORKJOIN)
    want = workflow_from_dict(data)
    data["schemaVersion"] = "1.6"
    data["workflow"]["specification"]["metrics"] = {"numberOfTasks": 10, "numberOfLevels": 3}
    data["workflow"]["execution"]["metrics"] = {"sumTaskRuntimesInSeconds": 1028.7}
    assert workflow_from_dict(data, validate_schema=True) == want


def test_legacy_files_have_no_bundled_schema(wfinstances: Path) -> None:
    """Asking to validate a 1.4 file says plainly that no schema for it ships, rather than skipping silently."""
    with pytest.raises(InputError, match=r"^schemaVersion: no WfFormat schema for version '1.4'"):
        read_workflow(wfinstances / LEGACY_14, validate_schema=True)


# --- malformed instances, built small so each fault is alone ---------------------------------------------


def _instance() -> dict[str, Any]:
    """A valid three-task 1.5 instance: a -> b -> c, b reads 100 bytes from a, c reads 7 from b."""
    spec_task = {"parents": [], "children": [], "inputFiles": [], "outputFiles": []}
    tasks = [
        {**copy.deepcopy(spec_task), "id": "a", "name": "a", "children": ["b"], "outputFiles": ["f1"]},
        {
            **copy.deepcopy(spec_task),
            "id": "b",
            "name": "b",
            "parents": ["a"],
            "inputFiles": ["f1"],
            "outputFiles": ["f2"],
        },
        {**copy.deepcopy(spec_task), "id": "c", "name": "c", "parents": ["b"], "inputFiles": ["f2"]},
    ]
    return {
        "name": "tiny",
        "schemaVersion": "1.5",
        "workflow": {
            "specification": {
                "tasks": tasks,
                "files": [{"id": "f1", "sizeInBytes": 100}, {"id": "f2", "sizeInBytes": 7}],
            },
            "execution": {
                "makespanInSeconds": 10,
                "executedAt": "2024-01-01T00:00:00Z",
                "tasks": [{"id": t, "runtimeInSeconds": r} for t, r in (("a", 1.0), ("b", 2.0), ("c", 3.0))],
            },
        },
    }


def _error(data: dict[str, Any]) -> InputError:
    with pytest.raises(InputError) as err:
        workflow_from_dict(data)
    return err.value


def test_minimal_instance_loads() -> None:
    """The base of the malformed cases is itself valid, with file bytes on its edges."""
    wf = workflow_from_dict(_instance())
    assert [(e.src, e.dst, e.data) for e in wf.edges] == [("a", "b", 100.0), ("b", "c", 7.0)]


def test_unknown_parent_names_the_entry_and_the_id() -> None:
    """`workflow.specification.tasks[2].parents[0]: unknown task 'x'`."""
    data = _instance()
    data["workflow"]["specification"]["tasks"][2]["parents"] = ["x"]
    err = _error(data)
    assert err.field == "workflow.specification.tasks[2].parents[0]" and err.fault.startswith("unknown task 'x'")


def test_unknown_child_names_the_entry() -> None:
    """Children lists are checked as strictly as parents."""
    data = _instance()
    data["workflow"]["specification"]["tasks"][0]["children"].append("zz")
    assert _error(data).field == "workflow.specification.tasks[0].children[1]"


def test_missing_runtime_names_the_execution_entry() -> None:
    """No runtimeInSeconds, no schedule: the measured runtime is required."""
    data = _instance()
    del data["workflow"]["execution"]["tasks"][1]["runtimeInSeconds"]
    assert str(_error(data)) == "workflow.execution.tasks[1].runtimeInSeconds: required field is missing"


def test_task_without_execution_entry_is_refused() -> None:
    """A specification task with no measurements has no runtime either."""
    data = _instance()
    data["workflow"]["execution"]["tasks"].pop(2)
    err = _error(data)
    assert err.field == "workflow.specification.tasks[2]" and "no entry in workflow.execution.tasks" in err.fault


@pytest.mark.parametrize(
    ("key", "value", "field", "fault"),
    [
        ("runtimeInSeconds", -4.0, "runtimeInSeconds", "greater than or equal to 0"),
        ("runtimeInSeconds", math.nan, "runtimeInSeconds", "finite number"),
        ("memoryInBytes", math.inf, "memoryInBytes", "finite number"),
        ("coreCount", -1, "coreCount", "greater than or equal to 0"),
        ("runtimeInSeconds", "fast", "runtimeInSeconds", "expected a number, got 'fast'"),
        ("priority", 1.5, "priority", "valid integer"),
    ],
)
def test_bad_measurements_name_the_wfformat_key(key: str, value: Any, field: str, fault: str) -> None:
    """Model faults are reported at the trace's own key, not the model's (runtimeInSeconds, not runtime)."""
    data = _instance()
    data["workflow"]["execution"]["tasks"][1][key] = value
    err = _error(data)
    assert err.field == f"workflow.execution.tasks[1].{field}" and fault in err.fault


def test_cycle_in_trace_names_tasks_and_entry() -> None:
    """A parent link back from c to a closes a loop a -> b -> c -> a."""
    data = _instance()
    data["workflow"]["specification"]["tasks"][0]["parents"] = ["c"]
    err = _error(data)
    assert err.fault == "cycle through tasks a -> b -> c -> a"
    assert err.field == "workflow.specification.tasks[0].parents[0]"


def test_duplicate_task_id_in_trace() -> None:
    """Two specification tasks with one id are refused at the second."""
    data = _instance()
    data["workflow"]["specification"]["tasks"][2]["id"] = "a"
    data["workflow"]["execution"]["tasks"].pop(2)
    assert (
        str(_error(data))
        == "workflow.specification.tasks[2].id: duplicate task id 'a' (first at workflow.specification.tasks[0])"
    )


def test_unknown_file_id_is_refused() -> None:
    """Edge data comes from file sizes, so a file id missing from specification.files is an error."""
    data = _instance()
    data["workflow"]["specification"]["tasks"][1]["inputFiles"] = ["nope"]
    assert _error(data).field == "workflow.specification.tasks[1].inputFiles[0]"


def test_unsupported_version_lists_the_supported_ones() -> None:
    """1.2 used `jobs` and other names; refused, not guessed at."""
    data = _instance()
    data["schemaVersion"] = "1.2"
    assert str(_error(data)) == "schemaVersion: unsupported WfFormat version '1.2'; supported: 1.3, 1.4, 1.5, 1.6"


def test_empty_trace_is_refused() -> None:
    """A trace without tasks is no workflow."""
    data = _instance()
    data["workflow"]["specification"]["tasks"] = []
    data["workflow"]["execution"]["tasks"] = []
    err = _error(data)
    assert err.field == "workflow.specification.tasks" and "is empty" in err.fault


def test_legacy_missing_runtime_uses_the_versions_key_name(wfinstances: Path) -> None:
    """1.3 says `runtime`, 1.4 `runtimeInSeconds`; the error names the one the file should have."""
    data = _raw(wfinstances / LEGACY_13)
    del data["workflow"]["tasks"][5]["runtime"]
    assert str(_error(data)) == "workflow.tasks[5].runtime: required field is missing"
    data = _raw(wfinstances / LEGACY_14)
    data["workflow"]["tasks"][5]["parents"] = ["nobody"]
    err = _error(data)
    assert err.field == "workflow.tasks[5].parents[0]" and err.fault.startswith("unknown task 'nobody'")
