"""gRPC against HTTP on loopback: the same 20-task plan from one server process, latency p50/p99 and throughput.

One `dagsched serve --grpc-port` process (one worker) answers both APIs from one state. One client calls
Schedule over gRPC and POST /v1/schedule over HTTP with the same request (a 20-task `layered` workflow on the
16 nodes of hetero-16, HEFT), alternating blocks of `--calls` so that both see the same machine over the run;
`--rounds` blocks each. The HTTP client is stdlib `http.client` on one keep-alive connection sending pre-encoded
JSON and not parsing the answer; the gRPC client sends a pre-serialised request on one channel and, as the
HTTP client, does not parse the answer (`raw`), or parses it into a Plan message (`parsed`). The server's CPU
per call is read from /proc. Prints figures; asserts nothing.

    .venv/bin/python benchmarks/bench_grpc.py --calls 100 --rounds 5
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import tempfile
import time
from pathlib import Path

import grpc

from dagsched.service.rpc import dagsched_pb2 as pb
from dagsched.service.rpc.client import schedule_request
from dagsched.traffic.demo import sample_nodes, sample_workflow
from kit import free_port, served_model, server_cpu_s, start_server, wait_ready

SCHEDULE = "/dagsched.v1.Scheduler/Schedule"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=100, help="calls per block")
    ap.add_argument("--rounds", type=int, default=5, help="blocks per protocol, alternated")
    ap.add_argument("--scheduler", default="heft")
    args = ap.parse_args()
    # node usage of seed 3 keeps the load-skew monitor quiet, so every call plans with the scheduler asked
    body = {"workflow": sample_workflow(0, n_tasks=20), "nodes": sample_nodes(3), "scheduler": args.scheduler}
    http_body = json.dumps(body).encode()
    grpc_body = schedule_request(body).SerializeToString()
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        stem, _ = served_model()
        grpc_port = free_port()
        proc, port = start_server(
            f"sqlite:///{tmp / 'bench.sqlite'}", stem, tmp / "models", "--grpc-port", str(grpc_port)
        )
        try:
            wait_ready(proc, port, "/readyz")
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}")
            raw = channel.unary_unary(SCHEDULE)  # bytes in, bytes out: no client-side (de)serialisation
            parsed = channel.unary_unary(SCHEDULE, response_deserializer=pb.Plan.FromString)

            def over_http() -> None:
                conn.request("POST", "/v1/schedule", body=http_body, headers={"Content-Type": "application/json"})
                r = conn.getresponse()
                text = r.read()
                if r.status != 200 or b'"fallback":true' in text:
                    raise SystemExit(f"HTTP {r.status}: {text[:300]!r}")

            def over_grpc_raw() -> None:
                raw(grpc_body, timeout=120)

            def over_grpc_parsed() -> None:
                if parsed(grpc_body, timeout=120).fallback:
                    raise SystemExit("the plan fell back to HEFT")

            calls = {"HTTP POST /v1/schedule": over_http, "gRPC Schedule (raw)": over_grpc_raw,
                     "gRPC Schedule (parsed)": over_grpc_parsed}  # fmt: skip
            first = parsed(grpc_body, timeout=120)
            for call in calls.values():  # warm-up
                for _ in range(20):
                    call()
            lat: dict[str, list[float]] = {k: [] for k in calls}
            wall: dict[str, float] = dict.fromkeys(calls, 0.0)
            cpu: dict[str, float] = dict.fromkeys(calls, 0.0)
            for _ in range(args.rounds):
                for name, call in calls.items():
                    cpu0, t_block = server_cpu_s(proc.pid), time.perf_counter()
                    for _ in range(args.calls):
                        t0 = time.perf_counter()
                        call()
                        lat[name].append(time.perf_counter() - t0)
                    wall[name] += time.perf_counter() - t_block
                    cpu[name] += server_cpu_s(proc.pid) - cpu0
            print(
                f"20-task {body['workflow']['name']} on hetero-16 by {first.scheduler} "
                f"(makespan {first.makespan:.1f} s), one server process, one client, "
                f"{args.rounds} alternating blocks of {args.calls} calls each"
            )
            for name in calls:
                q = statistics.quantiles(lat[name], n=100, method="inclusive")
                n = len(lat[name])
                print(
                    f"{name:<24} {n / wall[name]:7.1f} calls/s   p50 {q[49] * 1e3:6.2f} ms   "
                    f"p99 {q[98] * 1e3:6.2f} ms   server CPU {cpu[name] / n * 1e3:5.2f} ms/call   (n={n})"
                )
            channel.close()
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
