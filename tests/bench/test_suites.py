"""Suite expansion: the built-in suites hold the promised cells, paired seeds, and every registered scheduler."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import pytest

from dagsched.bench.suite_file import get_suite
from dagsched.bench.suites import (
    CLASSIC,
    CLOUD,
    STANDARD_CLUSTERS,
    STANDARD_SEEDS,
    Cell,
    Entry,
    ProblemSpec,
    Suite,
    quick_suite,
    real_suite,
    real_traces,
    standard_suite,
)
from dagsched.generate import FAMILIES, SCALES
from dagsched.model.errors import InputError
from dagsched.schedulers import is_tree_search, registered_names
from dagsched.schedulers.base import _REGISTRY
from dagsched.schedulers.fcfs import FCFS


def _manifest_traces(root: Path) -> list[str]:
    with (root / "MANIFEST.csv").open() as fh:
        return [r["file"] for r in csv.DictReader(fh) if r["file"].split("/")[0] not in ("legacy", "helloworld")]


def test_standard_is_the_full_grid_plus_every_trace(wfinstances: Path) -> None:
    """standard = 4 families x 7 scales x 3 clusters x 2 modes x 10 seeds x S, less ml_pipeline on the
    GPU-less homog-8 and MCTS on the 500- and 1,000-task problems of large-100, plus every non-legacy,
    non-toy trace on hetero-16 x 2 modes x 10 seeds x S."""
    s = len(registered_names())
    tree = [n for n in registered_names() if is_tree_search(n)]
    assert sorted(tree) == ["mcts_uct"]
    traces = _manifest_traces(wfinstances)
    assert len(traces) == 31
    suite = standard_suite(wfinstances)
    cells = suite.cells()
    synthetic = 4 * 7 * 3 * 2 * 10 * s - 7 * 2 * 10 * s - 4 * 2 * 2 * 10 * len(tree)
    assert (len(FAMILIES), len(SCALES), len(STANDARD_CLUSTERS), len(STANDARD_SEEDS)) == (4, 7, 3, 10)
    assert sum(c.spec.kind == "synthetic" for c in cells) == synthetic
    assert sum(c.spec.kind == "trace" for c in cells) == 31 * 2 * 10 * s
    assert {c.spec.cluster for c in cells if c.spec.kind == "trace"} == {"hetero-16"}
    assert len(cells) == synthetic + 31 * 2 * 10 * s
    assert len({c.key for c in cells}) == len(cells)
    assert {Path(c.spec.path).relative_to(wfinstances).as_posix() for c in cells if c.spec.path} == set(traces)
    assert not any(c.spec.family == "ml_pipeline" and c.spec.cluster == "homog-8" for c in cells)
    capped = {(c.spec.cluster, c.spec.n_tasks) for c in cells if c.scheduler in tree}
    assert ("large-100", 200) in capped and ("hetero-16", 1000) in capped
    assert not capped & {("large-100", 500), ("large-100", 1000)}
    assert max(c.spec.n_tasks or 0 for c in cells if c.scheduler in tree) == 2122  # the largest trace, 16 nodes


def test_tree_search_limit_is_tasks_times_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below the limit every scheduler runs; at or above it tree-search ones (a later one too) drop out;
    a problem whose cluster size is unknown until read never caps."""

    class LaterSearch(FCFS):
        name = "zz_tree"
        tree_search = True

    monkeypatch.setitem(_REGISTRY, "zz_tree", LaterSearch)
    small = ProblemSpec("synthetic", "layered", "small-3", n_tasks=10, gen_seed=1)  # 10 x 3 = 30
    big = ProblemSpec("synthetic", "layered", "small-3", n_tasks=20, gen_seed=1)  # 20 x 3 = 60
    own = ProblemSpec("file", "x", "own", n_tasks=500, path="w.yaml")  # its own machines: size unknown
    entries = tuple(Entry(p, (1,)) for p in (small, big, own))
    names = ["heft", "mcts_uct", "zz_tree"]
    runs = {(c.spec.problem_id, c.scheduler) for c in Suite("t", entries, tree_search_limit=60).cells(names)}
    assert runs == {(p.problem_id, n) for p in (small, own) for n in names} | {(big.problem_id, "heft")}
    uncapped = Suite("t", entries).cells(names)
    assert len(uncapped) == 3 * 3 * 2


def test_real_and_quick_sizes(wfinstances: Path) -> None:
    """real: 31 traces x hetero-16 x 2 modes x 10 seeds x S schedulers;
    quick: (3 families x 4 scales x 3 seeds + 4 traces x 3 seeds) x 2 modes x S."""
    s = len(registered_names())
    real = real_suite(wfinstances)
    assert len(real.cells()) == 31 * 2 * 10 * s
    assert {c.spec.cluster for c in real.cells()} == {"hetero-16"}
    quick = quick_suite()
    assert len(quick.cells()) == (3 * 4 * 3 + 4 * 3) * 2 * s
    assert {c.spec.kind for c in quick.cells()} == {"synthetic", "trace"}
    assert max(c.spec.n_tasks or 0 for c in quick.cells()) == 310


def test_seeds_are_paired_across_schedulers() -> None:
    """Every scheduler sees the same (problem, mode, seed) set; a synthetic instance is generated from its run seed."""
    cells = quick_suite().cells()
    seen: dict[str, set[tuple[str, str, int]]] = defaultdict(set)
    for c in cells:
        seen[c.scheduler].add((c.spec.problem_id, c.mode.name, c.seed))
        if c.spec.kind == "synthetic":
            assert c.spec.gen_seed == c.seed
    sets = list(seen.values())
    assert all(x == sets[0] for x in sets)
    assert len(sets[0]) == len(cells) // len(registered_names())


def test_all_means_registered_at_run_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scheduler registered after the suite was built appears in its cells with no harness change."""
    suite = Suite("t", (Entry(ProblemSpec("synthetic", "layered", "small-3", n_tasks=10, gen_seed=1), (1,)),))
    before = {c.scheduler for c in suite.cells()}

    class Later(FCFS):
        name = "zz_later"

    monkeypatch.setitem(_REGISTRY, "zz_later", Later)
    after = {c.scheduler for c in suite.cells()}
    assert after == before | {"zz_later"}
    assert len(suite.cells()) == (len(before) + 1) * 2  # two default modes


def test_scheduler_override_and_unknown_names() -> None:
    """`schedulers` narrows a suite; an unknown name is an InputError naming the known ones."""
    suite = Suite("t", (Entry(ProblemSpec("synthetic", "random", "small-3", n_tasks=10, gen_seed=1), (1, 2)),))
    cells = suite.cells(["heft", "cpop"])
    assert len(cells) == 2 * 2 * 2
    assert cells[0] == Cell(suite.entries[0].spec, "heft", 1, CLASSIC)
    assert cells[-1] == Cell(suite.entries[0].spec, "cpop", 2, CLOUD)
    with pytest.raises(InputError, match="unknown scheduler.*nope.*known: .*heft"):
        suite.cells(["heft", "nope"])


def test_problem_ids_are_stable_and_builds_are_deterministic(wfinstances: Path) -> None:
    """problem_id names source, size, seed and cluster; building a spec twice gives equal arrays."""
    syn = ProblemSpec("synthetic", "etl_star", "small-3", n_tasks=12, gen_seed=4, cluster_id="small-3")
    assert syn.problem_id == "syn/etl_star/n12/s4/ccr0.5@small-3"
    a, b = syn.build(), syn.build()
    assert a.n_tasks == 12 and a.n_nodes == 3
    assert (a.runtime_s == b.runtime_s).all() and (a.succ_data == b.succ_data).all()
    entry = next(t for t in real_traces(wfinstances) if t.file.startswith("srasearch/srasearch-chameleon-10a"))
    trace = ProblemSpec("trace", entry.family, "hetero-16", n_tasks=entry.n_tasks, path=str(wfinstances / entry.file))
    assert trace.problem_id == "trace/srasearch/srasearch-chameleon-10a-001@hetero-16"
    assert trace.build().n_tasks == entry.n_tasks == 22


def test_unknown_suite_name_is_an_input_error() -> None:
    """A name that is neither built in nor a file lists the built-in suites."""
    with pytest.raises(InputError, match="quick, standard, real"):
        get_suite("quik")
    with pytest.raises(InputError, match="not found"):
        get_suite("missing.yaml")
