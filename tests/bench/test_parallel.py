"""Local processes and Ray store the same numbers as an in-process run (only the timing columns differ)."""

from __future__ import annotations

from pathlib import Path

from dagsched.bench.runner import TIMING_COLUMNS, run_suite
from dagsched.bench.store import load_results
from dagsched.bench.suites import CLASSIC, CLOUD, Entry, ProblemSpec, Suite


def _suite(n_problems: int, schedulers: tuple[str, ...]) -> Suite:
    specs = [
        ProblemSpec("synthetic", fam, "small-3", n_tasks=10 + i, gen_seed=i)
        for i, fam in enumerate(("layered", "etl_star", "random")[:n_problems])
    ]
    return Suite("par", tuple(Entry(s, (1, 2)) for s in specs), (CLASSIC, CLOUD), schedulers)


def _numbers(rows: list[dict[str, object]]) -> dict[tuple[object, ...], tuple[object, ...]]:
    keep = [k for k in rows[0] if k not in TIMING_COLUMNS]
    return {(r["problem_id"], r["scheduler"], r["seed"], r["mode"]): tuple(r[k] for k in keep) for r in rows}


def test_process_pool_matches_in_process(tmp_path: Path) -> None:
    """3 problems x 2 modes x 2 schedulers x 2 seeds = 24 cells (3 of them, heft's second classic seed, reused):
    2 worker processes store what one process does."""
    suite = _suite(3, ("heft", "random"))
    local = run_suite(suite, tmp_path / "inproc", workers=0, progress=False)
    pooled = run_suite(suite, tmp_path / "pool", workers=2, chunk_size=4, progress=False)
    assert (local.ran, pooled.ran, pooled.reused, pooled.backend, pooled.chunks) == (21, 21, 3, "processes", 6)
    a, b = load_results(tmp_path / "inproc"), load_results(tmp_path / "pool")
    assert len(a) == len(b) == 24
    assert _numbers(a) == _numbers(b)
    assert all(r["valid"] for r in b)


def test_ray_matches_in_process(tmp_path: Path) -> None:
    """4 cells on a 2-CPU local Ray store the same numbers as in-process."""
    import ray

    suite = _suite(1, ("heft", "random"))  # 1 problem x 2 modes x 2 schedulers x 2 seeds = 8 cells
    suite = Suite("par", suite.entries, (CLOUD,), suite.schedulers)  # 4 cells
    run_suite(suite, tmp_path / "inproc", workers=0, progress=False)
    # a Ray of its own: without address="local", ray.init joins a cluster already running on the machine
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        summary = run_suite(suite, tmp_path / "ray", use_ray=True, chunk_size=2, progress=False)
    finally:
        ray.shutdown()
    assert (summary.backend, summary.ran, summary.chunks, summary.lost) == ("ray", 4, 2, 0)
    a, b = load_results(tmp_path / "inproc"), load_results(tmp_path / "ray")
    assert len(b) == 4
    assert _numbers(a) == _numbers(b)
