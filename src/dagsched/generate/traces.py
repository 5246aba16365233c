"""Where the real WfCommons traces live and what their MANIFEST.csv says of each.

Read by the stream mixes, the benchmark suites and the policy's held-out evaluation alike.
"""

from __future__ import annotations

import csv
import functools
import os
from dataclasses import dataclass
from pathlib import Path

from dagsched.model.errors import InputError

SKIPPED_TRACE_FOLDERS = ("legacy", "helloworld")
"""MANIFEST families left out of suites: legacy/ duplicates older schema versions, helloworld/ is toys."""


SAMPLE_TRACES = Path("examples") / "wfcommons"
"""The repository's own sample of real traces (eight small ones, LICENSE beside them): what a clone has."""


def wfinstances_root() -> Path:
    """The WfCommons traces: $DAGSCHED_WFINSTANCES, else ../shared/data/wfinstances beside the repository (the
    full set), else the repository's sample, `examples/wfcommons`.

    The repository is found from the working directory first (the usual `make` case), then from this
    file (an editable install run from elsewhere).
    """
    env = os.environ.get("DAGSCHED_WFINSTANCES")
    if env:
        return Path(env).resolve()
    here = Path(__file__).resolve().parents
    candidates = [Path.cwd() / ".." / "shared" / "data" / "wfinstances"]
    candidates += [p.parent / "shared" / "data" / "wfinstances" for p in here[2:5]]
    candidates += [Path.cwd() / SAMPLE_TRACES, here[3] / SAMPLE_TRACES]
    for path in candidates:
        if (path / "MANIFEST.csv").exists():
            return path.resolve()
    return candidates[0].resolve()


@dataclass(frozen=True)
class TraceEntry:
    """One row of the traces' MANIFEST.csv that matters here."""

    file: str
    """path relative to the wfinstances folder"""
    family: str
    size_class: str
    n_tasks: int


@functools.cache
def manifest(root: Path) -> tuple[TraceEntry, ...]:
    """Every row of `root`/MANIFEST.csv; a missing file is an InputError naming the folder."""
    path = root / "MANIFEST.csv"
    if not path.exists():
        raise InputError("traces", f"no MANIFEST.csv in {root} (set DAGSCHED_WFINSTANCES to the traces folder)")
    with path.open(newline="") as fh:
        return tuple(
            TraceEntry(row["file"], row["family"], row["size_class"], int(row["tasks"])) for row in csv.DictReader(fh)
        )


def real_traces(root: Path | None = None) -> list[TraceEntry]:
    """Every trace in the MANIFEST except the legacy/ duplicates and the helloworld/ toys, smallest first."""
    entries = manifest((root or wfinstances_root()).resolve())
    keep = [e for e in entries if e.file.split("/")[0] not in SKIPPED_TRACE_FOLDERS]
    return sorted(keep, key=lambda e: (e.n_tasks, e.file))
