"""README's curl block works when pasted after `make run`: its token defaults to the one `make run` sets, and its
events, sent in the order shown to the plan it makes, are each accepted (200), the overrun migrating its task."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from fastapi.testclient import TestClient

from dagsched.service.app import create_app
from dagsched.service.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def _block() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("```bash\n", readme.index("Every route, with curl")) + len("```bash\n")
    return readme[start : readme.index("```", start)]


def test_the_token_defaults_to_the_one_make_run_sets() -> None:
    """`AUTH` falls back to `make run`'s default token when DAGSCHED_API_TOKEN is unset in the pasting shell."""
    make_default = re.search(r"DAGSCHED_API_TOKEN:-([\w-]+)", (ROOT / "Makefile").read_text()).group(1)  # type: ignore[union-attr]
    assert f'AUTH="Authorization: Bearer ${{DAGSCHED_API_TOKEN:-{make_default}}}"' in _block()


def test_the_events_shown_are_accepted_in_their_order(make_settings: Callable[..., Settings]) -> None:
    block = _block()
    body = re.search(r"\$URL/v1/schedule -H 'content-type: application/json' -d '(\{.*?\})'", block, re.S)
    assert body, "no /v1/schedule example"
    events = [json.loads("{" + e + "}") for e in re.findall(r"^event '(.*?)'", block, re.M)]
    kinds = [e["kind"] for e in events]
    assert "task_overran" in kinds and "node_down" in kinds, kinds
    with TestClient(create_app(make_settings(api_token="dev-token"))) as client:
        plan = client.post("/v1/schedule", json=json.loads(body.group(1)))
        assert plan.status_code == 200, plan.text
        headers = {"Authorization": "Bearer dev-token"}
        answers = []
        for event in events:
            r = client.post("/v1/events", json={"plan_id": plan.json()["plan_id"], **event}, headers=headers)
            assert r.status_code == 200, (event, r.text)
            answers.append(r.json())
    overran = answers[kinds.index("task_overran")]
    assert overran["replanned"] and overran["migrated"] == ["transform"], overran
    assert answers[kinds.index("node_down")]["replanned"]
