"""The Makefile says what the pages say, and `make run` stops cleanly: Ctrl-C (SIGINT to the terminal's process group)
or SIGTERM stops the service and the demo client, and the recipe ends with status 0 (no `make: *** ... Error 143`)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_shared_grid_costs_the_same_everywhere() -> None:
    """The comment over `bench-shared`, README and docs/shared-cluster.md give one figure for the whole grid."""
    makefile = (ROOT / "Makefile").read_text()
    comment = makefile[: makefile.index("\nbench-shared:")].rsplit("\n\n", 1)[1]
    figures = {
        "Makefile": re.findall(r"(\d+) core-hours", comment),
        "README.md": re.findall(r"grid .{0,400}?about (\d+) core-hours", (ROOT / "README.md").read_text(), re.S),
        "docs/shared-cluster.md": re.findall(
            r"whole grid is about (\d+) core-hours", (ROOT / "docs" / "shared-cluster.md").read_text()
        ),
    }
    assert all(len(found) == 1 for found in figures.values()), figures
    assert len({found[0] for found in figures.values()}) == 1, figures


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stopped_by(tmp_path: Path, command: list[str], sig: signal.Signals) -> tuple[int, str, int]:
    """Run `make serve` (or its recipe) in a folder beside the checkout's, signal its process group once the
    service answers, and return (status, output, port)."""
    for name in ("Makefile", "requirements.lock", "pyproject.toml", "docs", ".venv"):
        (tmp_path / name).symlink_to(ROOT / name)
    port, grpc_port = _free_port(), _free_port()
    recipe = subprocess.run(
        ["make", "-s", "-n", "serve", f"PORT={port}", f"GRPC_PORT={grpc_port}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # a stale .venv would be reinstalled from this scratch folder, its editable install then pointing here
    assert "pip install" not in recipe, "the .venv is older than the lock: run `make .venv/.installed-stamp` first"
    argv = [*command, recipe] if command[0] == "sh" else [*command, f"PORT={port}", f"GRPC_PORT={grpc_port}"]
    proc = subprocess.Popen(
        argv, cwd=tmp_path, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1)
                break
            except OSError:
                assert proc.poll() is None, proc.communicate()[0]
                time.sleep(0.5)
        time.sleep(1.0)  # the demo client is sending plans
        os.killpg(proc.pid, sig)
        output = proc.communicate(timeout=60)[0]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, output, port


@pytest.mark.parametrize(
    ("command", "sig"),
    [(["make", "serve"], signal.SIGINT), (["sh", "-c"], signal.SIGTERM)],
    ids=["make-INT", "sh-TERM"],
)
def test_make_run_stops_cleanly(tmp_path: Path, command: list[str], sig: signal.Signals) -> None:
    """Ctrl-C on `make run`: no `make: *** ... Error`, no traceback, the service gone; its recipe alone, sent
    SIGTERM, ends with status 0 (make itself, sent SIGINT, ends by that signal as any interrupted make does)."""
    status, output, port = _stopped_by(tmp_path, command, sig)
    assert "make: ***" not in output and "Traceback" not in output, output[-2000:]
    assert "Finished server process" in output, output[-2000:]
    if command[0] == "sh":
        assert status == 0, output[-2000:]
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0  # the service is gone
