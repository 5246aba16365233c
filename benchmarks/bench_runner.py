"""Benchmark-runner throughput: cells per second in-process, in a local process pool and on local Ray,
and the overhead each backend adds per cell. Chunked (the default) and one cell per task, to show
why small cells are chunked.

Workload: 60 small cells (5 synthetic problems of 20 tasks on hetero-16 x classic/cloud x 3
schedulers x 2 seeds). Overhead per cell = (wall x workers - sum of the cells' own time) / cells:
the worker-seconds spent on anything but simulating (building problems, pickling, task dispatch,
the store, idle workers at the end). Pool start-up is inside the wall time; Ray's start-up is not
(it is printed apart: a cluster is started once and reused).

Prints figures; asserts nothing about wall-clock time (the machine is shared).
Run: .venv/bin/python benchmarks/bench_runner.py [--repeats 3] [--workers 2]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from pathlib import Path

from dagsched.bench.runner import RunSummary, run_suite
from dagsched.bench.suites import CLASSIC, CLOUD, Entry, ProblemSpec, Suite

FAMILIES = ("layered", "ml_pipeline", "etl_star", "random", "layered")


def small_suite() -> Suite:
    """5 problems x 2 modes x 3 schedulers x 2 seeds = 60 cells of a few milliseconds each."""
    specs = [
        ProblemSpec("synthetic", fam, "hetero-16", n_tasks=20, gen_seed=i, cluster_id="hetero-16")
        for i, fam in enumerate(FAMILIES)
    ]
    return Suite("bench-small", tuple(Entry(s, (1, 2)) for s in specs), (CLASSIC, CLOUD), ("heft", "fcfs", "min_min"))


def measure(suite: Suite, repeats: int, **kwargs: object) -> list[RunSummary]:
    out = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            out.append(run_suite(suite, Path(tmp), progress=False, **kwargs))  # type: ignore[arg-type]
    return out


def row(label: str, runs: list[RunSummary], n_cells: int) -> tuple[str, int, float, float, float, float]:
    """Medians over the repeats: wall s, cells/s, the cells' own ms per cell, overhead ms per cell."""
    assert all(r.ran == n_cells and r.errors == 0 for r in runs)
    return (
        label,
        runs[0].chunks,
        statistics.median(r.wall_s for r in runs),
        statistics.median(r.cells_per_s for r in runs),
        statistics.median(r.simulate_s / r.ran for r in runs) * 1e3,
        statistics.median(r.overhead_per_cell_s for r in runs) * 1e3,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    suite = small_suite()
    n_cells = len(suite.cells())
    w = args.workers
    print(f"workload: {n_cells} cells ({len(suite.entries)} problems of 20 tasks on hetero-16); {args.repeats} repeats")

    local = [
        ("in-process", {"workers": 0}),
        (f"processes x{w}, chunked", {"workers": w}),
        (f"processes x{w}, 1 cell/task", {"workers": w, "chunk_size": 1}),
    ]
    on_ray = [
        (f"ray x{w}, chunked", {"use_ray": True, "workers": w}),
        (f"ray x{w}, 1 cell/task", {"use_ray": True, "workers": w, "chunk_size": 1}),
    ]
    rows = [row(label, measure(suite, args.repeats, **kw), n_cells) for label, kw in local]

    # Ray after the local cases: its daemons share the two cores, and its threads would make the pool
    # start through forkserver instead of fork
    import ray

    t0 = time.perf_counter()
    ray.init(num_cpus=w, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    ray_start = time.perf_counter() - t0
    measure(suite, 1, use_ray=True, workers=w)  # warm: Ray workers import dagsched once
    rows += [row(label, measure(suite, args.repeats, **kw), n_cells) for label, kw in on_ray]
    ray.shutdown()

    head = f"{'backend':<28} {'chunks':>6} {'wall s':>8} {'cells/s':>9} {'cell ms':>9} {'overhead ms/cell':>17}"
    print(head)
    print("-" * len(head))
    for label, chunks, wall, cps, cell_ms, over_ms in rows:
        print(f"{label:<28} {chunks:>6} {wall:>8.2f} {cps:>9.1f} {cell_ms:>9.2f} {over_ms:>17.2f}")
    print(f"\nray.init (local, {w} CPUs), not in the figures above: {ray_start:.1f} s")
    print("cell ms: median of the cells' own time (scheduler + simulation + validation), per cell")


if __name__ == "__main__":
    main()
