"""The results store: one row per (problem_id, scheduler, seed, mode), insert-or-ignore, rows read back as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from dagsched.bench.store import COLUMNS, ResultStore, load_results, results_path
from dagsched.model.errors import InputError


def _row(seed: int, makespan: float | None = 10.0, error: str | None = None) -> dict[str, object]:
    return {
        "suite": "s",
        "family": "layered",
        "problem_id": "syn/layered/n10/s1/ccr0.5@small-3",
        "n_tasks": 10,
        "n_edges": 12,
        "n_nodes": 3,
        "cluster": "small-3",
        "mode": "cloud",
        "scheduler": "heft",
        "seed": seed,
        "makespan": makespan,
        "valid": error is None,
        "error": error,
        "wall_s": 0.01,
    }


def test_insert_or_ignore_keeps_the_first_row(tmp_path: Path) -> None:
    """Writing a key twice stores it once, with the first values; write() counts only new rows;
    load_results sorts by key, whatever order the cells finished in."""
    store = ResultStore(tmp_path)
    assert results_path(tmp_path).exists()
    assert store.write([_row(3, 12.0), _row(1, 10.0)]) == 2
    assert store.write([_row(1, 99.0), _row(2, 11.0)]) == 1
    rows = load_results(tmp_path)
    assert [(r["seed"], r["makespan"]) for r in rows] == [(1, 10.0), (2, 11.0), (3, 12.0)]
    assert [r["seed"] for r in store.rows(insertion_order=True)] == [3, 1, 2]
    assert store.done_keys() == {("syn/layered/n10/s1/ccr0.5@small-3", "heft", s, "cloud") for s in (1, 2, 3)}
    assert set(rows[0]) == set(COLUMNS)
    assert rows[0]["valid"] is True and rows[0]["created_at"] > 0
    store.close()


def test_failed_cells_are_stored_and_can_be_retried(tmp_path: Path) -> None:
    """A failed cell keeps its message and valid=False; delete_errors forgets only failed cells."""
    store = ResultStore(tmp_path)
    store.write([_row(1), _row(2, None, "RuntimeError: boom")])
    failed = [r for r in load_results(results_path(tmp_path)) if r["error"]]
    assert [(r["seed"], r["valid"], r["makespan"], r["error"]) for r in failed] == [
        (2, False, None, "RuntimeError: boom")
    ]
    assert store.delete_errors([("other", "heft", 2, "cloud")]) == 0
    assert store.delete_errors() == 1
    assert store.count() == 1
    store.close()


def test_loading_a_missing_folder_is_an_input_error(tmp_path: Path) -> None:
    """Reading results where there are none names the folder instead of creating an empty database."""
    with pytest.raises(InputError, match="no results.sqlite in"):
        load_results(tmp_path / "nothing")
    assert not (tmp_path / "nothing").exists()
