"""The demo client fills a running service with plans and ends by printing where the dashboard is."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from dagsched.service.app import create_app
from dagsched.service.settings import Settings
from dagsched.traffic import demo


def test_the_demo_plans_and_ends_with_the_dashboards_address(
    make_settings: Callable[..., Settings], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with TestClient(create_app(make_settings())) as service:

        def client(base_url: str, timeout: float) -> Any:  # the demo's HTTP client, talking to this service
            return TestClient(service.app, base_url=base_url)

        monkeypatch.setattr(demo.httpx, "Client", client)
        demo.main(["--url", "http://testserver/", "--count", "2", "--executed", "0"])
        lines = capsys.readouterr().out.strip().splitlines()
        assert len(lines) == 5 and lines[0].startswith("waiting for the service at http://testserver/")
        assert "makespan" in lines[1] and "makespan" in lines[2]
        assert lines[-1] == "dashboard: http://testserver/ui/"
        page = service.get("/ui/")
        assert page.status_code == 200 and "<html" in page.text.lower()
        assert service.get("/v1/decisions").json()["count"] > 0


def test_the_demo_stops_without_a_traceback_when_the_service_goes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C under `make run` reaches the service and the demo at once: a service gone first ends the demo with
    one line saying so (a traceback there read as a crash)."""

    class Stopped:
        def __init__(self, base_url: str, timeout: float) -> None:
            self.request = httpx.Request("POST", base_url)

        def __enter__(self) -> Stopped:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def get(self, path: str) -> httpx.Response:
            return httpx.Response(200, request=self.request)

        def post(self, path: str, json: Any) -> httpx.Response:
            raise httpx.ConnectError("[Errno 111] Connection refused", request=self.request)

    monkeypatch.setattr(demo.httpx, "Client", Stopped)
    with pytest.raises(SystemExit) as stopped:
        demo.cli(["--url", "http://127.0.0.1:9/", "--count", "2", "--executed", "0"])
    assert str(stopped.value.code).startswith("the service stopped answering: [Errno 111] Connection refused")
