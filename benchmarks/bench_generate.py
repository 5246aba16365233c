"""Time to generate 1,000-task workflows: each synthetic family and the WfCommons Montage recipe.

Prints median and minimum over 7 repetitions (seeds 0..6); asserts nothing.
Run: python benchmarks/bench_generate.py
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from dagsched.generate import FAMILIES, generate_workflow
from dagsched.model import Workflow

N_TASKS = 1000
REPEATS = 7


def time_s(make: Callable[[int], Workflow]) -> tuple[float, float, Workflow]:
    """Median and minimum wall time of `make(seed)` over REPEATS seeds, and the last workflow."""
    times_s = []
    for seed in range(REPEATS):
        t0 = time.perf_counter()
        wf = make(seed)
        times_s.append(time.perf_counter() - t0)
    return statistics.median(times_s), min(times_s), wf


def main() -> None:
    from dagsched.generate.recipes import recipe_workflow  # imports wfcommons (about a second), kept out of timing

    cases: list[tuple[str, Callable[[int], Workflow]]] = [
        (family, lambda seed, f=family: generate_workflow(f, N_TASKS, seed)) for family in FAMILIES
    ]
    cases.append(("montage (wfcommons)", lambda seed: recipe_workflow("montage", N_TASKS, seed)))
    print(f"generating {N_TASKS}-task workflows, {REPEATS} repetitions")
    print(f"{'generator':<22}{'tasks':>7}{'edges':>8}{'median ms':>12}{'min ms':>10}")
    for label, make in cases:
        median_s, min_s, wf = time_s(make)
        print(f"{label:<22}{len(wf.tasks):>7}{len(wf.edges):>8}{median_s * 1e3:>12.1f}{min_s * 1e3:>10.1f}")


if __name__ == "__main__":
    main()
