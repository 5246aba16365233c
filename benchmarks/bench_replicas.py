"""Scale-out: /v1/schedule throughput of one `dagsched serve` replica against two, on one store, side by side.

Each replica is its own process on its own port (one worker each, no shared memory), all on one store (the
PostgreSQL at `--store` or $DAGSCHED_TEST_PG_URL, as `deploy/ci-postgres.sh` prints; a SQLite file otherwise).
`--concurrency` client processes call at once, spread over the replicas round-robin (what a load balancer
does), each with keep-alive connections (bench_service's client). The runs alternate 1, 2, 1, 2 replicas so
that both see the same machine; each prints plans/s and p50/p99 per scheduler.

Prints figures; asserts nothing about time. On a 2-core machine the clients share the cores with the servers.

Run: .venv/bin/python benchmarks/bench_replicas.py [--plans 200] [--concurrency 4] [--store postgresql://...]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

from dagsched.traffic.demo import sample_nodes, sample_workflow
from kit import CALLS_PER_CONNECTION, sequential_calls, served_model, start_server, wait_ready


def _start(store: str, stem: Path, tmp: Path, name: str) -> tuple[subprocess.Popen, int]:
    proc, port = start_server(store, stem, tmp / name)
    wait_ready(proc, port)
    return proc, port


def _run(pool, ports: list[int], body: bytes, n: int, concurrency: int) -> tuple[float, list[float]]:
    shares = [n // concurrency + (i < n % concurrency) for i in range(concurrency)]
    jobs = [(ports[i % len(ports)], "/v1/schedule", body, k, CALLS_PER_CONNECTION) for i, k in enumerate(shares)]
    parts = pool.starmap(sequential_calls, jobs)
    lat = [x for p in parts for x in p[0]]
    return n / (max(p[2] for p in parts) - min(p[1] for p in parts)), lat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plans", type=int, default=200, help="timed plans per scheduler and run")
    parser.add_argument("--concurrency", type=int, default=4, help="client processes")
    parser.add_argument("--store", default=os.environ.get("DAGSCHED_TEST_PG_URL"), help="store URL all replicas share")
    parser.add_argument("--schedulers", default="heft,drl")
    parser.add_argument("--rounds", type=int, default=2, help="how many times the 1-then-2 pair runs")
    args = parser.parse_args()
    nodes, wf = sample_nodes(0), sample_workflow(0, n_tasks=20)
    with tempfile.TemporaryDirectory() as tmp_s, mp.get_context("spawn").Pool(args.concurrency) as pool:
        tmp = Path(tmp_s)
        store = args.store or f"sqlite:///{tmp / 'shared.sqlite'}"
        stem, note = served_model()
        print(f"20-task {wf['name']} on hetero-16; policy {note}; store {store.split('@')[-1]}; "
              f"{args.concurrency} client processes; {os.cpu_count()} CPUs")  # fmt: skip
        servers = [_start(store, stem, tmp, name) for name in ("r1", "r2")]
        try:
            results: dict[tuple[str, int], list[tuple[float, list[float]]]] = {}
            for sched in args.schedulers.split(","):
                body = json.dumps({"workflow": wf, "nodes": nodes, "scheduler": sched}).encode()
                for _, port in servers:  # warm both
                    _run(pool, [port], body, 20, args.concurrency)
                for _ in range(args.rounds):
                    for replicas in (1, 2):
                        ports = [p for _, p in servers[:replicas]]
                        results.setdefault((sched, replicas), []).append(
                            _run(pool, ports, body, args.plans, args.concurrency)
                        )
            for sched in args.schedulers.split(","):
                line = []
                for replicas in (1, 2):
                    runs = results[(sched, replicas)]
                    rate = statistics.median(r for r, _ in runs)
                    lat = [x for _, lat in runs for x in lat]
                    q = statistics.quantiles(lat, n=100, method="inclusive")
                    line.append((rate, q[49] * 1e3, q[98] * 1e3))
                    print(f"/v1/schedule {sched:<5} {replicas} replica(s): {rate:7.1f} plans/s "
                          f"(runs: {', '.join(f'{r:.1f}' for r, _ in runs)})   p50 {q[49] * 1e3:6.1f} ms   "
                          f"p99 {q[98] * 1e3:6.1f} ms")  # fmt: skip
                print(f"  {sched}: two replicas / one = {line[1][0] / line[0][0]:.2f} x plans/s")
        finally:
            for proc, _ in servers:
                proc.terminate()
            for proc, _ in servers:
                proc.wait(timeout=30)


if __name__ == "__main__":
    main()
