"""What the `shared` suite costs: each scheduler it runs on one stream per cluster, and the whole grid projected.

Builds the suite's own streams (the same cell ids: `--clusters`, `--load`, `--arrival`, `--seed`) once and runs
every scheduler the suite runs on each, one after another in this process, as the runner runs a cell
(simulation, validation, metrics), and prints the seconds per stream, their ratio to `fair`'s on the same
stream, and the grid projected from them: per cluster, the sum over schedulers of the measured seconds x 4
loads x 2 arrival processes x 10 seeds (the cost at `--load` stands for every load: an overestimate at 0.3 and
0.6, an underestimate at 0.95). Measured on a shared machine the seconds grow with its load; the ratios to
`fair`, measured seconds apart, much less. Prints; asserts nothing.

    .venv/bin/python benchmarks/bench_shared_cost.py --clusters hetero-16,homog-8 --load 0.85
"""

from __future__ import annotations

import argparse
import time

from dagsched.bench.runner import run_cell
from dagsched.bench.suite_file import get_suite
from dagsched.bench.suites import SHARED, SHARED_ARRIVALS, SHARED_LOADS
from dagsched.schedulers import registered_names

GRID_STREAMS_PER_CLUSTER = len(SHARED_LOADS) * len(SHARED_ARRIVALS) * 10


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clusters", default="hetero-16")
    ap.add_argument("--load", type=float, default=0.85)
    ap.add_argument("--arrival", default="poisson")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--schedulers", default="", help="default: every scheduler the shared suite runs")
    args = ap.parse_args()
    suite = get_suite("shared")
    names = [s for s in args.schedulers.split(",") if s] or [n for n in registered_names() if n not in suite.skip]
    total_s = 0.0
    for cluster in args.clusters.split(","):
        spec = next(
            e.spec
            for e in suite.entries
            if e.spec.cluster_id == cluster
            and e.spec.load == args.load
            and e.spec.arrival == args.arrival
            and e.spec.gen_seed == args.seed
        )
        cp = spec.build()
        seconds: dict[str, float] = {}
        for name in names:
            t0 = time.perf_counter()
            row = run_cell(cp, spec, name, args.seed, SHARED)
            seconds[name] = time.perf_counter() - t0
            state = "ok" if row["valid"] else f"INVALID {row.get('error')}"
            print(f"{cluster} {name:14s} {seconds[name]:8.1f} s  {state}", flush=True)
        fair = seconds.get("fair", float("nan"))
        per_stream = sum(seconds.values())
        total_s += per_stream * GRID_STREAMS_PER_CLUSTER
        print(f"{cluster}, {cp.n_tasks} tasks, load {args.load} {args.arrival} seed {args.seed}: per stream")
        for name, s in sorted(seconds.items(), key=lambda kv: -kv[1]):
            print(f"  {name:14s} {s:8.1f} s  {s / fair:6.2f} x fair")
        print(
            f"  all {len(names)} schedulers {per_stream:.0f} s per stream; x {GRID_STREAMS_PER_CLUSTER} streams = "
            f"{per_stream * GRID_STREAMS_PER_CLUSTER / 3600:.1f} h on one core"
        )
    print(
        f"grid projected over {args.clusters}: {total_s / 3600:.1f} h on one core, {total_s / 7200:.1f} h on two "
        f"workers, {total_s / 3600 / 32:.2f} h on 32 Ray workers (cells are independent)"
    )


if __name__ == "__main__":
    main()
