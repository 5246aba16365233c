"""The runner: resumes an interrupted run without losing or duplicating cells, skips finished work,
records a failing scheduler's cells and goes on, and chunks cells by problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from dagsched.bench.runner import TIMING_COLUMNS, make_chunks, run_suite
from dagsched.bench.store import ResultStore, load_results
from dagsched.bench.suites import CLASSIC, CLOUD, Entry, ProblemSpec, Suite
from dagsched.schedulers.base import _REGISTRY
from dagsched.schedulers.fcfs import FCFS
from dagsched.sim.engine import Decision, Simulator


def tiny_suite(schedulers: tuple[str, ...] = ("heft", "fcfs", "random")) -> Suite:
    """2 problems x 2 modes x 3 schedulers x 1 seed = 12 cells on the 3-node test cluster."""
    specs = [
        ProblemSpec("synthetic", "layered", "small-3", n_tasks=10, gen_seed=1),
        ProblemSpec("synthetic", "random", "small-3", n_tasks=12, gen_seed=2),
    ]
    entries = tuple(Entry(s, (s.gen_seed or 0,)) for s in specs)
    return Suite("tiny", entries, (CLASSIC, CLOUD), schedulers)


def _numbers(rows: list[dict[str, object]]) -> dict[tuple[object, ...], tuple[object, ...]]:
    keep = [k for k in rows[0] if k not in TIMING_COLUMNS]
    return {(r["problem_id"], r["scheduler"], r["seed"], r["mode"]): tuple(r[k] for k in keep) for r in rows}


class Interrupt(Exception):
    pass


def test_resume_after_interrupt_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    """Interrupted after 4 committed cells, the store holds exactly those 4; the next run adds the other 8,
    leaves the first 4 untouched, and the run after that does no work."""
    suite = tiny_suite()
    stored: list[int] = []

    def stop_after_four(rows: list[dict[str, object]]) -> None:
        stored.append(len(rows))
        if sum(stored) >= 4:
            raise Interrupt

    with pytest.raises(Interrupt):
        run_suite(suite, tmp_path, workers=0, chunk_size=2, progress=False, on_rows=stop_after_four)
    first = ResultStore(tmp_path).rows(insertion_order=True)
    assert len(first) == 4

    summary = run_suite(suite, tmp_path, workers=0, chunk_size=2, progress=False)
    assert (summary.total, summary.skipped, summary.ran, summary.errors) == (12, 4, 8, 0)
    rows = ResultStore(tmp_path).rows(insertion_order=True)
    keys = [(r["problem_id"], r["scheduler"], r["seed"], r["mode"]) for r in rows]
    assert len(rows) == 12 and len(set(keys)) == 12
    assert set(keys) == {c.key for c in suite.cells()}
    assert rows[:4] == first
    assert all(r["valid"] and r["error"] is None and r["makespan"] > 0 for r in rows)

    again = run_suite(suite, tmp_path, workers=0, progress=False)
    assert (again.skipped, again.ran, again.chunks) == (12, 0, 0)
    assert ResultStore(tmp_path).rows(insertion_order=True) == rows
    assert sorted(load_results(tmp_path), key=str) == sorted(rows, key=str)


def test_limit_runs_part_and_the_rest_later(tmp_path: Path) -> None:
    """limit=5 stores 5 cells; a second run adds the remaining 7 with the same numbers as one full run."""
    part = run_suite(tiny_suite(), tmp_path / "a", workers=0, limit=5, progress=False)
    assert (part.ran, ResultStore(tmp_path / "a").count()) == (5, 5)
    rest = run_suite(tiny_suite(), tmp_path / "a", workers=0, progress=False)
    assert (rest.skipped, rest.ran) == (5, 7)
    run_suite(tiny_suite(), tmp_path / "b", workers=0, progress=False)
    assert _numbers(load_results(tmp_path / "a")) == _numbers(load_results(tmp_path / "b"))


class Boom(FCFS):
    """Fails at its first decision."""

    name = "boom"

    def decide(self, sim: Simulator) -> Decision:
        raise RuntimeError("boom at t=0")


def test_failing_scheduler_is_recorded_and_the_run_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A scheduler raising in every cell gives 4 rows with its error and valid=False; the other 8 cells succeed."""
    monkeypatch.setitem(_REGISTRY, "boom", Boom)
    summary = run_suite(tiny_suite(("heft", "boom", "fcfs")), tmp_path, workers=0, progress=False)
    assert (summary.ran, summary.errors, summary.invalid) == (12, 4, 0)
    rows = load_results(tmp_path)
    bad = [r for r in rows if r["scheduler"] == "boom"]
    assert len(bad) == 4
    assert all(r["error"] == "RuntimeError: boom at t=0" and r["valid"] is False for r in bad)
    assert all(r["makespan"] is None and r["n_tasks"] in (10, 12) for r in bad)
    good = [r for r in rows if r["scheduler"] != "boom"]
    assert len(good) == 8 and all(r["valid"] and r["error"] is None for r in good)
    # a re-run keeps the failure (no silent retries) unless asked to retry
    assert run_suite(tiny_suite(("heft", "boom", "fcfs")), tmp_path, workers=0, progress=False).ran == 0
    retry = run_suite(tiny_suite(("heft", "boom", "fcfs")), tmp_path, workers=0, progress=False, retry_errors=True)
    assert (retry.ran, retry.errors) == (4, 4)


def test_a_problem_that_cannot_be_built_fails_its_cells(tmp_path: Path) -> None:
    """ml_pipeline needs GPUs: on homog-8 every cell of that problem is stored with the build error."""
    suite = Suite(
        "gpu",
        (Entry(ProblemSpec("synthetic", "ml_pipeline", "homog-8", n_tasks=10, gen_seed=1), (1,)),),
        (CLOUD,),
        ("heft", "fcfs"),
    )
    summary = run_suite(suite, tmp_path, workers=0, progress=False)
    assert (summary.ran, summary.errors) == (2, 2)
    rows = load_results(tmp_path)
    assert all(r["error"].startswith("problem: InputError") and "gpu" in r["error"] for r in rows)


def test_chunks_keep_a_problem_together_and_cover_every_cell() -> None:
    """Each chunk holds one problem's cells; chunk_size caps it; no cell is lost or repeated."""
    cells = tiny_suite().cells()
    whole = make_chunks(cells, workers=1)
    assert [len(c.cells) for c in whole] == [6, 6]
    capped = make_chunks(cells, workers=2, chunk_size=4)
    assert sorted(len(c.cells) for c in capped) == [3, 3, 3, 3]
    seen = [(c.spec.problem_id, *cell[:2], cell[2].name) for c in capped for cell in c.cells]
    assert sorted(seen) == sorted(c.key for c in cells)
    auto = make_chunks(cells, workers=2)
    assert sum(len(c.cells) for c in auto) == 12 and len(auto) >= 2


def test_seed_free_runs_do_not_depend_on_the_seed(wfinstances: Path) -> None:
    """The premise of reuse: every scheduler that claims `uses_seed = False` gives the same run under
    two seeds in classic mode on a fixed trace (and a seeded one, `random`, does not)."""
    from dagsched.generate.traces import real_traces
    from dagsched.schedulers import make_scheduler, registered_names, simulate

    entry = next(t for t in real_traces(wfinstances) if 30 <= t.n_tasks <= 200)
    cp = ProblemSpec("trace", entry.family, "hetero-16", path=str(wfinstances / entry.file)).build()
    seedless = [n for n in registered_names() if not make_scheduler(n).uses_seed]
    assert {"heft", "fcfs", "min_min", "kube_default"} <= set(seedless)
    assert "random" not in seedless
    for name in seedless:
        a, b = (simulate(cp, make_scheduler(name), CLASSIC.config(), seed) for seed in (1, 7))
        assert a.metrics.makespan == b.metrics.makespan, name
        assert a.trace.attempts == b.trace.attempts, name
    r1, r7 = (simulate(cp, make_scheduler("random"), CLASSIC.config(), seed) for seed in (1, 7))
    assert r1.trace.attempts != r7.trace.attempts


def test_seed_free_cells_run_once_and_are_stored_for_every_seed(tmp_path: Path) -> None:
    """A fixed problem with 3 seeds: classic cells of seedless schedulers run once and are stored 3 times
    with numbers equal to running each seed; cloud cells and `random` run every seed."""
    spec = ProblemSpec("synthetic", "layered", "small-3", n_tasks=12, gen_seed=4)
    suite = Suite("fixed", (Entry(spec, (1, 2, 3)),), (CLASSIC, CLOUD), ("heft", "fcfs", "random"))
    summary = run_suite(suite, tmp_path / "reuse", workers=0, progress=False)
    assert (summary.total, summary.ran, summary.reused) == (18, 14, 4)
    reused = load_results(tmp_path / "reuse")
    assert len(reused) == 18 and len({(r["scheduler"], r["seed"], r["mode"]) for r in reused}) == 18

    from dagsched.bench.runner import run_cell

    cp = spec.build()
    direct = {c.key: run_cell(cp, spec, c.scheduler, c.seed, c.mode) for c in suite.cells()}
    for row in reused:
        ran = direct[(row["problem_id"], row["scheduler"], row["seed"], row["mode"])]
        same = [k for k in ran if k not in TIMING_COLUMNS]
        assert {k: row[k] for k in same} == {k: ran[k] for k in same}
