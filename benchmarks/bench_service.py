"""Service throughput: plans/s and latency p50/p99 (HEFT and the learned policy), extender prioritize calls/s, memory.

A real server (`python -m dagsched.service.cli serve`, `--workers` processes) on loopback, called
by `--concurrency` client processes, each with one keep-alive connection (stdlib `http.client`,
whose own cost per call is a fraction of httpx's, so the figures are mostly the server's).
Workload: a 20-task `layered` workflow on the 16-node `hetero-16` cluster, planned with HEFT and
with the learned planner `drl` (the shipped model when present, else a random policy of the default
architecture: its figures then measure the machinery, not a trained network); then `--large-plans` plans of
a `--large-tasks`-task workflow on the 100 nodes of `large-100` with each; then kube-scheduler's
`prioritize` for one of its pods; then RSS of the server's processes over `--memory-requests` more
prioritize calls, read five times along the way (flat memory means the last readings do not climb).

Prints figures; asserts nothing about wall-clock time (the machine is shared: compare figures
measured side by side in one sitting, e.g. this tree's server against another's with `--server-src`).

Run:  .venv/bin/python benchmarks/bench_service.py [--plans 300] [--prioritize 3000] [--memory-requests 5000]
      [--workers 1] [--concurrency 1] [--server-src OTHER_TREE/src]
The published memory figure is after 100,000 requests: --memory-requests 100000.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import multiprocessing as mp
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from dagsched.service.demo import extender_args, sample_nodes, sample_workflow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _tree(pid: int) -> list[int]:
    """pid and its descendants (the `--workers` processes and uvicorn's helpers)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            children = task / "children"
            if children.exists():
                todo.extend(int(c) for c in children.read_text().split())
    return out


def _server_rss(pid: int) -> tuple[float, list[float]]:
    """Total RSS of the server's processes in MiB, and each one's (the largest first)."""
    each = sorted((_rss_mib(p) for p in _tree(pid)), reverse=True)
    return sum(each), each


def _server_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) the server's processes have used: on a shared machine a steadier
    measure of the server's cost per call than wall-clock rates."""
    total = 0
    for p in _tree(pid):
        fields = Path(f"/proc/{p}/stat").read_text().rpartition(")")[2].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))
    return total / os.sysconf("SC_CLK_TCK")


def _large_nodes() -> list[dict[str, Any]]:
    """The large-100 preset as request nodes, all free."""
    from dagsched.generate import cluster_preset

    return [
        {
            "id": n.id,
            "cpu": n.cpu,
            "mem": n.mem,
            "gpu": n.gpu,
            "speed": n.speed,
            "price_per_hour": n.price_per_hour,
            "bandwidth": n.bandwidth,
        }
        for n in cluster_preset("large-100").nodes
    ]


def _policy(tmp: Path) -> tuple[Path, str]:
    from dagsched.service.settings import DEFAULT_MODEL

    if Path(str(DEFAULT_MODEL) + ".safetensors").exists():
        return DEFAULT_MODEL, f"shipped {DEFAULT_MODEL.name}"
    import torch

    from dagsched.policy.files import save_policy
    from dagsched.policy.gnn import SchedulingPolicy

    torch.manual_seed(0)
    save_policy(SchedulingPolicy(), tmp / "random")
    return tmp / "random", "random weights, default architecture (no shipped model yet)"


def wait_ready(proc: subprocess.Popen, port: int, path: str = "/readyz", timeout_s: float = 180.0) -> None:
    """Until `path` answers 200 on the server at `port` (SystemExit if it exits or takes longer)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", path)
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the server on port {port} did not start")
        time.sleep(0.2)


class _Client:
    """One keep-alive HTTP/1.1 connection that POSTs pre-encoded JSON."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        self.conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        r = self.conn.getresponse()
        return r.status, r.read()


CALLS_PER_CONNECTION = 10
"""A client opens a new keep-alive connection after this many calls (0: one for all). With `--workers N` the
workers share one listening socket and whichever is idle accepts: a connection kept for a whole run stays on
the worker that took it, and two clients often both land on one worker (measured: HEFT at 80 or at 180 plans/s
on two workers, run to run). Reconnecting spreads calls as a load balancer in front of replicas would."""


def _calls(port: int, path: str, body: bytes, n: int, per_connection: int) -> tuple[list[float], float, float, int]:
    """n sequential calls, a new connection every `per_connection` (0: one): their latencies, when the first began
    and the last ended, and how many answers were HEFT standing in for the asked scheduler (`"fallback":true`)."""
    client = _Client(port)
    lat = []
    fallbacks = 0
    began = time.perf_counter()
    for i in range(n):
        if per_connection and i and i % per_connection == 0:
            client.conn.close()
            client = _Client(port)
        t0 = time.perf_counter()
        status, text = client.post(path, body)
        lat.append(time.perf_counter() - t0)
        if status != 200:
            raise RuntimeError(f"{path}: HTTP {status}: {text[:300]!r}")
        fallbacks += b'"fallback":true' in text
    return lat, began, time.perf_counter(), fallbacks


def _load(
    pool: Any, port: int, path: str, body: bytes, n: int, concurrency: int, per_connection: int
) -> tuple[list[float], float, int]:
    """n calls spread over `concurrency` client processes: all latencies, the calls per second overall, fallbacks."""
    if concurrency == 1:
        lat, began, ended, fallbacks = _calls(port, path, body, n, per_connection)
        return lat, n / (ended - began), fallbacks
    shares = [n // concurrency + (i < n % concurrency) for i in range(concurrency)]
    parts = pool.starmap(_calls, [(port, path, body, k, per_connection) for k in shares])
    lat = [x for part in parts for x in part[0]]
    return lat, n / (max(p[2] for p in parts) - min(p[1] for p in parts)), sum(p[3] for p in parts)


def _timed(
    label: str, pool: Any, pid: int, port: int, path: str, body: bytes, n: int, concurrency: int, per_connection: int
) -> str:
    """`_load` with the server's CPU time over it: the figures' line."""
    cpu0 = _server_cpu_s(pid)
    lat, rate, fallbacks = _load(pool, port, path, body, n, concurrency, per_connection)
    cpu_s = _server_cpu_s(pid) - cpu0
    q = statistics.quantiles(lat, n=100, method="inclusive")
    fell = f", {fallbacks} fell back to HEFT" if fallbacks else ""
    return (
        f"{label:<34} {rate:8.1f} /s   p50 {q[49] * 1e3:7.2f} ms   p99 {q[98] * 1e3:7.2f} ms   "
        f"server CPU {cpu_s / len(lat) * 1e3:6.2f} ms/call   (n={len(lat)}{fell})"
    )


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
    args = parser.parse_args()
    nodes = sample_nodes(0)
    wf = sample_workflow(0, n_tasks=20)
    pool_cm = mp.get_context("spawn").Pool(args.concurrency) if args.concurrency > 1 else contextlib.nullcontext()
    with tempfile.TemporaryDirectory() as tmp_s, pool_cm as pool:
        tmp = Path(tmp_s)
        stem, model_note = _policy(tmp)
        port = _free_port()
        env = dict(os.environ, DAGSCHED_MODEL_DIR=str(tmp / "models"), DAGSCHED_ENVIRONMENT="bench")
        if args.server_src is not None:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(args.server_src.resolve()), env.get("PYTHONPATH")]))
        cmd = [
            sys.executable,
            "-m",
            "dagsched.service.cli",
            "serve",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--store",
            f"sqlite:///{tmp / 'bench.sqlite'}",
            "--model",
            str(stem),
        ]
        if args.workers > 1:
            cmd += ["--workers", str(args.workers)]
        proc = subprocess.Popen(cmd, env=env)
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
                status, text = _Client(port).post("/v1/schedule", body)
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
                    status, text = _Client(port).post("/v1/schedule", body)
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
            total, each = _server_rss(proc.pid)
            readings = [f"{total:.1f}"]
            t0 = time.perf_counter()
            step = max(args.memory_requests // 4, 1)
            done = 0
            while done < args.memory_requests:
                k = min(step, args.memory_requests - done)
                load("/v1/k8s/prioritize", ext, k)
                done += k
                total, each = _server_rss(proc.pid)
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
