"""User suites from YAML: what each workload form expands to, and errors that name the faulty field."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dagsched.bench.suite_file import load_suite_file
from dagsched.bench.suites import CLASSIC
from dagsched.generate import generate_workflow
from dagsched.io import write_workflow
from dagsched.model.errors import InputError

REPO = Path(__file__).resolve().parents[2]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    return path


def test_generators_modes_seeds_and_schedulers(tmp_path: Path) -> None:
    """No instance seeds: one instance per run seed; instance seeds: each runs with every run seed."""
    path = _write(
        tmp_path,
        """
name: tiny
workloads:
  - {generator: layered, tasks: [10, 20]}
  - {generator: etl_star, tasks: [12], seeds: [5], ccr: 1.0}
clusters: [small-3]
modes: [classic, {name: noisy, noise_cv: 0.3}]
seeds: 2
schedulers: [heft, fcfs, mcts_uct]
tree_search_limit: 45
""",
    )
    suite = load_suite_file(path)
    assert suite.name == "tiny"
    assert suite.seeds == (1, 2)
    assert [m.name for m in suite.modes] == ["classic", "noisy"]
    assert suite.modes[0] == CLASSIC
    assert suite.modes[1].config().noise_cv == 0.3
    ids = [e.spec.problem_id for e in suite.entries]
    assert ids == [
        "syn/layered/n10/s1/ccr0.5@small-3",
        "syn/layered/n10/s2/ccr0.5@small-3",
        "syn/layered/n20/s1/ccr0.5@small-3",
        "syn/layered/n20/s2/ccr0.5@small-3",
        "syn/etl_star/n12/s5/ccr1@small-3",
    ]
    assert [e.seeds for e in suite.entries] == [(1,), (2,), (1,), (2,), (1, 2)]
    cells = suite.cells()
    assert suite.tree_search_limit == 45
    assert len(cells) == (4 * 1 + 1 * 2) * 2 * 2 + (2 * 1 + 1 * 2) * 2  # mcts_uct only below 45 tasks x 3 nodes
    assert {c.scheduler for c in cells} == {"heft", "fcfs", "mcts_uct"}
    assert {c.spec.n_tasks for c in cells if c.scheduler == "mcts_uct"} == {10, 12}


def test_a_suite_file_can_generate_analytics_jobs(tmp_path: Path) -> None:
    """`generator: stages` (not in the standard grid's four families) is accepted and builds a stages job."""
    path = _write(
        tmp_path, "name: st\nworkloads: [{generator: stages, tasks: [40], seeds: [3]}]\nclusters: [homog-8]\n"
    )
    suite = load_suite_file(path)
    assert [e.spec.problem_id for e in suite.entries] == ["syn/stages/n40/s3/ccr0.5@homog-8"]
    cp = suite.entries[0].spec.build()
    assert cp.n_tasks == 40


def test_globs_traces_recipes_and_classic_files(tmp_path: Path, wfinstances: Path) -> None:
    """Globs are relative to the suite file; a classic file brings its machines (cluster "own");
    `traces` globs the MANIFEST; a seed list is taken as given; `schedulers: all` is left to run time."""
    flows = tmp_path / "flows"
    flows.mkdir()
    write_workflow(generate_workflow("random", 15, 3), flows / "r15.yaml")
    write_workflow(generate_workflow("layered", 12, 3), flows / "l12.yaml")
    shutil.copy(REPO / "tests" / "data" / "heft_example.json", tmp_path / "heft.json")
    path = _write(
        tmp_path,
        """
name: mixed
workloads:
  - "flows/*.yaml"
  - {glob: heft.json, family: textbook}
  - {traces: "montage/*"}
  - {recipe: montage, tasks: [60], seeds: [0]}
clusters: [small-3, hetero-16]
modes: [cloud]
seeds: [7, 9]
""",
    )
    suite = load_suite_file(path)
    assert suite.schedulers is None
    kinds = [(e.spec.kind, e.spec.family, e.spec.cluster) for e in suite.entries]
    assert kinds.count(("file", "user", "small-3")) == 2
    assert kinds.count(("file", "user", "hetero-16")) == 2
    assert kinds.count(("file", "textbook", "own")) == 1
    assert sum(k[0] == "trace" and k[1] == "montage" for k in kinds) == 4 * 2
    assert kinds.count(("recipe", "montage", "small-3")) == 1
    assert len(suite.entries) == 4 + 1 + 8 + 2
    assert all(e.seeds == (7, 9) for e in suite.entries)
    heft = next(e.spec for e in suite.entries if e.spec.family == "textbook")
    assert heft.problem_id.startswith("file/heft-") and heft.problem_id.endswith("@own")
    assert heft.build().n_tasks == 10


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("workloads: [{generator: layered, tasks: [10]}]", r"name: Field required"),
        ("name: x\nworkloads: []", r"workloads: List should have at least 1 item"),
        ("name: x\nworkloads: [{generator: blobs, tasks: [10]}]", r"workloads\[0\]\.generator: unknown family 'blobs'"),
        ("name: x\nworkloads: [{generator: layered, tasks: [0]}]", r"workloads\[0\]\.tasks: task counts must be >= 1"),
        (
            "name: x\nworkloads: [{generator: layered, tasks: [10], colour: red}]",
            r"workloads\[0\]\.colour: unknown field",
        ),
        ("name: x\nworkloads: [{recipe: cake, tasks: [50]}]", r"workloads\[0\]\.recipe: unknown recipe 'cake'"),
        ("name: x\nworkloads: [{what: 1}]", r"workloads\[0\]: expected a glob string or a mapping"),
        ("name: x\nworkloads: ['nothing/*.yaml']", r"workloads\[0\]: 'nothing/\*\.yaml' matches no file"),
        ("name: x\nworkloads: [{traces: 'nope/*'}]", r"workloads\[0\]\.traces: 'nope/\*' matches no trace"),
        ("name: x\nworkloads: ['ok.yaml']\nclusters: [mars-9]", r"clusters\[0\]: 'mars-9' is neither a preset"),
        ("name: x\nworkloads: ['ok.yaml']\nmodes: [turbo]", r"modes\[0\]: unknown mode 'turbo'"),
        (
            "name: x\nworkloads: ['ok.yaml']\nmodes: [{name: m, classic: true, noise_cv: 0.2}]",
            r"modes\[0\]: .*classic mode is exact",
        ),
        ("name: x\nworkloads: ['ok.yaml']\nmodes: [{name: m, noise: 0.2}]", r"modes\[0\]\.noise: unknown field"),
        ("name: x\nworkloads: ['ok.yaml']\nmodes: [cloud, {name: cloud}]", r"modes\[1\]: mode name 'cloud' used twice"),
        ("name: x\nworkloads: ['ok.yaml']\nseeds: 0", r"seeds: .*give a count >= 1"),
        ("name: x\nworkloads: ['ok.yaml']\ntree_search_limit: 0", r"tree_search_limit: .*greater than 0"),
        ("name: x\nworkloads: ['ok.yaml']\nschedulers: [heft, nope]", r"schedulers: unknown scheduler\(s\) nope"),
        ("name: x\nworkloads: [{generator: ml_pipeline, tasks: [10]}]\nclusters: [homog-8]", r"needs GPUs"),
        ("name: x\nsurprise: 1\nworkloads: ['ok.yaml']", r"surprise: unknown field"),
        ("- just\n- a list", r"must hold a mapping"),
        ("name: [unclosed", r"not valid YAML"),
    ],
)
def test_bad_suite_files_name_the_field(tmp_path: Path, body: str, message: str) -> None:
    """Each fault raises one InputError whose message names the field and the problem."""
    path = _write(tmp_path, body)
    (tmp_path / "ok.yaml").write_text("name: w\ntasks: [{id: a, runtime: 1}]\n")
    with pytest.raises(InputError, match=message):
        load_suite_file(path)
