"""What the performance scripts share: a `dagsched serve` process on loopback, its readiness, its processes' CPU
time and memory from /proc, a keep-alive HTTP client, and the model it serves.

Imported by the scripts beside it (`python benchmarks/bench_service.py` puts this folder first on the path).
"""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

CALLS_PER_CONNECTION = 10
"""A client opens a new keep-alive connection after this many calls (0: one for all). With `--workers N` the
workers share one listening socket and whichever is idle accepts: a connection kept for a whole run stays on
the worker that took it, and two clients often both land on one worker (measured: HEFT at 80 or at 180 plans/s
on two workers, run to run). Reconnecting spreads calls as a load balancer in front of replicas would."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def process_tree(pid: int) -> list[int]:
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


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def server_rss_mib(pid: int) -> tuple[float, list[float]]:
    """Total RSS of the server's processes in MiB, and each one's (the largest first)."""
    each = sorted((_rss_mib(p) for p in process_tree(pid)), reverse=True)
    return sum(each), each


def server_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) the server's processes have used: on a shared machine a steadier
    measure of the server's cost per call than wall-clock rates."""
    total = 0
    for p in process_tree(pid):
        fields = Path(f"/proc/{p}/stat").read_text().rpartition(")")[2].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))
    return total / os.sysconf("SC_CLK_TCK")


def served_model() -> tuple[Path, str]:
    """The model stem the server loads (the shipped one, as `dagsched serve` does) and a note for the figures."""
    from dagsched.service.settings import DEFAULT_MODEL

    if not Path(str(DEFAULT_MODEL) + ".safetensors").exists():
        raise SystemExit(f"no shipped model at {DEFAULT_MODEL}.safetensors")
    return DEFAULT_MODEL, f"shipped {DEFAULT_MODEL.name}"


def start_server(
    store: str,
    model: Path,
    model_dir: Path,
    *extra: str,
    environment: str = "bench",
    env: dict[str, str] | None = None,
) -> tuple[subprocess.Popen, int]:
    """`dagsched serve` on a free loopback port (warnings only) with `store` and `model`, uploads kept in
    `model_dir`, `extra` arguments appended; returns the process and its HTTP port (not yet ready: `wait_ready`)."""
    port = free_port()
    environ = dict(env or os.environ, DAGSCHED_MODEL_DIR=str(model_dir), DAGSCHED_ENVIRONMENT=environment)
    cmd = [sys.executable, "-m", "dagsched.service.cli", "serve", "--port", str(port), "--log-level", "warning",
           "--store", store, "--model", str(model), *extra]  # fmt: skip
    return subprocess.Popen(cmd, env=environ), port


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


class Client:
    """One keep-alive HTTP/1.1 connection that POSTs pre-encoded JSON (stdlib `http.client`, whose own cost per
    call is a fraction of httpx's, so the figures are mostly the server's)."""

    def __init__(self, port: int, per_connection: int = 0) -> None:
        self.port, self.per_connection, self.calls = port, per_connection, 0
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        self.conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        r = self.conn.getresponse()
        return r.status, r.read()

    def timed_post(self, path: str, body: bytes) -> tuple[float, bytes]:
        """One call on a connection renewed every `per_connection` calls (0: never): its latency in seconds and
        the answer; anything but 200 raises, naming the path."""
        if self.per_connection and self.calls and self.calls % self.per_connection == 0:
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        self.calls += 1
        t0 = time.perf_counter()
        status, text = self.post(path, body)
        elapsed = time.perf_counter() - t0
        if status != 200:
            raise RuntimeError(f"{path}: HTTP {status}: {text[:300]!r}")
        return elapsed, text


def sequential_calls(
    port: int, path: str, body: bytes, n: int, per_connection: int
) -> tuple[list[float], float, float, int]:
    """n sequential calls, a new connection every `per_connection` (0: one): their latencies, when the first began
    and the last ended, and how many answers were HEFT standing in for the asked scheduler (`"fallback":true`)."""
    client = Client(port, per_connection)
    lat = []
    fallbacks = 0
    began = time.perf_counter()
    for _ in range(n):
        elapsed, text = client.timed_post(path, body)
        lat.append(elapsed)
        fallbacks += b'"fallback":true' in text
    return lat, began, time.perf_counter(), fallbacks
