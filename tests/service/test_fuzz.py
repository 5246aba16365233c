"""Fuzzing every operation of the OpenAPI spec with schemathesis: no 5xx, every response as documented, every 4xx
naming the field and the fault. Bounded (`FUZZ_EXAMPLES` per operation) so that it runs in CI in minutes."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from schemathesis.checks import positive_data_acceptance

from dagsched.service.app import create_app
from dagsched.service.settings import Settings

from .conftest import AUTH, TOKEN, fresh_pg_schema, pg_url, save_tiny_policy

FUZZ_EXAMPLES = int(os.environ.get("DAGSCHED_FUZZ_EXAMPLES", "25"))


_TMP = Path(tempfile.mkdtemp(prefix="dagsched-fuzz-"))
_POLICY = save_tiny_policy(_TMP / "tiny", seed=0, version="tiny-v1")


def _app(store_url: str, models: str) -> FastAPI:
    return create_app(
        Settings(
            store_url=store_url,
            model_path=_POLICY,
            model_dir=_TMP / models,
            api_token=TOKEN,
            environment="fuzz",
            sync_interval_s=0,
        )
    )


APP = _app(f"sqlite:///{_TMP / 'fuzz.sqlite'}", "models")
_PG = pg_url()
APP_PG = _app(fresh_pg_schema(_PG), "models-pg") if _PG else None  # the real PostgreSQL when CI has one
# the spec is read at collection (no state needed for it); the calls need the lifespan's state: `running`
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)
schema_pg = schemathesis.openapi.from_asgi("/openapi.json", APP_PG) if APP_PG is not None else None


@pytest.fixture(scope="module", autouse=True)
def running() -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        for app in (APP, APP_PG):
            if app is not None:
                stack.enter_context(TestClient(app))  # runs the lifespan: the state the routes need
        yield
        report = os.environ.get("DAGSCHED_FUZZ_REPORT")  # the figures for a note: requests sent, by status
        if report:
            ops = sum(len(v) for v in APP.openapi()["paths"].values())
            summary = {"operations": ops, "requests": sum(SENT.values()), "by_status": dict(sorted(SENT.items()))}
            Path(report).write_text(json.dumps(summary, indent=1))
    shutil.rmtree(_TMP, ignore_errors=True)


FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))

# Every default check but one: `positive_data_acceptance` expects each schema-valid request to be accepted, and no
# OpenAPI schema can say what this service refuses by meaning (a cycle, a dependency on an unknown task, a plan id
# that does not exist, a rule that does not parse). Those refusals are 4xx naming the field (checked below).
EXCLUDED = [positive_data_acceptance]


SENT: Counter[int] = Counter()


def _names_the_field_and_fault(response) -> None:
    """A 4xx answers `{"detail": "<field>: <fault>", ...}`; 400 and 422 also list `errors` with field and msg."""
    SENT[response.status_code] += 1
    if not 400 <= response.status_code < 500:
        return
    body = response.json()
    assert isinstance(body.get("detail"), str) and body["detail"].strip(), body
    if response.status_code in (401, 403):
        return  # about the token, not a field
    field, sep, fault = body["detail"].partition(": ")
    assert sep and field.strip() and fault.strip(), body
    if response.status_code in (400, 422) and "errors" in body:
        assert body["errors"] and all(e["field"] and e["msg"] for e in body["errors"]), body


def _fuzz(case, headers: dict[str, str] | None) -> None:
    """One generated request: every schemathesis check but the excluded one, then the field-and-fault rule."""
    response = case.call(headers=headers)
    case.validate_response(response, excluded_checks=EXCLUDED)
    _names_the_field_and_fault(response)


@schema.parametrize()
@FUZZ
def test_fuzz_with_the_token(case) -> None:
    _fuzz(case, AUTH)


@schema.parametrize()
@FUZZ
def test_fuzz_without_a_token(case) -> None:
    _fuzz(case, None)


if schema_pg is not None:  # the same fuzzing against the real PostgreSQL store (defined only when CI has one)

    @schema_pg.parametrize()
    @FUZZ
    def test_fuzz_on_postgresql_with_the_token(case) -> None:
        _fuzz(case, AUTH)

    @schema_pg.parametrize()
    @FUZZ
    def test_fuzz_on_postgresql_without_a_token(case) -> None:
        _fuzz(case, None)
