"""Service throughput: plans/s and latency p50/p99 (HEFT and the learned policy), extender prioritize calls/s, memory.

A real server (`python -m dagsched.service.cli serve`, `--workers` processes) on loopback, called
by `--concurrency` client processes, each with one keep-alive connection (stdlib `http.client`,
whose own cost per call is a fraction of httpx's, so the figures are mostly the server's).
Workload: a 20-task `layered` workflow on the 16-node `hetero-16` cluster, planned with HEFT and
with the learned planner `drl` (the shipped model); then `--large-plans` plans of
a `--large-tasks`-task workflow on the 100 nodes of `large-100` with each; then kube-scheduler's
`prioritize` for one of its pods; then RSS of the server's processes over `--memory-requests` more
prioritize calls, read five times along the way (flat memory means the last readings do not climb). With
`--prioritize-beside SCHEDULER`, `prioritize` is timed once more while another client process plans the 20-task
workflow with SCHEDULER on the same worker, over and over: what plans in flight cost the extender's latency.

Prints figures; asserts nothing about wall-clock time (the machine is shared: compare figures
measured side by side in one sitting, e.g. this tree's server against another's with `--server-src`).

Run:  .venv/bin/python benchmarks/bench_service.py [--plans 300] [--prioritize 3000] [--memory-requests 5000]
      [--workers 1] [--concurrency 1] [--server-src OTHER_TREE/src] [--prioritize-beside drl]
The published memory figure is after 100,000 requests: --memory-requests 100000.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from dagsched.traffic.demo import extender_args, sample_nodes, sample_workflow
from kit import (
    CALLS_PER_CONNECTION,
    Client,
    sequential_calls,
    served_model,
    server_cpu_s,
    server_rss_mib,
    start_server,
    wait_ready,
)


def _large_nodes() -> list[dict[str, Any]]:
    """The large-100 preset as request nodes, all free."""
    from dagsched.generate import cluster_preset
    from dagsched.io.native import node_to_request

    return [node_to_request(n) for n in cluster_preset("large-100").nodes]


def _load(
    pool: Any, port: int, path: str, body: bytes, n: int, concurrency: int, per_connection: int
) -> tuple[list[float], float, int]:
    """n calls spread over `concurrency` client processes: all latencies, the calls per second overall, fallbacks."""
    if concurrency == 1:
        lat, began, ended, fallbacks = sequential_calls(port, path, body, n, per_connection)
        return lat, n / (ended - began), fallbacks
    shares = [n // concurrency + (i < n % concurrency) for i in range(concurrency)]
    parts = pool.starmap(sequential_calls, [(port, path, body, k, per_connection) for k in shares])
    lat = [x for part in parts for x in part[0]]
    return lat, n / (max(p[2] for p in parts) - min(p[1] for p in parts)), sum(p[3] for p in parts)


def _timed(
    label: str, pool: Any, pid: int, port: int, path: str, body: bytes, n: int, concurrency: int, per_connection: int
) -> str:
    """`_load` with the server's CPU time over it: the figures' line."""
    cpu0 = server_cpu_s(pid)
    lat, rate, fallbacks = _load(pool, port, path, body, n, concurrency, per_connection)
    cpu_s = server_cpu_s(pid) - cpu0
    q = statistics.quantiles(lat, n=100, method="inclusive")
    fell = f", {fallbacks} fell back to HEFT" if fallbacks else ""
    return (
        f"{label:<34} {rate:8.1f} /s   p50 {q[49] * 1e3:7.2f} ms   p99 {q[98] * 1e3:7.2f} ms   "
        f"server CPU {cpu_s / len(lat) * 1e3:6.2f} ms/call   (n={len(lat)}{fell})"
    )


def _plan_until(port: int, body: bytes, stop: Any, done: Any) -> None:
    """Plan `body` over and over on one connection until `stop` is set; count the plans in `done`."""
    client = Client(port)
    while not stop.is_set():
        client.timed_post("/v1/schedule", body)
        with done.get_lock():
            done.value += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plans", type=int, default=300, help="timed plans per scheduler")
    parser.add_argument("--prioritize", type=int, default=3000, help="timed extender prioritize calls")
    parser.add_argument(
        "--memory-requests", type=int, default=5000, help="prioritize calls over which RSS is read (published: 100000)"
    )
    parser.add_argument("--workers", type=int, default=1, help="server worker processes (`serve --workers`)")
    parser.add_argument("--concurrency", type=int, default=1, help="client processes calling at once")
    parser.add_argument("--schedulers", default="heft,drl", help="comma-separated schedulers to time")
    parser.add_argument("--large-tasks", type=int, default=1000, help="tasks of the large plans (0: none)")
    parser.add_argument("--large-plans", type=int, default=5, help="timed large plans per scheduler")
    parser.add_argument(
        "--calls-per-connection", type=int, default=CALLS_PER_CONNECTION, help="reconnect after this many (0: never)"
    )
    parser.add_argument(
        "--server-src", type=Path, default=None, help="run the server from another source tree (a before/after run)"
    )
    parser.add_argument(
        "--prioritize-beside", default="", help="a scheduler: time prioritize again while a client plans with it"
    )
    args = parser.parse_args()
    nodes = sample_nodes(0)
    wf = sample_workflow(0, n_tasks=20)
    pool_cm = mp.get_context("spawn").Pool(args.concurrency) if args.concurrency > 1 else contextlib.nullcontext()
    with tempfile.TemporaryDirectory() as tmp_s, pool_cm as pool:
        tmp = Path(tmp_s)
        stem, model_note = served_model()
        env = dict(os.environ)
        if args.server_src is not None:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(args.server_src.resolve()), env.get("PYTHONPATH")]))
        workers = ["--workers", str(args.workers)] if args.workers > 1 else []
        proc, port = start_server(f"sqlite:///{tmp / 'bench.sqlite'}", stem, tmp / "models", *workers, env=env)
        try:
            wait_ready(proc, port, "/healthz")
            print(
                f"workload: 20-task {wf['name']} on 16 nodes (hetero-16); policy: {model_note}; "
                f"server: {args.server_src or 'this tree'}, {args.workers} worker(s); "
                f"{args.concurrency} client process(es)"
            )

            def load(path: str, body: bytes, n: int) -> None:  # untimed calls (warm-up, memory readings)
                _load(pool, port, path, body, n, args.concurrency, args.calls_per_connection)

            def timed(label: str, path: str, body: bytes, n: int) -> str:
                return _timed(label, pool, proc.pid, port, path, body, n, args.concurrency, args.calls_per_connection)

            warm = 10 * max(args.workers, args.concurrency)
            for sched in args.schedulers.split(","):
                body = json.dumps({"workflow": wf, "nodes": nodes, "scheduler": sched}).encode()
                status, text = Client(port).post("/v1/schedule", body)
                if status != 200:
                    raise SystemExit(f"/v1/schedule {sched}: HTTP {status}: {text[:300]!r}")
                first = json.loads(text)
                load("/v1/schedule", body, warm)
                if first["fallback"]:
                    print(f"  the first {sched} plan fell back to HEFT: {first['fallback_reason']}")
                label = f"/v1/schedule {sched} (makespan {first['makespan']:.0f} s)"
                print(timed(label, "/v1/schedule", body, args.plans))
            if args.large_tasks:
                big = sample_workflow(0, n_tasks=args.large_tasks)
                for sched in args.schedulers.split(","):
                    body = json.dumps({"workflow": big, "nodes": _large_nodes(), "scheduler": sched}).encode()
                    status, text = Client(port).post("/v1/schedule", body)
                    if status != 200:
                        raise SystemExit(f"/v1/schedule {sched}: HTTP {status}: {text[:300]!r}")
                    first = json.loads(text)
                    if first["fallback"]:
                        print(f"  the first large {sched} plan fell back to HEFT: {first['fallback_reason']}")
                    span = first["makespan"]
                    label = f"/v1/schedule {sched}, {args.large_tasks} tasks on 100 nodes (makespan {span:.0f} s)"
                    print(timed(label, "/v1/schedule", body, args.large_plans))
            ext = json.dumps(extender_args(nodes, wf["name"], wf["tasks"][0]["id"])).encode()
            load("/v1/k8s/prioritize", ext, 50 * max(args.workers, args.concurrency))
            print(timed("/v1/k8s/prioritize (16 nodes)", "/v1/k8s/prioritize", ext, args.prioritize))
            if args.prioritize_beside:  # the extender's latency while plans arrive at the same worker
                ctx = mp.get_context("spawn")
                stop, done = ctx.Event(), ctx.Value("i", 0)
                body = json.dumps({"workflow": wf, "nodes": nodes, "scheduler": args.prioritize_beside}).encode()
                planner = ctx.Process(target=_plan_until, args=(port, body, stop, done))
                planner.start()
                try:
                    while done.value < 5:  # plans under way before the timing starts
                        time.sleep(0.05)
                    before = done.value
                    lat = sequential_calls(port, "/v1/k8s/prioritize", ext, args.prioritize, 0)[0]
                    planned = done.value - before
                finally:
                    stop.set()
                    planner.join(60)
                q = statistics.quantiles(lat, n=100, method="inclusive")
                print(
                    f"/v1/k8s/prioritize beside {args.prioritize_beside} plans   p50 {q[49] * 1e3:7.2f} ms   "
                    f"p99 {q[98] * 1e3:7.2f} ms   max {max(lat) * 1e3:7.2f} ms   (n={len(lat)}; "
                    f"{planned} 20-task plans meanwhile from another client)"
                )
            total, each = server_rss_mib(proc.pid)
            readings = [f"{total:.1f}"]
            t0 = time.perf_counter()
            step = max(args.memory_requests // 4, 1)
            done = 0
            while done < args.memory_requests:
                k = min(step, args.memory_requests - done)
                load("/v1/k8s/prioritize", ext, k)
                done += k
                total, each = server_rss_mib(proc.pid)
                readings.append(f"{total:.1f}")
            print(
                f"server RSS (MiB, all processes) at 0, 1/4 ... 4/4 of {args.memory_requests} more prioritize calls: "
                f"{' -> '.join(readings)}   ({time.perf_counter() - t0:.1f} s; per process now: "
                f"{', '.join(f'{x:.0f}' for x in each)})"
            )
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
