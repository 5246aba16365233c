"""Files to plain dicts and back: JSON or YAML, optionally gzip-compressed.

Every reader in `dagsched.io` works on the dict this module returns, so the
file-level faults (missing file, unknown extension, broken syntax) are reported
here once, always naming the file.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import zlib
from pathlib import Path
from typing import Any

import yaml

from dagsched.model.errors import InputError

# The C parser is ~10x faster on large files; fall back where libyaml is missing.
_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_YamlDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _YamlLoader(_BaseLoader):  # type: ignore[misc]
    """Safe loader that refuses a key given twice in one mapping (YAML would silently keep the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *defaults` may be overridden by the mapping's own keys: that is its purpose
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, str | int | float | bool) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (a second value would silently replace the first)",
                    key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]


SUFFIXES = (".json", ".yaml", ".yml")
PathLike = str | os.PathLike[str]


def document_kind(path: PathLike) -> tuple[str, bool]:
    """('json' | 'yaml', gzipped) from the file name, or InputError naming the file."""
    name = Path(path).name.lower()
    gzipped = name.endswith(".gz")
    stem = name.removesuffix(".gz")
    for suffix in SUFFIXES:
        if stem.endswith(suffix):
            return ("json" if suffix == ".json" else "yaml"), gzipped
    raise InputError(
        str(path), f"unknown file extension in '{Path(path).name}'; expected .json, .yaml or .yml, optionally + .gz"
    )


def read_document(path: PathLike) -> dict[str, Any]:
    """Parse a JSON/YAML(.gz) file into a dict; any fault is an InputError naming the file."""
    kind, gzipped = document_kind(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as err:
        raise InputError(str(path), f"cannot read file: {err.strerror or err}") from None
    if gzipped:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as err:
            raise InputError(str(path), f"not a valid gzip file: {err}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(str(path), f"not UTF-8 text: byte {err.start}: {err.reason}") from None
    if kind == "json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise InputError(str(path), f"not valid JSON: line {err.lineno}, column {err.colno}: {err.msg}") from None
    else:
        try:
            data = yaml.load(text, Loader=_YamlLoader)  # a SafeLoader subclass: builds plain data only
        except yaml.YAMLError as err:
            raise InputError(str(path), f"not valid YAML: {_yaml_where(err)}") from None
    if not isinstance(data, dict):
        raise InputError(str(path), f"expected a mapping at the top level, got {type(data).__name__}")
    return data


def _yaml_where(err: yaml.YAMLError) -> str:
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    if mark is None:
        return str(problem)
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"


def write_document(data: dict[str, Any], path: PathLike) -> None:
    """Write `data` as JSON or YAML (by extension), atomically, so a crash never leaves half a file."""
    kind, gzipped = document_kind(path)
    if kind == "json":
        text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    else:
        text = yaml.dump(data, Dumper=_YamlDumper, sort_keys=False, allow_unicode=True, width=120)
    raw = text.encode("utf-8")
    if gzipped:
        raw = gzip.compress(raw, mtime=0)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)  # `--out tour/ml.yaml` makes tour/, as `--out-dir` does
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; a written workflow is an ordinary file
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
