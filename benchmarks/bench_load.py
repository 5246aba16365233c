"""How long loading and compiling the largest real trace takes (Montage dss-15d: 2,122 tasks, 6,114 edges).

Run: python benchmarks/bench_load.py [--repeat 7]
Prints the median and the minimum of the repetitions per stage; asserts nothing about time.
The traces are looked up in ../shared/data/wfinstances beside the repository, or $DAGSCHED_WFINSTANCES.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dagsched.io import read_document, read_workflow, workflow_from_dict
from dagsched.model import Cluster, Node, Problem, compile_problem

TRACE = "montage/montage-chameleon-dss-15d-001.json.gz"


def wfinstances_path() -> Path:
    env = os.environ.get("DAGSCHED_WFINSTANCES")
    return Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared" / "data" / "wfinstances"


def cluster_16() -> Cluster:
    """16 nodes in four sizes and speeds, like a small heterogeneous cloud pool."""
    sizes = [(4, 16.0, 1.0, 0.2), (8, 32.0, 1.2, 0.4), (16, 64.0, 1.5, 0.8), (32, 128.0, 2.0, 1.6)]
    nodes = [
        Node(id=f"n{i:02d}", cpu=cpu, mem=mem, speed=speed, price_per_hour=price)
        for i, (cpu, mem, speed, price) in enumerate(sizes[i % 4] for i in range(16))
    ]
    return Cluster(name="bench-16", nodes=nodes, latency=0.001)


def timed(fn: Callable[[], Any], repeat: int) -> tuple[list[float], Any]:
    """Wall-clock seconds of `repeat` calls, and the last result."""
    times_s: list[float] = []
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times_s.append(time.perf_counter() - start)
    return times_s, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="repetitions per stage")
    args = parser.parse_args(argv)

    path = wfinstances_path() / TRACE
    if not path.exists():
        print(f"trace not found: {path} (set DAGSCHED_WFINSTANCES)", file=sys.stderr)
        return 2
    cluster = cluster_16()
    data = read_document(path)
    wf = workflow_from_dict(data)
    problem = Problem(workflows=[wf], cluster=cluster)

    stages: list[tuple[str, Callable[[], Any]]] = [
        ("read_document (gunzip + JSON)", lambda: read_document(path)),
        ("workflow_from_dict (map + validate)", lambda: workflow_from_dict(data)),
        ("read_workflow (file -> Workflow)", lambda: read_workflow(path)),
        ("Problem(...) (fit check, 16 nodes)", lambda: Problem(workflows=[wf], cluster=cluster)),
        ("compile_problem (16 nodes)", lambda: compile_problem(problem)),
    ]
    python = sys.version.split()[0]
    print(f"{TRACE}: {len(wf.tasks)} tasks, {len(wf.edges)} edges; {args.repeat} repetitions, Python {python}")
    print(f"{'stage':<38} {'median ms':>10} {'min ms':>10}")
    print("-" * 60)
    for name, fn in stages:
        times_s, _ = timed(fn, args.repeat)
        print(f"{name:<38} {1e3 * statistics.median(times_s):>10.1f} {1e3 * min(times_s):>10.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
