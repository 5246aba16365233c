"""Policy files: weights as safetensors beside a JSON of architecture, feature version and sha256; never pickles.

What every policy file shares: the two paths of a stem, the hash, the atomic write, and the error that names what
does not match. Each policy's own save and load (`priority_net`, `stream_index`) build on these.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path


class PolicyFileError(ValueError):
    """A saved policy is missing, corrupt, or does not match this code."""


class PolicyNotFound(PolicyFileError, FileNotFoundError):
    """No saved policy at the path asked for."""


def policy_paths(path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """The weights and metadata paths of a policy stem (a stem, or either file's path)."""
    p = Path(path)
    if p.suffix in (".safetensors", ".json"):
        p = p.with_suffix("")
    return p.with_name(p.name + ".safetensors"), p.with_name(p.name + ".json")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file beside it: a reader sees the old file or the new one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
