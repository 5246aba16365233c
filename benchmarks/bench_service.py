"""Service throughput: plans/s and latency p50/p99, extender prioritize calls/s, server memory.

A real uvicorn (one process, `dagsched.service.cli serve`) on loopback, called by one httpx
client in bounded loops. Workload: a 20-task `layered` workflow on the 16-node `hetero-16`
cluster, planned with HEFT and with the learned policy (the shipped model when present, else a
random tiny policy: its figures then measure the machinery, not a trained network).
Prints figures; asserts nothing about wall-clock time (the machine is shared).

Run: .venv/bin/python benchmarks/bench_service.py [--plans 200] [--prioritize 2000] [--memory-requests 5000]
(the issue's memory figure is after 100,000 requests: --memory-requests 100000)
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

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


def _policy(tmp: Path) -> tuple[Path, str]:
    from dagsched.service.settings import DEFAULT_MODEL

    if Path(str(DEFAULT_MODEL) + ".safetensors").exists():
        return DEFAULT_MODEL, "shipped drl-v1"
    import torch

    from dagsched.rl.policy import SchedulingPolicy, save_policy

    torch.manual_seed(0)
    save_policy(SchedulingPolicy(), tmp / "random")
    return tmp / "random", "random weights, default architecture (no shipped model yet)"


def _timed(client: httpx.Client, n: int, method: str, path: str, body: object) -> list[float]:
    lat = []
    for _ in range(n):
        t0 = time.perf_counter()
        r = client.request(method, path, json=body)
        lat.append(time.perf_counter() - t0)
        r.raise_for_status()
    return lat


def _report(label: str, lat: list[float]) -> None:
    q = statistics.quantiles(lat, n=100, method="inclusive")
    print(
        f"{label:<34} {len(lat) / sum(lat):8.1f} req/s   p50 {q[49] * 1e3:7.2f} ms   p99 {q[98] * 1e3:7.2f} ms"
        f"   (n={len(lat)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plans", type=int, default=200, help="plans per scheduler")
    parser.add_argument("--prioritize", type=int, default=2000, help="extender prioritize calls")
    parser.add_argument("--memory-requests", type=int, default=5000, help="prioritize calls between RSS readings")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        stem, model_note = _policy(tmp)
        port = _free_port()
        env = dict(os.environ, DAGSCHED_MODEL_DIR=str(tmp / "models"), DAGSCHED_ENVIRONMENT="bench")
        cmd = [
            sys.executable, "-m", "dagsched.service.cli", "serve", "--port", str(port), "--log-level", "warning",
            "--store", f"sqlite:///{tmp / 'bench.sqlite'}", "--model", str(stem),
        ]  # fmt: skip
        proc = subprocess.Popen(cmd, env=env)
        base = f"http://127.0.0.1:{port}"
        try:
            with httpx.Client(base_url=base, timeout=60) as client:
                for _ in range(300):
                    try:
                        client.get("/healthz").raise_for_status()
                        break
                    except httpx.HTTPError:
                        time.sleep(0.2)
                nodes = sample_nodes(0)
                wf = sample_workflow(0, n_tasks=20)
                print(f"workload: 20-task {wf['name']} on 16 nodes (hetero-16); policy: {model_note}")
                for sched in ("heft", "drl"):
                    body = {"workflow": wf, "nodes": nodes, "scheduler": sched}
                    first = client.post("/v1/schedule", json=body).json()
                    _timed(client, 5, "POST", "/v1/schedule", body)  # warm-up
                    lat = _timed(client, args.plans, "POST", "/v1/schedule", body)
                    fb = f", fell back: {first['fallback_reason']}" if first["fallback"] else ""
                    _report(f"/v1/schedule {sched} (makespan {first['makespan']:.0f} s{fb})", lat)
                ext = extender_args(nodes, wf["name"], wf["tasks"][0]["id"])
                _timed(client, 50, "POST", "/v1/k8s/prioritize", ext)
                _report(
                    "/v1/k8s/prioritize (16 nodes)", _timed(client, args.prioritize, "POST", "/v1/k8s/prioritize", ext)
                )
                rss0 = _rss_mib(proc.pid)
                t0 = time.perf_counter()
                _timed(client, args.memory_requests, "POST", "/v1/k8s/prioritize", ext)
                rss1 = _rss_mib(proc.pid)
                print(
                    f"server RSS {rss0:.1f} MiB -> {rss1:.1f} MiB after {args.memory_requests} more requests "
                    f"({time.perf_counter() - t0:.1f} s)"
                )
        finally:
            proc.terminate()
            proc.wait(timeout=20)


if __name__ == "__main__":
    main()
