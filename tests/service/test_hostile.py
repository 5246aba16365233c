"""Hostile rules and uploads: refused, or bounded in time and memory (never a hang); the old model keeps serving."""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import tracemalloc
from pathlib import Path

import pytest
import torch
from fastapi.testclient import TestClient
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors

from dagsched.model.errors import InputError
from dagsched.service.config import config_from_dict
from dagsched.service.rules import compile_rule

from .conftest import AUTH, nodes, save_tiny_policy, workflow

NODE = {"id": "n", "cpu": 2.0, "mem": 4.0, "gpu": 0, "cpu_free": 2.0, "mem_free": 4.0, "gpu_free": 0, "speed": 1.0,
        "price_per_hour": 0.1, "labels": {"zone": "eu"}}  # fmt: skip
TASK = {"id": "t", "runtime": 1.0, "cpu": 1.0, "mem": 0.0, "gpu": 0, "priority": 0, "critical": False, "labels": {}}


@pytest.mark.parametrize(
    "expr",
    [
        '"x" * 99999 * 99999 == "b"',  # was 10 GB and 23 s
        '"a" * 999999999 == "b"',
        'node.labels["zone"] * 999999999 == "a"',
        "(1, 2) * 999999999 == (1,)",
        '"a" in "b" * 999999999',
        '"%999999999d" % 1 == "1"',  # string formatting
        "node.cpu * 1e308 * 1e308 > 1",
        "9" * 200 + " * " + "9" * 200 + " > 1",
        "not " * 100 + "true",
        "-" * 400 + "1 < 0",
    ],
)
def test_hostile_rules_evaluate_in_bounded_memory(expr: str) -> None:
    """Each evaluates (or fails its pair) without building anything big: the peak allocation stays under 1 MB."""
    rule = compile_rule("r", expr)
    tracemalloc.start()
    try:
        rule(NODE, TASK)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, f"{expr!r} allocated {peak} bytes"


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("(" * 300 + "1" + ")" * 300, "is 601 characters long"),  # past the length limit
        ("(" * 201 + "1" + ")" * 201, "does not parse"),  # past the parser's nesting limit
        ("node.__class__.__mro__", "dunder attribute"),
        ("node.labels.get('a')", "function calls"),
        ("2 ** 10 ** 10", "operator Pow"),
        ("1 << 999999999", "operator LShift"),
        ("{1: 2}", "Dict expressions"),
        ("'a' if node else 'b'", "IfExp expressions"),
        ("[c for c in 'abc']", "ListComp expressions"),
    ],
)
def test_hostile_rules_are_refused_by_name(expr: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        config_from_dict({"rules": {"evil": expr}})
    assert err.value.field == "rules.evil" and message in err.value.fault


def _files(weights: bytes, meta: dict | bytes) -> dict:
    m = meta if isinstance(meta, bytes) else json.dumps(meta).encode()
    return {"weights": ("p.safetensors", weights, "application/octet-stream"), "metadata": ("p.json", m, "text/json")}


def test_hostile_uploads_are_refused_and_drl_keeps_serving(client: TestClient, tmp_path: Path) -> None:
    stem = save_tiny_policy(tmp_path / "new", seed=2, version="tiny-v2")
    good = Path(str(stem) + ".safetensors").read_bytes()
    meta = json.loads(Path(str(stem) + ".json").read_text())
    tensors = load_safetensors(good)

    buffer = io.BytesIO()
    torch.save(tensors, buffer)  # a pickle (torch's zip of pickles): never loaded
    plain_pickle = pickle.dumps({"weights": [1, 2, 3]})
    reshaped = {k: torch.zeros(v.shape[0] + 1, *v.shape[1:]) if v.ndim else v for k, v in tensors.items()}
    wrong_shapes = save_safetensors(reshaped)
    resigned = dict(meta, sha256=hashlib.sha256(wrong_shapes).hexdigest())  # a consistent hash: shapes must catch it
    lying = dict(meta, architecture=dict(meta["architecture"], layers=5))
    cases = [
        (_files(buffer.getvalue(), meta), "weights: not a valid safetensors file"),
        (_files(plain_pickle, meta), "weights: not a valid safetensors file"),
        (_files(bytes(range(256)) * 64, meta), "weights: not a valid safetensors file"),
        (_files(wrong_shapes, resigned), "weights"),
        (_files(good, lying), "weights"),
        (_files(good, dict(meta, architecture=dict(meta["architecture"], hidden=-4))), "metadata"),
        (_files(good, dict(meta, architecture={"nonsense": 1})), "unknown architecture field"),
        (_files(good, b"\xff\xfe not utf-8"), "metadata: not valid JSON"),
    ]
    for files, message in cases:
        r = client.put("/v1/model/weights", files=files, headers=AUTH)
        assert r.status_code == 422, (message, r.text)
        assert message in r.json()["detail"], (message, r.json())
        assert client.get("/v1/model").json()["version"] == "tiny-v1"
    plan = client.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "drl"}).json()
    assert plan["model_version"] == "tiny-v1" and plan["fallback"] is False
    assert (
        not any(p.suffix == ".safetensors" for p in (tmp_path / "models").glob("*"))
        if (tmp_path / "models").exists()
        else True
    )


def _nested_multipart(depth: int) -> tuple[str, bytes]:
    """A multipart/form-data body whose one part is a multipart nested `depth` levels deep."""
    head = b""
    for level in range(depth):
        head += f"--b{level}\r\nContent-Type: multipart/mixed; boundary=b{level + 1}\r\n\r\n".encode()
    tail = b"".join(f"\r\n--b{level}--\r\n".encode() for level in reversed(range(depth)))
    return "multipart/form-data; boundary=b0", head + f"--b{depth}\r\n\r\nx".encode() + tail


@pytest.mark.parametrize("depth", [400, 1000, 5000])
def test_deeply_nested_multipart_is_refused_as_input(client: TestClient, depth: int) -> None:
    """Parts nested 400, 1,000 or 5,000 deep: the same 422 naming the body (past the parser's recursion, about
    1,000 levels, as well as before it), and the shipped policy keeps serving."""
    content_type, body = _nested_multipart(depth)
    r = client.put("/v1/model/weights", content=body, headers={**AUTH, "content-type": content_type})
    assert r.status_code == 422, r.text[:300]
    assert (
        r.json()["detail"]
        == "body: a part is itself multipart; the form's parts are two files, `weights` and `metadata`"
    )
    assert client.get("/v1/model").json()["version"] == "tiny-v1"
