"""deploy/compose.yaml is a valid Compose file that wires the service, PostgreSQL, Prometheus and Grafana together.

Validated against the Compose specification's JSON schema, vendored at tests/data/compose-spec.json (source and
license: tests/data/compose-spec.NOTICE.md), with jsonschema from the project's venv; the rest checks that the names,
ports and mounted paths agree with the files they point at.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
import typer
import yaml

from dagsched.cli import app

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
COMPOSE = DEPLOY / "compose.yaml"
SCHEMA = ROOT / "tests" / "data" / "compose-spec.json"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return data


def _validator() -> jsonschema.Draft201909Validator:
    """The schema's draft, named explicitly: its `$schema` spells the 2019-09 URI in a form jsonschema does not look
    up (http, trailing '#')."""
    schema = json.loads(SCHEMA.read_text())
    assert schema["$schema"].rstrip("#").endswith("/draft/2019-09/schema")
    jsonschema.Draft201909Validator.check_schema(schema)
    return jsonschema.Draft201909Validator(schema)


def _interpolated(value: str) -> str:
    """`${VAR:?message}` and `${VAR:-default}` as compose substitutes them, with a stand-in for a required VAR."""

    def substitute(m: re.Match[str]) -> str:
        return m.group(3) if (m.group(2) or "").startswith(":-") else "x"

    return re.sub(r"\$\{(\w+)(:[?-]([^}]*))?\}", substitute, value)


def _binds(service: dict[str, Any]) -> dict[str, str]:
    """Bind mounts, container path -> source path relative to the compose file's folder."""
    out = {}
    for vol in service.get("volumes", []):
        src, dest, *_ = vol.split(":")
        if src.startswith("."):
            out[dest] = src
    return out


def _named(service: dict[str, Any]) -> dict[str, str]:
    return {v.split(":")[1]: v.split(":")[0] for v in service.get("volumes", []) if not v.startswith(".")}


def test_valid_against_the_compose_spec_schema(compose: dict[str, Any]) -> None:
    """deploy/compose.yaml validates against the Compose specification's schema, and the schema is strict enough to
    matter: a misspelt service key fails."""
    validator = _validator()
    errors = sorted(validator.iter_errors(compose), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)
    broken = json.loads(json.dumps(compose))
    broken["services"]["dagsched"]["comand"] = broken["services"]["dagsched"].pop("command")
    assert not validator.is_valid(broken)


def test_service_runs_the_documented_command_with_two_workers(compose: dict[str, Any]) -> None:
    """The dagsched service runs the image's documented command (docs/deploy.md's Deploy section until the README
    has one) with `--workers 2` and `--config` at the mounted runtime config; every option is a real serve option."""
    svc = compose["services"]["dagsched"]
    cmd = svc["command"]
    doc_text = (ROOT / "README.md").read_text()
    if "\n## Deploy\n" not in doc_text:
        doc_text = (ROOT / "docs" / "deploy.md").read_text()
    documented = shlex.split(re.search(r"the image runs `([^`]+)`", doc_text).group(1))  # type: ignore[union-attr]
    assert cmd[: len(documented)] == documented
    serve = typer.main.get_command(app).commands["serve"]  # type: ignore[attr-defined]
    known = {opt for param in serve.params for opt in param.opts}
    assert set(cmd[2::2]) <= known and len(cmd[2:]) % 2 == 0
    assert cmd[cmd.index("--workers") + 1] == "2"
    config = cmd[cmd.index("--config") + 1]
    assert (DEPLOY / _binds(svc)[config]).is_file()
    assert svc["build"]["context"] == ".." and (DEPLOY / svc["build"]["context"] / svc["build"]["dockerfile"]).is_file()


def test_store_url_points_at_the_postgres_service(compose: dict[str, Any]) -> None:
    """DAGSCHED_STORE_URL is PostgreSQL at the compose service `postgres`, with its user, password variable and
    database; the service starts once PostgreSQL is healthy."""
    svc, pg = compose["services"]["dagsched"], compose["services"]["postgres"]
    url = urlsplit(_interpolated(svc["environment"]["DAGSCHED_STORE_URL"]))
    assert url.scheme == "postgresql" and url.hostname == "postgres" and url.port == 5432
    assert url.username == pg["environment"]["POSTGRES_USER"]
    assert url.path.lstrip("/") == pg["environment"]["POSTGRES_DB"]
    assert "${POSTGRES_PASSWORD" in svc["environment"]["DAGSCHED_STORE_URL"]
    assert "${POSTGRES_PASSWORD" in pg["environment"]["POSTGRES_PASSWORD"]
    assert svc["depends_on"]["postgres"]["condition"] == "service_healthy" and "healthcheck" in pg


def test_service_is_hardened_and_writes_only_to_volumes(compose: dict[str, Any]) -> None:
    """Read-only root filesystem, non-root user, no capabilities, no privilege gain; numba's cache and the upload
    folder (the image's ENV) are named volumes, /tmp a tmpfs; the token has no default."""
    svc = compose["services"]["dagsched"]
    assert svc["read_only"] is True and svc["cap_drop"] == ["ALL"]
    assert "no-new-privileges:true" in svc["security_opt"]
    assert int(svc["user"].split(":")[0]) >= 10000
    dockerfile = (ROOT / "Dockerfile").read_text()
    named = _named(svc)
    for key in ("NUMBA_CACHE_DIR", "DAGSCHED_MODEL_DIR"):
        path = re.search(rf"{key}=(\S+)", dockerfile).group(1)  # type: ignore[union-attr]
        assert any(path.startswith(m + "/") for m in named), f"{key}={path} is not on a volume"
    assert "/tmp" in svc["tmpfs"]
    assert svc["environment"]["DAGSCHED_API_TOKEN"].startswith("${DAGSCHED_API_TOKEN:?")
    assert set(named.values()) <= set(compose["volumes"])


def test_prometheus_scrapes_the_service_with_the_alert_rules(compose: dict[str, Any]) -> None:
    """Prometheus gets deploy/prometheus/prometheus.yml and, beside it, every rule file it names; its scrape target
    is the dagsched service's name and port and the metrics route."""
    prom = compose["services"]["prometheus"]
    binds = _binds(prom)
    config_arg = next(a for a in prom["command"] if a.startswith("--config.file="))
    config_path = config_arg.split("=", 1)[1]
    assert binds[config_path] == "./prometheus/prometheus.yml"
    config = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    for rule_file in config["rule_files"]:
        mounted = str(Path(config_path).parent / rule_file)
        assert mounted in binds and (DEPLOY / binds[mounted]).is_file()
    (job,) = config["scrape_configs"]
    host, port = job["static_configs"][0]["targets"][0].split(":")
    assert host in compose["services"] and host == "dagsched"
    cmd = compose["services"]["dagsched"]["command"]
    assert cmd[cmd.index("--port") + 1] == port
    assert job["metrics_path"] == "/v1/metrics"


def test_grafana_is_provisioned_with_the_dashboard(compose: dict[str, Any]) -> None:
    """Grafana mounts the provisioning folder at /etc/grafana/provisioning and the dashboard JSON inside the folder
    the dashboard provider reads; the data source's URL is the prometheus service."""
    graf = compose["services"]["grafana"]
    binds = _binds(graf)
    assert binds["/etc/grafana/provisioning"] == "./grafana/provisioning"
    provider = yaml.safe_load((DEPLOY / "grafana" / "provisioning" / "dashboards" / "dagsched.yaml").read_text())
    folder = provider["providers"][0]["options"]["path"]
    dashboards = [dest for dest in binds if dest.startswith(folder + "/") and dest.endswith(".json")]
    assert [binds[d] for d in dashboards] == ["./grafana/dagsched.json"]
    source = yaml.safe_load((DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yaml").read_text())
    url = urlsplit(source["datasources"][0]["url"])
    assert url.hostname in compose["services"] and url.port == 9090
    assert "${GRAFANA_ADMIN_PASSWORD:?" in graf["environment"]["GF_SECURITY_ADMIN_PASSWORD"]


def test_every_bind_mount_source_exists(compose: dict[str, Any]) -> None:
    """Each ./path a service mounts is a file of the repository (relative to deploy/, the compose file's folder)."""
    for name, service in compose["services"].items():
        for dest, src in _binds(service).items():
            assert (DEPLOY / src).exists(), f"{name}: {src} (for {dest}) does not exist"
