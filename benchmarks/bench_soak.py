"""Soak: a steady rate of /v1/schedule (HEFT and drl alternating) and extender prioritize calls for a long time,
sampling the server's RSS, open file descriptors and the store's size every minute (the goal: flat).

A real server (`dagsched serve`, one worker, SQLite file store unless --store) on loopback; one client process
paces its calls to `--rate` per second (a new keep-alive connection every 10 calls, as bench_service). Prints one
line per sample and a summary (first and last RSS, the slope of RSS over the second half); asserts nothing.

Run: .venv/bin/python benchmarks/bench_soak.py [--minutes 30] [--rate 20] [--store postgresql://...]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from dagsched.traffic.demo import extender_args, sample_nodes, sample_workflow
from kit import Client, process_tree, served_model, server_rss_mib, start_server, wait_ready


def _fds(pid: int) -> int:
    return sum(len(os.listdir(f"/proc/{p}/fd")) for p in process_tree(pid))


def _store_mib(store: str, tmp: Path) -> float:
    if store.startswith("sqlite:///"):
        base = Path(store.removeprefix("sqlite:///"))
        return sum(p.stat().st_size for p in base.parent.glob(base.name + "*")) / 2**20
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=20.0, help="calls per second (plans and prioritize, 1:1)")
    parser.add_argument("--store", default=None, help="store URL (default: a SQLite file in a temporary folder)")
    parser.add_argument("--sample-s", type=float, default=60.0, help="seconds between samples")
    args = parser.parse_args()
    nodes, wf = sample_nodes(0), sample_workflow(0, n_tasks=20)
    bodies = [
        ("/v1/schedule", json.dumps({"workflow": wf, "nodes": nodes, "scheduler": "heft"}).encode()),
        ("/v1/k8s/prioritize", json.dumps(extender_args(nodes, wf["name"], wf["tasks"][0]["id"])).encode()),
        ("/v1/schedule", json.dumps({"workflow": wf, "nodes": nodes, "scheduler": "drl"}).encode()),
        ("/v1/k8s/prioritize", json.dumps(extender_args(nodes, wf["name"], wf["tasks"][1]["id"])).encode()),
    ]
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        store = args.store or f"sqlite:///{tmp / 'soak.sqlite'}"
        stem, note = served_model()
        proc, port = start_server(store, stem, tmp / "models", environment="soak")
        try:
            wait_ready(proc, port, "/healthz")
            time.sleep(2)
            print(f"soak: {args.minutes:g} min at {args.rate:g} calls/s (plans heft+drl and prioritize, 1:1); "
                  f"policy {note}; store {store.split('@')[-1]}")  # fmt: skip
            print(f"{'min':>5} {'calls':>7} {'RSS MiB':>8} {'fds':>5} {'store MiB':>9} {'p50 ms':>7} {'p99 ms':>7}")
            client = Client(port, per_connection=10)
            start = time.monotonic()
            next_sample = start
            calls, lat, samples = 0, [], []
            while True:
                now = time.monotonic()
                if now >= next_sample:
                    rss, _ = server_rss_mib(proc.pid)
                    q = np.percentile(lat, [50, 99]) * 1e3 if lat else [float("nan")] * 2
                    samples.append(((now - start) / 60, rss))
                    print(f"{(now - start) / 60:5.1f} {calls:7d} {rss:8.1f} {_fds(proc.pid):5d} "
                          f"{_store_mib(store, tmp):9.2f} {q[0]:7.2f} {q[1]:7.2f}", flush=True)  # fmt: skip
                    lat = []
                    next_sample += args.sample_s
                    if now - start >= args.minutes * 60:
                        break
                path, body = bodies[calls % len(bodies)]
                lat.append(client.timed_post(path, body)[0])
                calls += 1
                wait = start + calls / args.rate - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            first, last = samples[0][1], samples[-1][1]
            half = [s for s in samples if s[0] >= samples[-1][0] / 2]
            slope = np.polyfit([s[0] for s in half], [s[1] for s in half], 1)[0] if len(half) > 1 else float("nan")
            print(f"RSS {first:.1f} MiB at start, {samples[1][1] if len(samples) > 1 else first:.1f} after a minute, "
                  f"{last:.1f} at the end; slope over the second half {slope:+.2f} MiB/min; {calls} calls")  # fmt: skip
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
