"""The serving policy: loaded at start-up, replaced by validated uploads, rolled back on request."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dagsched.model.errors import InputError

log = logging.getLogger("dagsched.service")

PER_DECISION_FORMAT = "dagsched-policy"
"""The format of the per-decision policy files older releases wrote: named when such a file is refused."""

STAGING_PREFIX = ".upload-"
"""An upload is validated in `.upload-<host>-<pid>-<random>` of the model folder (`clean_stale_uploads`)."""
STAGING_STALE_S = 900.0
"""A staging folder older than this is left over whoever made it: validating an upload takes seconds."""


def _host() -> str:
    return "".join(c if c.isalnum() else "_" for c in socket.gethostname())[:64] or "host"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def clean_stale_uploads(model_dir: Path) -> None:
    """Remove the staging folders of uploads killed half-way (of a gone process here, or stale)."""
    now, host, me, removed = time.time(), _host(), os.getpid(), []
    for path in sorted(model_dir.glob(STAGING_PREFIX + "*")):
        if not path.is_dir():
            continue
        parts = path.name[len(STAGING_PREFIX) :].split("-")
        mine = len(parts) == 3 and parts[0] == host and parts[1].isdigit()
        with contextlib.suppress(OSError):
            old = now - path.stat().st_mtime > STAGING_STALE_S
            gone = mine and (int(parts[1]) == me or not _pid_alive(int(parts[1])))
            if old or gone:
                shutil.rmtree(path)
                removed.append(path.name)
    if removed:
        log.warning("removed %d staging folder(s) of uploads killed half-way: %s", len(removed), ", ".join(removed))


@dataclass(frozen=True)
class LoadedModel:
    """One loaded policy and where it came from."""

    policy: Any
    version: str
    sha256: str
    loaded_at: float
    source: str
    meta: dict[str, Any] = field(repr=False)


def smoke_test(policy: Any) -> None:
    """Plan a small fixed problem with the policy; raise InputError if it cannot (non-finite scores, invalid plan)."""
    from dagsched.model import Cluster, Node, Problem, Task, Workflow, compile_problem
    from dagsched.policy.priority_features import task_features
    from dagsched.schedulers import simulate
    from dagsched.schedulers.priority_sampling import PrioritySampling

    wf = Workflow(
        name="smoke",
        tasks=[Task(id=f"t{i}", runtime=1.0 + i, cpu=1.0) for i in range(4)],
        edges=[{"src": "t0", "dst": "t1"}, {"src": "t0", "dst": "t2"}, {"src": "t1", "dst": "t3"}],
    )
    cluster = Cluster(nodes=[Node(id="a", cpu=2, mem=4), Node(id="b", cpu=1, mem=4, speed=2.0)])
    cp = compile_problem(Problem(workflows=[wf], cluster=cluster))
    if not np.isfinite(policy.scores(task_features(cp, False))).all():
        raise InputError("weights", "smoke inference gave non-finite scores: the weights are unusable")
    result = simulate(cp, PrioritySampling(policy=policy, samples=4), validate=True)
    if not result.valid:
        raise InputError("weights", "smoke plan is invalid: " + "; ".join(result.violations[:3]))


class ModelManager:
    """Holds the serving policy and the previous one; swaps atomically."""

    def __init__(self, model_dir: Path, max_upload_bytes: int) -> None:
        self.model_dir = Path(model_dir)
        self.max_upload_bytes = max_upload_bytes
        self.current: LoadedModel | None = None
        self.previous: LoadedModel | None = None
        self.error: str | None = None  # why no model is loaded, when none is
        self._lock = threading.Lock()
        clean_stale_uploads(self.model_dir)

    @staticmethod
    def available() -> bool:
        """Whether this build has the learned planner at all (it needs torch)."""
        try:
            import dagsched.schedulers.priority_sampling  # noqa: F401
        except ImportError:
            return False
        return True

    def load_path(self, stem: Path, source: str = "shipped") -> LoadedModel:
        """Load a saved priority policy (`<stem>.safetensors` + `<stem>.json`) and make it the serving one."""
        from dagsched.policy.files import PolicyFileError
        from dagsched.policy.priority_net import load_priority_policy

        try:
            policy = load_priority_policy(stem)
        except PolicyFileError as err:
            raise InputError("weights", str(err)) from None
        smoke_test(policy)  # compiles (or loads) the decoder now, not in the first request
        return self._serve(policy, policy.meta, source)

    def load_kept(self, stem: Path, weights: bytes, meta: dict[str, Any], source: str) -> LoadedModel:
        """Write a policy kept in the store as `<stem>.safetensors` + `<stem>.json`, then serve it (`load_path`).
        The files are named as the loader reads them (`policy_paths`): a stem from a version such as `v1.json` is
        read as `v1`."""
        from dagsched.policy.files import policy_paths

        weights_path, meta_path = policy_paths(stem)
        stem.parent.mkdir(parents=True, exist_ok=True)
        weights_path.write_bytes(weights)
        meta_path.write_text(json.dumps(meta))
        return self.load_path(stem, source)

    def try_load_startup(self, stem: Path) -> None:
        """The shipped (or configured) model; a missing or bad one is reported, and HEFT serves."""
        if not self.available():
            self.error = "this build has no learned planner (dagsched.schedulers.priority_sampling)"
            return
        try:
            self.load_path(stem, "shipped")
        except (InputError, OSError, ValueError) as err:
            self.error = f"no learned policy loaded from {stem}: {err}"

    def upload(self, weights: bytes, metadata: bytes) -> LoadedModel:
        """Validate an uploaded policy and swap it in; InputError (field `weights` or `metadata`) otherwise."""
        if len(weights) > self.max_upload_bytes:
            raise InputError("weights", f"{len(weights)} bytes is over the upload limit of {self.max_upload_bytes}")
        if not weights:
            raise InputError("weights", "the weights file is empty")
        try:
            meta = json.loads(metadata)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise InputError("metadata", f"not valid JSON: {err}") from None
        if not isinstance(meta, dict):
            raise InputError("metadata", f"expected a JSON object, got {type(meta).__name__}")
        version = version_of(meta)
        if len(version) > 128 or any(ord(c) < 32 or ord(c) == 127 for c in version):
            raise InputError("metadata", "version: at most 128 printable characters (it is stored and shown)")
        if not self.available():
            raise InputError("weights", "this build has no learned planner to run the policy")
        from dagsched.policy.files import PolicyFileError
        from dagsched.policy.priority_net import FILE_FORMAT, load_priority_policy

        fmt = meta.get("format")
        if fmt != FILE_FORMAT:
            raise InputError(
                "metadata",
                f"format {fmt!r}: the service runs priority policies only ({FILE_FORMAT!r}, as `save_priority_policy`"
                " writes them)" + ("; a per-decision policy is refused" if fmt == PER_DECISION_FORMAT else ""),
            )
        from safetensors.torch import load as load_safetensors

        try:
            load_safetensors(weights)
        except Exception as err:  # noqa: BLE001  (any parse failure is the client's file)
            raise InputError("weights", f"not a valid safetensors file: {err}") from None
        self.model_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=self.model_dir, prefix=f"{STAGING_PREFIX}{_host()}-{os.getpid()}-"))
        try:
            stem = staging / "policy"
            (staging / "policy.safetensors").write_bytes(weights)
            (staging / "policy.json").write_bytes(metadata)
            try:
                policy = load_priority_policy(stem)
            except PolicyFileError as err:  # it names the file at fault: policy.json is the metadata
                fault = str(err).replace(str(staging) + "/", "")
                raise InputError("metadata" if fault.startswith("policy.json") else "weights", fault) from None
            except (TypeError, ValueError, RuntimeError) as err:  # torch refuses e.g. a negative width
                raise InputError("metadata", f"architecture does not build: {err}") from None
            try:
                smoke_test(policy)
            except InputError:
                raise
            except Exception as err:  # noqa: BLE001  (a crash in the smoke run rejects the upload)
                raise InputError("weights", f"smoke inference failed: {type(err).__name__}: {err}") from None
            final = self.model_dir / safe_name(version)
            for suffix in (".safetensors", ".json"):
                (staging / f"policy{suffix}").replace(Path(str(final) + suffix))
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return self._serve(policy, meta, "upload")

    def rollback(self) -> LoadedModel:
        """Serve the previous model again (the current one becomes previous)."""
        with self._lock:
            if self.previous is None:
                raise LookupError("model: there is no previous model to roll back to")
            self.current, self.previous = self.previous, self.current
            assert self.current is not None
            return self.current

    def _serve(self, policy: Any, meta: dict[str, Any], source: str) -> LoadedModel:
        """Make `policy` the serving one, the one it replaces the previous."""
        loaded = LoadedModel(policy, version_of(meta), meta["sha256"], time.time(), source, meta)
        with self._lock:  # (no model yet: no previous one either)
            self.current, self.previous = loaded, self.current
            self.error = None
        return loaded


def version_of(meta: dict[str, Any]) -> str:
    """The version in a policy's metadata, else `sha-<first 12 of sha256>`."""
    v = meta.get("version")
    return str(v) if v else f"sha-{str(meta.get('sha256', ''))[:12]}"


def safe_name(version: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in version)[:100] or "policy"
